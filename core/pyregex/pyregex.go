// Package pyregex accepts regular expressions written in the common Python
// re syntax and compiles them to Go *regexp.Regexp values (RE2 semantics).
//
// The contract:
//
//   - Matching always runs in time linear in the input: the result is an
//     ordinary Go regexp, so a pattern such as `(a+)+$` can never stall.
//   - Python constructs that have an RE2 equivalent are rewritten to it:
//     named groups (?P<name>...) and (?<name>...), non-capturing and scoped
//     flag groups (?:...) (?i:...) (?-i:...), inline flags (?i) (?m) (?s)
//     (?x) (?a) (?u), comments (?#...), verbose mode, \A \Z \b \B \d \D \s
//     \S \w \W, character escapes (\n \t \r \f \v \a \0 \xhh \uXXXX
//     \UXXXXXXXX and octal \NNN), {m,n} / {,n} / {m,} counted repetition,
//     lazy quantifiers, character classes (including a leading ] and Python's
//     literal [), a literal { that does not start a valid quantifier, and
//     backslash-escaped punctuation.
//   - Constructs that cannot run in linear time are rejected with an *Error
//     that names the byte offset of the construct in the original pattern:
//     backreferences (\1, (?P=name)), lookahead and lookbehind
//     ((?=, (?!, (?<=, (?<!), conditionals (?(1)...), atomic groups (?>...)
//     and possessive quantifiers (*+ ++ ?+ {m,n}+). Malformed patterns are
//     rejected the same way.
//   - Translate only returns a pattern that regexp.Compile accepts.
//   - No input makes Translate or Compile panic or run for long: patterns
//     longer than MaxLen bytes are rejected before any work is done, and
//     patterns whose compiled program would be very large (which makes the
//     linear-time matching slow per byte of text, e.g. (?:ab|cd){1,1000})
//     are rejected as too complex.
//
// Differences from Python that remain: \d, \w, \s and \b follow RE2 and are
// ASCII-only (as with Python's re.ASCII flag, so (?a) and (?u) are accepted
// and ignored); without (?m), $ matches only at the very end of the text
// (Python also matches before a final newline); inline global flags such as
// (?i) apply to the whole pattern wherever they appear (as in Python 3.10
// and earlier); group names are limited to ASCII identifiers; \N{name}
// escapes and the L (locale) flag are rejected.
package pyregex

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen is the longest pattern accepted, in bytes.
const MaxLen = 200

// maxRepeat is the largest repetition count RE2 accepts in {m,n}.
const maxRepeat = 1000

// maxProgInsts bounds the size of the compiled program. RE2 matching costs
// O(len(text) * program size), so without a bound a pattern under MaxLen
// bytes (45 negated classes in a group repeated {1000} times) takes over 15
// seconds per 100 KB of text. Only large counted repetitions come near the
// bound: a{900} and .{0,450} pass.
const maxProgInsts = 1000

// Error reports a pattern that cannot be used. Pos is the 0-based byte offset
// of the problem in the original pattern (0 <= Pos <= len(Pattern)).
type Error struct {
	Pattern string // the pattern as given by the caller
	Pos     int    // byte offset of the offending construct in Pattern
	Msg     string // what is wrong, in plain words
}

// Error formats the error with the pattern, the position and the message, for
// example: regex "a(?<=b)": at position 1: lookbehind is not supported
// (patterns run in linear time).
// Patterns longer than MaxLen are shown shortened.
func (e *Error) Error() string {
	p := e.Pattern
	if len(p) > MaxLen {
		return fmt.Sprintf("regex %q...: at position %d: %s", p[:MaxLen], e.Pos, e.Msg)
	}
	return fmt.Sprintf("regex %q: at position %d: %s", p, e.Pos, e.Msg)
}

// Translate rewrites a Python-syntax pattern into RE2 syntax, or returns an
// *Error. A returned pattern always compiles with regexp.Compile. The empty
// pattern translates to the empty pattern.
func Translate(pattern string) (string, error) {
	out, _, err := translate(pattern)
	if err != nil {
		return "", err
	}
	return out, nil
}

// Compile translates a Python-syntax pattern and compiles it. An empty
// pattern, a pattern longer than MaxLen bytes, a pattern that is not valid
// UTF-8, a pattern too complex to match quickly and any other pattern
// Translate rejects give an *Error.
func Compile(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, &Error{Pattern: pattern, Pos: 0, Msg: "empty pattern"}
	}
	_, re, err := translate(pattern)
	if err != nil {
		return nil, err
	}
	return re, nil
}

// translate runs the translation and validates the result with RE2.
func translate(pattern string) (string, *regexp.Regexp, error) {
	if len(pattern) > MaxLen {
		return "", nil, &Error{Pattern: pattern, Pos: MaxLen,
			Msg: fmt.Sprintf("pattern is %d bytes long; the limit is %d", len(pattern), MaxLen)}
	}
	if !utf8.ValidString(pattern) {
		pos := 0
		for pos < len(pattern) {
			r, size := utf8.DecodeRuneInString(pattern[pos:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			pos += size
		}
		return "", nil, &Error{Pattern: pattern, Pos: pos, Msg: "pattern is not valid UTF-8"}
	}

	t := &translator{src: pattern}
	err := t.run()
	if err == errRestartVerbose {
		// A global (?x) appeared after the start: like Python, parse the
		// whole pattern again in verbose mode.
		t = &translator{src: pattern, verbose: true, verboseAll: true}
		err = t.run()
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			return "", nil, e
		}
		return "", nil, &Error{Pattern: pattern, Pos: 0, Msg: err.Error()}
	}
	out, posMap := t.result()
	re, cerr := regexp.Compile(out)
	if cerr != nil {
		return "", nil, t.mapRE2Error(cerr, out, posMap)
	}
	if n := progSize(out); n > maxProgInsts {
		return "", nil, t.errorf(t.bigRepeatPos,
			"pattern is too complex: it compiles to %d instructions, the limit is %d (use smaller repetition counts)",
			n, maxProgInsts)
	}
	return out, re, nil
}

// progSize returns the number of instructions of the compiled RE2 program,
// computed the same way regexp.Compile builds it.
func progSize(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

// errRestartVerbose signals that translation must start over in verbose mode.
var errRestartVerbose = &Error{Msg: "restart in verbose mode"}

// lastKind classifies the most recent item, to validate quantifiers.
type lastKind int

const (
	lastNone       lastKind = iota // start of pattern, group or alternative
	lastAnchor                     // ^ $ \A \Z \b \B: Python cannot repeat these
	lastAtom                       // something repeatable
	lastQuantified                 // a quantified item: no second quantifier
)

// group is an open parenthesis.
type group struct {
	pos     int  // offset of '(' in the source
	verbose bool // verbose mode outside the group, restored at ')'
}

// translator holds the state of one pass over the source.
type translator struct {
	src     string
	i       int // current offset in src
	out     []byte
	pos     []int // pos[k] is the source offset that produced out[k]
	verbose bool
	// verboseAll is set when a global (?x) made the whole pattern verbose:
	// a later (?x), inside a (?-x:...) group, changes nothing more.
	verboseAll bool
	groups     []group
	names      map[string]bool
	last       lastKind

	// offset of the counted repetition with the largest count, reported
	// when the compiled program is too large
	bigRepeatPos, bigRepeat int

	// global inline flags collected from (?flags) groups
	flagI, flagM, flagS bool
	typeFlag            byte // 'a' or 'u' once seen
}

func (t *translator) errorf(pos int, format string, args ...any) *Error {
	return &Error{Pattern: t.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// emit appends s to the output, recording that it came from source offset p.
func (t *translator) emit(s string, p int) {
	t.out = append(t.out, s...)
	for range len(s) {
		t.pos = append(t.pos, p)
	}
}

// result returns the output with the hoisted global flags and the position map.
func (t *translator) result() (string, []int) {
	prefix := ""
	if t.flagI || t.flagM || t.flagS {
		prefix = "(?"
		if t.flagI {
			prefix += "i"
		}
		if t.flagM {
			prefix += "m"
		}
		if t.flagS {
			prefix += "s"
		}
		prefix += ")"
	}
	posMap := make([]int, 0, len(prefix)+len(t.pos))
	for range len(prefix) {
		posMap = append(posMap, 0)
	}
	posMap = append(posMap, t.pos...)
	return prefix + string(t.out), posMap
}

// mapRE2Error turns an error from regexp.Compile into an *Error, locating
// the offending expression text in the translated output and mapping it
// back to the source (or, failing that, finding it in the source).
func (t *translator) mapRE2Error(err error, out string, posMap []int) *Error {
	msg := err.Error()
	pos := 0
	if se, ok := err.(*syntax.Error); ok {
		msg = string(se.Code)
		if se.Expr != "" && se.Expr != out {
			msg += ": " + se.Expr
			idx := strings.Index(out, se.Expr)
			if se.Code == syntax.ErrInvalidRepeatSize {
				// A nested repetition is reported at the outer (later) operator.
				idx = strings.LastIndex(out, se.Expr)
			}
			if idx >= 0 && idx < len(posMap) {
				pos = posMap[idx]
			} else if j := strings.Index(t.src, se.Expr); j >= 0 {
				pos = j
			}
		}
	}
	if pos < 0 || pos > len(t.src) {
		pos = 0
	}
	return &Error{Pattern: t.src, Pos: pos, Msg: "not supported by RE2: " + msg}
}

// run translates t.src into t.out.
func (t *translator) run() error {
	for t.i < len(t.src) {
		c := t.src[t.i]
		if t.verbose {
			if isPyWhitespace(c) {
				t.i++
				continue
			}
			if c == '#' {
				if err := t.skipVerboseComment(); err != nil {
					return err
				}
				continue
			}
		}
		var err error
		switch c {
		case '(':
			err = t.openGroup()
		case ')':
			err = t.closeGroup()
		case '|':
			t.emit("|", t.i)
			t.i++
			t.last = lastNone
		case '^', '$':
			t.emit(string(c), t.i)
			t.i++
			t.last = lastAnchor
		case '.':
			t.emit(".", t.i)
			t.i++
			t.last = lastAtom
		case '[':
			err = t.class()
			t.last = lastAtom
		case '*', '+', '?':
			err = t.quantifier()
		case '{':
			if _, _, _, _, ok := t.parseBraces(t.i); ok {
				err = t.quantifier()
			} else {
				t.emit(`\{`, t.i)
				t.i++
				t.last = lastAtom
			}
		case ']', '}':
			t.emit(`\`+string(c), t.i)
			t.i++
			t.last = lastAtom
		case '\\':
			err = t.escape()
		default:
			_, size := utf8.DecodeRuneInString(t.src[t.i:])
			t.emit(t.src[t.i:t.i+size], t.i)
			t.i += size
			t.last = lastAtom
		}
		if err != nil {
			return err
		}
	}
	if n := len(t.groups); n > 0 {
		return t.errorf(t.groups[n-1].pos, "missing ), unterminated subpattern")
	}
	return nil
}

func isPyWhitespace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// skipVerboseComment skips a # comment in verbose mode, up to and including
// the end of the line. Like Python, a backslash pairs with the following
// character, so an escaped newline does not end the comment.
func (t *translator) skipVerboseComment() error {
	for t.i < len(t.src) {
		c := t.src[t.i]
		if c == '\\' {
			if t.i+1 >= len(t.src) {
				return t.errorf(t.i, "bad escape (end of pattern)")
			}
			_, size := utf8.DecodeRuneInString(t.src[t.i+1:])
			t.i += 1 + size
			continue
		}
		t.i++
		if c == '\n' {
			break
		}
	}
	return nil
}

// quantifier handles * + ? {m,n} at t.i, with an optional lazy ? suffix.
func (t *translator) quantifier() error {
	start := t.i
	switch t.last {
	case lastNone, lastAnchor:
		return t.errorf(start, "nothing to repeat")
	case lastQuantified:
		return t.errorf(start, "multiple repeat")
	}
	var op string
	c := t.src[t.i]
	if c == '{' {
		lo, hi, hasComma, end, _ := t.parseBraces(t.i)
		switch {
		case lo > maxRepeat || hi > maxRepeat:
			return t.errorf(start, "the repetition number is too large (the limit is %d)", maxRepeat)
		case hi >= 0 && lo > hi:
			return t.errorf(start, "min repeat greater than max repeat")
		}
		switch {
		case !hasComma:
			op = "{" + strconv.Itoa(lo) + "}"
		case hi < 0:
			op = "{" + strconv.Itoa(lo) + ",}"
		default:
			op = "{" + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}"
		}
		if n := max(lo, hi); n > t.bigRepeat {
			t.bigRepeat, t.bigRepeatPos = n, start
		}
		t.i = end
	} else {
		op = string(c)
		t.i++
	}
	if t.i < len(t.src) {
		switch t.src[t.i] {
		case '?':
			op += "?"
			t.i++
		case '+':
			return t.errorf(start, "possessive quantifier %q is not supported (patterns run in linear time)",
				t.src[start:t.i+1])
		}
	}
	t.emit(op, start)
	t.last = lastQuantified
	return nil
}

// parseBraces reports whether src[at:] starts a Python counted repetition
// {m}, {m,}, {,n}, {m,n} or {,}. hi is -1 when unbounded. Numbers beyond
// the RE2 limit are clamped to maxRepeat+1. end is the offset after '}'.
func (t *translator) parseBraces(at int) (lo, hi int, hasComma bool, end int, ok bool) {
	s := t.src
	j := at + 1
	if j >= len(s) || s[j] == '}' {
		return 0, 0, false, 0, false
	}
	num := func() (int, bool) {
		n, seen := 0, false
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			seen = true
			if n <= maxRepeat {
				n = n*10 + int(s[j]-'0')
			}
			j++
		}
		if n > maxRepeat {
			n = maxRepeat + 1
		}
		return n, seen
	}
	n, hasN := num()
	hi = -1
	if j < len(s) && s[j] == ',' {
		hasComma = true
		j++
		if m, hasM := num(); hasM {
			hi = m
		}
	} else {
		hi = n
	}
	if j >= len(s) || s[j] != '}' {
		return 0, 0, false, 0, false
	}
	if hasN {
		lo = n
	}
	return lo, hi, hasComma, j + 1, true
}

// openGroup handles '(' at t.i and all (?...) extensions.
func (t *translator) openGroup() error {
	start := t.i
	s := t.src
	if start+1 >= len(s) || s[start+1] != '?' {
		t.emit("(", start)
		t.pushGroup(start, t.verbose)
		t.i = start + 1
		return nil
	}
	if start+2 >= len(s) {
		return t.errorf(start, "unexpected end of pattern after \"(?\"")
	}
	switch c := s[start+2]; c {
	case ':':
		t.emit("(?:", start)
		t.pushGroup(start, t.verbose)
		t.i = start + 3
		return nil
	case 'P':
		if start+3 >= len(s) {
			return t.errorf(start, "unexpected end of pattern after \"(?P\"")
		}
		switch s[start+3] {
		case '<':
			return t.namedGroup(start, start+4)
		case '=':
			return t.errorf(start, "backreference (?P=name) is not supported (patterns run in linear time)")
		case '>':
			return t.errorf(start, "recursive pattern (?P>name) is not supported (patterns run in linear time)")
		}
		r, _ := utf8.DecodeRuneInString(s[start+3:])
		return t.errorf(start, "unknown extension ?P%c", r)
	case '<':
		if start+3 < len(s) {
			switch s[start+3] {
			case '=':
				return t.errorf(start, "lookbehind is not supported (patterns run in linear time)")
			case '!':
				return t.errorf(start, "negative lookbehind is not supported (patterns run in linear time)")
			}
		}
		return t.namedGroup(start, start+3)
	case '=':
		return t.errorf(start, "lookahead is not supported (patterns run in linear time)")
	case '!':
		return t.errorf(start, "negative lookahead is not supported (patterns run in linear time)")
	case '(':
		return t.errorf(start, "conditional group (?(...)...) is not supported (patterns run in linear time)")
	case '>':
		return t.errorf(start, "atomic group (?>...) is not supported (patterns run in linear time)")
	case '#':
		return t.comment(start)
	case '-', 'i', 'm', 's', 'x', 'a', 'u', 'L':
		return t.flags(start)
	default:
		if c == 'R' || c == '&' || c == '+' || (c >= '0' && c <= '9') {
			return t.errorf(start, "recursive pattern is not supported (patterns run in linear time)")
		}
		r, _ := utf8.DecodeRuneInString(s[start+2:])
		return t.errorf(start, "unknown extension ?%c", r)
	}
}

func (t *translator) pushGroup(pos int, verbose bool) {
	t.groups = append(t.groups, group{pos: pos, verbose: verbose})
	t.last = lastNone
}

// closeGroup handles ')' at t.i.
func (t *translator) closeGroup() error {
	n := len(t.groups)
	if n == 0 {
		return t.errorf(t.i, "unbalanced parenthesis")
	}
	t.verbose = t.groups[n-1].verbose
	t.groups = t.groups[:n-1]
	t.emit(")", t.i)
	t.i++
	t.last = lastAtom
	return nil
}

// namedGroup handles (?P<name> or (?<name>; the name starts at nameAt.
func (t *translator) namedGroup(start, nameAt int) error {
	s := t.src
	end := strings.IndexByte(s[nameAt:], '>')
	if end < 0 {
		return t.errorf(nameAt, "missing >, unterminated name")
	}
	name := s[nameAt : nameAt+end]
	if name == "" {
		return t.errorf(nameAt, "missing group name")
	}
	for k := 0; k < len(name); k++ {
		c := name[k]
		if c >= utf8.RuneSelf {
			return t.errorf(nameAt, "group name %q: only ASCII letters, digits and _ are supported", name)
		}
		if !(c == '_' || isASCIILetter(c) || (k > 0 && isDigit(c))) {
			return t.errorf(nameAt, "bad character in group name %q", name)
		}
	}
	if t.names[name] {
		return t.errorf(nameAt, "redefinition of group name %q", name)
	}
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
	t.emit("(?P<"+name+">", start)
	t.pushGroup(start, t.verbose)
	t.i = nameAt + end + 1
	return nil
}

// comment skips (?#...) starting at start. Like Python, a backslash pairs
// with the next character, so \) does not end the comment.
func (t *translator) comment(start int) error {
	s := t.src
	j := start + 3
	for j < len(s) {
		switch s[j] {
		case '\\':
			if j+1 >= len(s) {
				return t.errorf(j, "bad escape (end of pattern)")
			}
			_, size := utf8.DecodeRuneInString(s[j+1:])
			j += 1 + size
			continue
		case ')':
			t.i = j + 1
			return nil
		}
		j++
	}
	return t.errorf(start, "missing ), unterminated comment")
}

// flags handles (?flags), (?flags:...), (?-flags:...) and (?on-off:...).
func (t *translator) flags(start int) error {
	s := t.src
	j := start + 2
	var add, del string
	var typeFlag byte
	if s[j] != '-' {
		for {
			c := s[j]
			switch c {
			case 'L':
				return t.errorf(j, "the L (locale) flag cannot be used with a str pattern")
			case 'a', 'u':
				if typeFlag != 0 && typeFlag != c {
					return t.errorf(j, "bad inline flags: flags 'a', 'u' and 'L' are incompatible")
				}
				typeFlag = c
			case 'i', 'm', 's', 'x':
				if !strings.ContainsRune(add, rune(c)) {
					add += string(c)
				}
			default:
				if isASCIILetter(c) {
					return t.errorf(j, "unknown flag %q", c)
				}
				return t.errorf(j, "missing -, : or )")
			}
			j++
			if j >= len(s) {
				return t.errorf(j, "missing -, : or )")
			}
			if c := s[j]; c == ')' || c == '-' || c == ':' {
				break
			}
		}
	}
	if s[j] == ')' {
		// Global flags: they apply to the whole pattern.
		if typeFlag != 0 {
			if t.typeFlag != 0 && t.typeFlag != typeFlag {
				return t.errorf(start, "bad inline flags: flags 'a', 'u' and 'L' are incompatible")
			}
			t.typeFlag = typeFlag
		}
		for _, c := range add {
			switch c {
			case 'i':
				t.flagI = true
			case 'm':
				t.flagM = true
			case 's':
				t.flagS = true
			case 'x':
				if !t.verboseAll {
					return errRestartVerbose
				}
			}
		}
		t.i = j + 1
		return nil
	}
	if s[j] == '-' {
		j++
		if j >= len(s) {
			return t.errorf(j, "missing flag")
		}
		for first := true; ; first = false {
			c := s[j]
			switch c {
			case 'i', 'm', 's', 'x':
				if !strings.ContainsRune(del, rune(c)) {
					del += string(c)
				}
			case 'a', 'u', 'L':
				return t.errorf(j, "bad inline flags: cannot turn off flags 'a', 'u' and 'L'")
			default:
				switch {
				case isASCIILetter(c):
					return t.errorf(j, "unknown flag %q", c)
				case first:
					return t.errorf(j, "missing flag")
				}
				return t.errorf(j, "missing :")
			}
			j++
			if j >= len(s) {
				return t.errorf(j, "missing :")
			}
			if s[j] == ':' {
				break
			}
		}
	}
	// s[j] == ':'
	for _, c := range add {
		if strings.ContainsRune(del, c) {
			return t.errorf(start, "bad inline flags: flag %q turned on and off", c)
		}
	}
	verbose := t.verbose
	if strings.Contains(add, "x") {
		verbose = true
	}
	if strings.Contains(del, "x") {
		verbose = false
	}
	add = strings.ReplaceAll(add, "x", "")
	del = strings.ReplaceAll(del, "x", "")
	op := "(?" + add
	if del != "" {
		op += "-" + del
	}
	op += ":"
	t.emit(op, start)
	t.pushGroup(start, t.verbose)
	t.verbose = verbose
	t.i = j + 1
	return nil
}

// escape handles a backslash sequence outside a character class.
func (t *translator) escape() error {
	start := t.i
	s := t.src
	if start+1 >= len(s) {
		return t.errorf(start, "bad escape (end of pattern)")
	}
	c := s[start+1]
	switch c {
	case 'A', 'b', 'B':
		t.emit(`\`+string(c), start)
		t.i = start + 2
		t.last = lastAnchor
		return nil
	case 'Z', 'z':
		t.emit(`\z`, start)
		t.i = start + 2
		t.last = lastAnchor
		return nil
	case 'd', 'D', 's', 'S', 'w', 'W':
		t.emit(`\`+string(c), start)
		t.i = start + 2
		t.last = lastAtom
		return nil
	}
	if c >= '1' && c <= '9' {
		// Octal escape of exactly three digits, else a group reference.
		if start+3 < len(s) && isOctal(c) && isOctal(s[start+2]) && isOctal(s[start+3]) {
			v := int(c-'0')*64 + int(s[start+2]-'0')*8 + int(s[start+3]-'0')
			if v > 0o377 {
				return t.errorf(start, "octal escape value %s outside of range 0-0o377", s[start:start+4])
			}
			t.emit(hexEscape(rune(v)), start)
			t.i = start + 4
			t.last = lastAtom
			return nil
		}
		return t.errorf(start, "backreference is not supported (patterns run in linear time)")
	}
	text, _, end, err := t.charEscape(start, false)
	if err != nil {
		return err
	}
	t.emit(text, start)
	t.i = end
	t.last = lastAtom
	return nil
}

// charEscape decodes a backslash escape at start that denotes one character
// (valid both inside and outside classes, except where inClass matters). It
// returns the RE2 text, the character and the offset after the escape.
func (t *translator) charEscape(start int, inClass bool) (string, rune, int, error) {
	s := t.src
	c := s[start+1]
	switch c {
	case 'a':
		return `\a`, '\a', start + 2, nil
	case 'f':
		return `\f`, '\f', start + 2, nil
	case 'n':
		return `\n`, '\n', start + 2, nil
	case 'r':
		return `\r`, '\r', start + 2, nil
	case 't':
		return `\t`, '\t', start + 2, nil
	case 'v':
		return `\v`, '\v', start + 2, nil
	case '\\':
		return `\\`, '\\', start + 2, nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		end := start + 2 + n
		if end > len(s) || !allHex(s[start+2:end]) {
			avail := start + 2
			for avail < len(s) && avail < end && isHex(s[avail]) {
				avail++
			}
			return "", 0, 0, t.errorf(start, "incomplete escape %s", s[start:avail])
		}
		v, _ := strconv.ParseUint(s[start+2:end], 16, 32)
		if v > unicode.MaxRune {
			return "", 0, 0, t.errorf(start, "bad escape %s", s[start:end])
		}
		return hexEscape(rune(v)), rune(v), end, nil
	case 'N':
		return "", 0, 0, t.errorf(start, "named Unicode escape \\N{...} is not supported; use \\uXXXX")
	case '0':
		v, end := 0, start+2
		for end < len(s) && end < start+4 && isOctal(s[end]) {
			v = v*8 + int(s[end]-'0')
			end++
		}
		return hexEscape(rune(v)), rune(v), end, nil
	}
	if inClass {
		switch {
		case c == 'b':
			return hexEscape('\b'), '\b', start + 2, nil
		case c >= '1' && c <= '7':
			v, end := 0, start+1
			for end < len(s) && end < start+4 && isOctal(s[end]) {
				v = v*8 + int(s[end]-'0')
				end++
			}
			if v > 0o377 {
				return "", 0, 0, t.errorf(start, "octal escape value %s outside of range 0-0o377", s[start:end])
			}
			return hexEscape(rune(v)), rune(v), end, nil
		case isDigit(c):
			return "", 0, 0, t.errorf(start, "bad escape \\%c", c)
		}
	}
	if isASCIILetter(c) {
		return "", 0, 0, t.errorf(start, "bad escape \\%c", c)
	}
	// Any other character stands for itself.
	r, size := utf8.DecodeRuneInString(s[start+1:])
	end := start + 1 + size
	switch {
	case r < utf8.RuneSelf && r >= 0x20 && r != 0x7f:
		return `\` + string(r), r, end, nil // ASCII punctuation or space
	case r >= utf8.RuneSelf && unicode.IsGraphic(r):
		return string(r), r, end, nil
	}
	return hexEscape(r), r, end, nil
}

// classItem is one element of a character class.
type classItem struct {
	pos      int    // source offset
	text     string // RE2 text
	r        rune   // the character, for single characters
	category bool   // \d \w \s and negations
}

// class handles a character class starting with '[' at t.i.
func (t *translator) class() error {
	s := t.src
	start := t.i
	j := start + 1
	var b strings.Builder
	b.WriteByte('[')
	if j < len(s) && s[j] == '^' {
		b.WriteByte('^')
		j++
	}
	first := true
	for {
		if j >= len(s) {
			return t.errorf(start, "unterminated character set")
		}
		if s[j] == ']' && !first {
			j++
			break
		}
		first = false
		item, next, err := t.classAtom(j)
		if err != nil {
			return err
		}
		j = next
		if j < len(s) && s[j] == '-' {
			if j+1 >= len(s) {
				return t.errorf(start, "unterminated character set")
			}
			if s[j+1] == ']' {
				b.WriteString(item.text)
				b.WriteString(`\-`)
				j += 2
				break
			}
			hi, next, err := t.classAtom(j + 1)
			if err != nil {
				return err
			}
			if item.category || hi.category || hi.r < item.r {
				return t.errorf(item.pos, "bad character range %s", s[item.pos:next])
			}
			b.WriteString(item.text)
			b.WriteByte('-')
			b.WriteString(hi.text)
			j = next
			continue
		}
		b.WriteString(item.text)
	}
	b.WriteByte(']')
	t.emit(b.String(), start)
	t.i = j
	return nil
}

// classAtom parses one character or category inside a class at j.
func (t *translator) classAtom(j int) (classItem, int, error) {
	s := t.src
	if s[j] != '\\' {
		r, size := utf8.DecodeRuneInString(s[j:])
		text := string(r)
		switch r {
		case '\\', ']', '[', '-', '^':
			text = `\` + text
		}
		return classItem{pos: j, text: text, r: r}, j + size, nil
	}
	if j+1 >= len(s) {
		return classItem{}, 0, t.errorf(j, "bad escape (end of pattern)")
	}
	switch c := s[j+1]; c {
	case 'd', 'D', 's', 'S', 'w', 'W':
		return classItem{pos: j, text: `\` + string(c), category: true}, j + 2, nil
	}
	text, r, end, err := t.charEscape(j, true)
	if err != nil {
		return classItem{}, 0, err
	}
	return classItem{pos: j, text: text, r: r}, end, nil
}

func hexEscape(r rune) string { return fmt.Sprintf(`\x{%x}`, r) }

func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isOctal(c byte) bool       { return c >= '0' && c <= '7' }
func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isHex(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

func allHex(s string) bool {
	for k := 0; k < len(s); k++ {
		if !isHex(s[k]) {
			return false
		}
	}
	return true
}
