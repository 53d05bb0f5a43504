package skills

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Frontmatter is what the gateway reads of a SKILL.md's YAML frontmatter.
type Frontmatter struct {
	Name, Description string
}

// ReadFrontmatter reads the name and the description of a SKILL.md's
// frontmatter: the YAML text between its two "---" lines, with "\n" line
// ends.
//
// It reads the YAML a frontmatter is written in: a mapping at the top
// whose keys start at the first column, and for name and description a
// plain, single-quoted or double-quoted scalar (on one line or folded over
// several) or a literal (|) or folded (>) block scalar. The values of other
// keys are skipped unread, however they are written, as long as they are
// indented under their key. A null or absent value is "". Anything else
// (a name that is a list or a mapping, an anchor, an alias, a tag, a key
// written twice, a line that is no key) is an error that names the line.
func ReadFrontmatter(text string) (Frontmatter, error) {
	var fm Frontmatter
	if !utf8.ValidString(text) {
		return fm, errors.New("it is not UTF-8")
	}
	for i, r := range text {
		if !printable(r) {
			return fm, fmt.Errorf("byte %d: the character %U, which YAML does not allow", i, r)
		}
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	seen := map[string]bool{}
	for i := 0; i < len(lines); {
		line := lines[i]
		if isBlank(line) || strings.HasPrefix(strings.TrimLeft(line, " "), "#") {
			i++
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fm, fmt.Errorf("line %d: indented where a key was expected", i+1)
		}
		key, rest, err := splitKey(line)
		if err != nil {
			return fm, fmt.Errorf("line %d: %w", i+1, err)
		}
		if seen[key] {
			return fm, fmt.Errorf("line %d: the key %q is written twice", i+1, key)
		}
		seen[key] = true
		// The value is the rest of the line and the lines under it:
		// indented or blank ones.
		end := i + 1
		for end < len(lines) && (isBlank(lines[end]) || lines[end][0] == ' ' || lines[end][0] == '\t') {
			end++
		}
		if key == "name" || key == "description" {
			v, err := scalar(rest, lines[i+1:end])
			if err != nil {
				return fm, fmt.Errorf("line %d: %s: %w", i+1, key, err)
			}
			if key == "name" {
				fm.Name = v
			} else {
				fm.Description = v
			}
		}
		i = end
	}
	return fm, nil
}

// printable reports whether YAML allows r in a document.
func printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r < 0x20 || 0x7f <= r && r < 0xa0:
		return false
	case 0xd800 <= r && r < 0xe000 || r == 0xfffe || r == 0xffff:
		return false
	}
	return true
}

// isBlank reports whether a line holds only spaces and tabs.
func isBlank(line string) bool {
	return strings.Trim(line, " \t") == ""
}

// splitKey splits "key: rest" at the colon that ends the key.
func splitKey(line string) (key, rest string, err error) {
	switch line[0] {
	case '"', '\'':
		k, after, _, err := quoted(line, nil)
		if err != nil {
			return "", "", err
		}
		after = strings.TrimLeft(after, " \t")
		if !strings.HasPrefix(after, ":") || len(after) > 1 && after[1] != ' ' && after[1] != '\t' {
			return "", "", errors.New("a quoted key without a colon after it")
		}
		return k, strings.TrimLeft(after[1:], " \t"), nil
	case '-', '?', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`', ':', ',', ']', '}':
		return "", "", fmt.Errorf("%q is not a key of a mapping", clip(line))
	}
	for j := 0; j < len(line); j++ {
		if line[j] == '#' && j > 0 && (line[j-1] == ' ' || line[j-1] == '\t') {
			break
		}
		if line[j] == ':' && (j+1 == len(line) || line[j+1] == ' ' || line[j+1] == '\t') {
			return strings.TrimRight(line[:j], " \t"), strings.TrimLeft(line[j+1:], " \t"), nil
		}
	}
	return "", "", fmt.Errorf("%q is not a key with a value", clip(line))
}

// scalar reads a value: first is the rest of the key's line, more the lines
// under it.
func scalar(first string, more []string) (string, error) {
	first = strings.TrimRight(first, " \t")
	if first == "" || first[0] == '#' {
		// The value starts on a line of its own, or is null.
		for k, l := range more {
			t := strings.Trim(l, " \t")
			if t == "" || t[0] == '#' {
				continue
			}
			if t == "-" || strings.HasPrefix(t, "- ") {
				return "", errors.New("a list, not text")
			}
			if _, _, err := splitKey(t); err == nil {
				return "", errors.New("a mapping, not text")
			}
			return scalar(t, more[k+1:])
		}
		return "", nil
	}
	switch first[0] {
	case '"', '\'':
		v, after, rest, err := quoted(first, more)
		if err != nil {
			return "", err
		}
		if t := strings.TrimLeft(after, " \t"); t != "" && t[0] != '#' {
			return "", fmt.Errorf("%q after the closing quote", clip(t))
		}
		for _, l := range rest {
			if t := strings.TrimLeft(l, " \t"); t != "" && t[0] != '#' {
				return "", fmt.Errorf("%q after the closing quote", clip(t))
			}
		}
		return v, nil
	case '|', '>':
		return block(first, more)
	case '[', '{':
		return "", errors.New("a list or a mapping, not text")
	case '&', '*', '!':
		return "", errors.New("an anchor, an alias or a tag, which the gateway does not read")
	case '%', '@', '`', ']', '}', ',':
		return "", fmt.Errorf("%q cannot start a value", first[:1])
	case '-', '?', ':':
		if len(first) == 1 || first[1] == ' ' || first[1] == '\t' {
			return "", fmt.Errorf("%q cannot start text", first[:1])
		}
	}
	return plain(first, more)
}

// plain reads a plain scalar, folded over its lines.
func plain(first string, more []string) (string, error) {
	var b strings.Builder
	ended := false // a comment ended the value
	empties := 0
	for k := -1; k < len(more); k++ {
		t := first
		if k >= 0 {
			if strings.HasPrefix(more[k], "\t") {
				return "", fmt.Errorf("a tab indents line %d of the value", k+2)
			}
			t = strings.Trim(more[k], " \t")
			if t == "" {
				empties++
				continue
			}
			if ended || t[0] == '#' {
				if t[0] == '#' {
					ended = true
					continue
				}
				return "", errors.New("text after a comment")
			}
		}
		if c := strings.Index(t, " #"); c >= 0 {
			t, ended = strings.TrimRight(t[:c], " \t"), true
		} else if c := strings.Index(t, "\t#"); c >= 0 {
			t, ended = strings.TrimRight(t[:c], " \t"), true
		}
		if strings.Contains(t, ": ") || strings.Contains(t, ":\t") || strings.HasSuffix(t, ":") {
			return "", errors.New("a colon and a space inside text that is not quoted")
		}
		if k >= 0 {
			if empties == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", empties))
		}
		empties = 0
		b.WriteString(t)
	}
	v := b.String()
	switch v {
	case "~", "null", "Null", "NULL":
		return "", nil
	}
	return v, nil
}

// quoted reads a single- or double-quoted scalar that starts at s[0] and
// may go on over the lines in more. It returns the text, what follows the
// closing quote on its line, and the lines of more after that line.
func quoted(s string, more []string) (string, string, []string, error) {
	q := s[0]
	var b strings.Builder
	hard := 0 // b's bytes that no folding may trim: escapes and the text before them
	line, k := s[1:], -1
	for {
		i := 0
		for i < len(line) {
			c := line[i]
			switch {
			case c == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
				b.WriteByte('\'')
				i += 2
				hard = b.Len()
			case c == q:
				return b.String(), line[i+1:], more[k+1:], nil
			case c == '\\' && q == '"':
				if i+1 == len(line) { // an escaped line break: no space
					goto next
				}
				n, err := unescape(&b, line[i+1:])
				if err != nil {
					return "", "", nil, err
				}
				i += 1 + n
				hard = b.Len()
			default:
				b.WriteByte(c)
				i++
			}
		}
		// An unescaped line break: the spaces before it go, and it
		// becomes a space, or the empty lines after it.
		{
			v := b.String()
			v = v[:hard] + strings.TrimRight(v[hard:], " \t")
			b.Reset()
			b.WriteString(v)
		}
		if k+1 >= len(more) {
			return "", "", nil, errors.New("a quote that is never closed")
		}
		{
			empties := 0
			for k+1 < len(more) && isBlank(more[k+1]) {
				k++
				empties++
			}
			if empties == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", empties))
		}
	next:
		k++
		if k >= len(more) {
			return "", "", nil, errors.New("a quote that is never closed")
		}
		line = strings.TrimLeft(more[k], " \t")
	}
}

// simpleEscapes are the one-character escapes of a double-quoted scalar.
var simpleEscapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
	'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\",
	'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// unescape writes the character of the escape sequence at the start of s
// (after its backslash) and returns how many bytes it took.
func unescape(b *strings.Builder, s string) (int, error) {
	if r, ok := simpleEscapes[s[0]]; ok {
		b.WriteString(r)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, fmt.Errorf("the escape \\%s is not YAML's", clip(s[:min(len(s), 1+width)]))
	}
	n, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || n > utf8.MaxRune {
		return 0, fmt.Errorf("the escape \\%s is not YAML's", s[:1+width])
	}
	b.WriteRune(rune(n))
	return 1 + width, nil
}

// block reads a literal (|) or folded (>) block scalar: header is its
// indicator line, more its lines.
func block(header string, more []string) (string, error) {
	folded := header[0] == '>'
	chomp, indent := byte(0), 0
	h := header[1:]
	for len(h) > 0 && h[0] != ' ' && h[0] != '\t' {
		switch c := h[0]; {
		case (c == '+' || c == '-') && chomp == 0:
			chomp = c
		case '1' <= c && c <= '9' && indent == 0:
			indent = int(c - '0')
		default:
			return "", fmt.Errorf("%q is not a block scalar's header", clip(header))
		}
		h = h[1:]
	}
	if t := strings.TrimLeft(h, " \t"); t != "" && t[0] != '#' {
		return "", fmt.Errorf("%q after a block scalar's header", clip(t))
	}
	// The lines of the content: the value's lines less the blank ones at
	// its end, which only chomping reads.
	last := len(more)
	for last > 0 && isBlank(more[last-1]) {
		last--
	}
	if indent == 0 {
		longest := 0
		for _, l := range more[:last] {
			if isBlank(l) {
				longest = max(longest, len(l)-len(strings.TrimLeft(l, " ")))
				continue
			}
			indent = len(l) - len(strings.TrimLeft(l, " "))
			if longest > indent {
				return "", errors.New("a blank line before the text is indented more than the text")
			}
			break
		}
	}
	var b strings.Builder
	empties, prevMore, wrote := 0, false, false
	for k, l := range more[:last] {
		switch {
		case len(l) > indent && strings.Trim(l[:indent], " ") == "":
		case isBlank(l):
			empties++
			continue
		case strings.HasPrefix(strings.TrimLeft(l, " "), "#"):
			// A comment less indented than the text ends it.
			for _, rest := range more[k+1 : last] {
				if t := strings.TrimLeft(rest, " \t"); t != "" && t[0] != '#' {
					return "", errors.New("text after a comment that ended a block scalar")
				}
			}
			last = k
			goto chomping
		default:
			return "", fmt.Errorf("line %d of the value is indented less than its first line", k+2)
		}
		text := l[indent:]
		moreIndented := text[0] == ' ' || text[0] == '\t'
		switch {
		case !wrote:
			b.WriteString(strings.Repeat("\n", empties))
		case !folded || moreIndented || prevMore:
			b.WriteString(strings.Repeat("\n", empties+1))
		case empties == 0:
			b.WriteByte(' ')
		default:
			b.WriteString(strings.Repeat("\n", empties))
		}
		b.WriteString(text)
		empties, prevMore, wrote = 0, moreIndented, true
	}
chomping:
	if !wrote {
		if chomp == '+' {
			return strings.Repeat("\n", len(more)), nil
		}
		return "", nil
	}
	switch chomp {
	case '-':
	case '+':
		b.WriteString(strings.Repeat("\n", 1+empties+len(more)-last))
	default:
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
