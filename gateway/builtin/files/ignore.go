package files

import (
	"bufio"
	"bytes"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// An ignoreFile is the rules of one .gitignore, in the folder dir (a
// slash-separated path relative to the walk's top, "" for the top).
//
// Rules follow gitignore(5): blank lines and lines starting with "#" are
// skipped; trailing unescaped spaces are dropped; "!" negates; a trailing
// "/" matches folders only; a pattern with a "/" at its start or middle is
// relative to the .gitignore's folder, otherwise it matches a name at any
// depth below it; "*", "?" and "[...]" do not match "/", "**" matches any
// number of folders; "\" escapes the next character.
type ignoreFile struct {
	dir   string
	rules []ignoreRule
}

type ignoreRule struct {
	pattern  string // doublestar pattern (braces escaped)
	negate   bool
	dirOnly  bool
	anchored bool // match against the path relative to dir
	literal  string
	suffix   string // "*.ext" fast path: the ".ext"
}

// parseIgnore reads gitignore rules. It never fails: a line that is not a
// valid pattern is skipped.
func parseIgnore(dir string, data []byte) *ignoreFile {
	f := &ignoreFile{dir: dir}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			f.rules = append(f.rules, r)
		}
	}
	return f
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	var r ignoreRule
	line = strings.TrimSuffix(line, "\r")
	if line == "" || strings.HasPrefix(line, "#") {
		return r, false
	}
	// Trailing spaces are dropped unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, "\\!") || strings.HasPrefix(line, "\\#") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, "\\/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return r, false
	}
	if strings.HasPrefix(line, "/") {
		r.anchored = true
		line = strings.TrimLeft(line, "/")
	} else if strings.Contains(line, "/") {
		r.anchored = true
	}
	if line == "" {
		return r, false
	}
	// Braces are literal in gitignore; doublestar reads them as choices.
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			b.WriteByte('\\')
			b.WriteByte(line[i+1])
			i++
		case c == '\\':
			// A trailing backslash matches nothing; drop it.
		case c == '{' || c == '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	r.pattern = b.String()
	if !doublestar.ValidatePattern(r.pattern) {
		return r, false
	}
	if !strings.ContainsAny(r.pattern, "*?[\\") {
		r.literal = r.pattern
	} else if strings.HasPrefix(r.pattern, "*") && !strings.ContainsAny(r.pattern[1:], "*?[\\/") {
		r.suffix = r.pattern[1:]
	}
	return r, true
}

// match reports whether the rule matches rel (relative to the rule's
// folder, slash-separated) with base name name.
func (r *ignoreRule) match(rel, name string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	subject := name
	if r.anchored {
		subject = rel
	}
	switch {
	case r.literal != "":
		return subject == r.literal
	case r.suffix != "":
		return strings.HasSuffix(subject, r.suffix)
	}
	return doublestar.MatchUnvalidated(r.pattern, subject)
}

// ignoreChain is the .gitignore files that apply in a folder, innermost
// first. It is immutable and shared by the walk's workers.
type ignoreChain struct {
	file   *ignoreFile
	parent *ignoreChain
}

// with returns the chain extended by the .gitignore in the folder dir
// (rel is its path relative to the walk's top), or c itself when there is
// none. A .gitignore that is a link, or not a regular file, is not read.
func (c *ignoreChain) with(dir *dirFD, rel string) *ignoreChain {
	data := dir.readSmall(".gitignore")
	if len(data) == 0 {
		return c
	}
	f := parseIgnore(rel, data)
	if len(f.rules) == 0 {
		return c
	}
	return &ignoreChain{file: f, parent: c}
}

// ignored reports whether the entry rel (relative to the walk's top) is
// excluded. The last matching rule of the innermost file that has one
// decides.
func (c *ignoreChain) ignored(rel string, isDir bool) bool {
	name := path.Base(rel)
	for ch := c; ch != nil; ch = ch.parent {
		f := ch.file
		sub := rel
		if f.dir != "" {
			if !strings.HasPrefix(rel, f.dir+"/") {
				continue
			}
			sub = rel[len(f.dir)+1:]
		}
		for i := len(f.rules) - 1; i >= 0; i-- {
			if f.rules[i].match(sub, name, isDir) {
				return !f.rules[i].negate
			}
		}
	}
	return false
}

// gitInfoExclude returns the rules of .git/info/exclude in the folder top,
// if any. Links on the way are not followed.
func gitInfoExclude(top *dirFD) *ignoreChain {
	git, err := top.openDir(".git")
	if err != nil {
		return nil
	}
	defer git.close()
	info, err := git.openDir("info")
	if err != nil {
		return nil
	}
	defer info.close()
	data := info.readSmall("exclude")
	if len(data) == 0 {
		return nil
	}
	f := parseIgnore("", data)
	if len(f.rules) == 0 {
		return nil
	}
	return &ignoreChain{file: f}
}
