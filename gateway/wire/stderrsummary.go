package wire

import (
	"regexp"
	"strings"
)

// summaryLines is how many lines of a server's stderr an error keeps.
const summaryLines = 8

var (
	// errorHeadline is a line that states an error: "Error: Cannot find
	// module …", "Error [ERR_MODULE_NOT_FOUND]: …", "ModuleNotFoundError:
	// …", "Exception in thread …", "panic: …", "fatal error: …".
	errorHeadline = regexp.MustCompile(`^(Uncaught )?[\w.$]*(Error|Exception)\b|(?i)^(panic|fatal( error)?|error)\b\s*[:\[]`)
	// jsFrame is a JavaScript or Java stack frame ("    at f (file:1:2)").
	jsFrame = regexp.MustCompile(`^\s+at\s`)
	// pyFrame is a Python traceback frame (`  File "x.py", line 3, in f`);
	// the more indented line after it is its source.
	pyFrame = regexp.MustCompile(`^\s*File ".*", line \d+`)
	// goFrame is the file line of a Go stack frame ("\t/x/main.go:5 +0x25");
	// the line before it names the function.
	goFrame = regexp.MustCompile(`^\t\S+\.go:\d+`)
	// carets underline a column of the line before ("    ^^^^", "  ~~^").
	carets = regexp.MustCompile(`^\s*[\^~]+\s*$`)
)

// StderrSummary picks the lines of a server's stderr that say what went
// wrong: the error's own line (a node "Cannot find module '…'", a Python
// exception) first, then what follows it, without stack frames. Without
// such a line, it keeps the last lines. At most summaryLines are kept,
// joined by " | ".
func StderrSummary(text string) string {
	var lines []string
	var pyIndent int // the indent of the last Python frame, -1 after another line
	pyIndent = -1
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, " \t\r")
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		switch {
		case strings.TrimSpace(l) == "", jsFrame.MatchString(l), carets.MatchString(l),
			strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":"):
			continue
		case pyFrame.MatchString(l):
			pyIndent = indent
			continue
		case pyIndent >= 0 && indent > pyIndent:
			continue // the source line of a Python frame
		case goFrame.MatchString(l):
			if n := len(lines); n > 0 {
				lines = lines[:n-1] // the frame's function
			}
			continue
		}
		pyIndent = -1
		lines = append(lines, strings.TrimSpace(l))
	}
	head := -1
	for i, l := range lines {
		if errorHeadline.MatchString(l) {
			head = i // the last: a chained exception ends with the one raised
		}
	}
	if head >= 0 {
		lines = lines[head:]
	}
	if len(lines) > summaryLines {
		if head >= 0 {
			lines = append(lines[:1], lines[len(lines)-summaryLines+1:]...)
		} else {
			lines = lines[len(lines)-summaryLines:]
		}
	}
	if len(lines) == 0 {
		// Nothing but frames: better they than nothing.
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		lines = lines[max(0, len(lines)-summaryLines):]
	}
	return strings.Join(lines, " | ")
}
