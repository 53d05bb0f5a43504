package pyregex

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		// plain and unchanged
		{``, ``},
		{`abc`, `abc`},
		{`a|b|`, `a|b|`},
		{`a*?b+?c??`, `a*?b+?c??`},
		{`(a)(?:b)`, `(a)(?:b)`},
		{`^\w+$`, `^\w+$`},
		{`é+ü`, `é+ü`},
		{"a\tb", "a\tb"},
		// named groups
		{`(?P<word>\w+)`, `(?P<word>\w+)`},
		{`(?<word>\w+)`, `(?P<word>\w+)`},
		{`(?P<_a1>x)(?<b>y)`, `(?P<_a1>x)(?P<b>y)`},
		// anchors
		{`foo\Z`, `foo\z`},
		{`foo\z`, `foo\z`},
		{`\Afoo`, `\Afoo`},
		// counted repetition
		{`a{,3}`, `a{0,3}`},
		{`a{2,}`, `a{2,}`},
		{`a{,}`, `a{0,}`},
		{`a{02}`, `a{2}`},
		{`a{2,3}?`, `a{2,3}?`},
		{`a{900}`, `a{900}`},
		// literal braces
		{`a{`, `a\{`},
		{`{foo}`, `\{foo\}`},
		{`a{}`, `a\{\}`},
		{`a{1,x}`, `a\{1,x\}`},
		{`a{ 1}`, `a\{ 1\}`},
		{`x}`, `x\}`},
		{`a]`, `a\]`},
		// comments
		{`a(?#comment)b`, `ab`},
		{`a(?#with \) paren)b`, `ab`},
		{`a(?#c)*`, `a*`},
		// global flags, hoisted to the front
		{`(?i)abc`, `(?i)abc`},
		{`abc(?i)`, `(?i)abc`},
		{`(?ms)^a.b$`, `(?ms)^a.b$`},
		{`(?s)(?i)(?m)x`, `(?ims)x`},
		{`(?a)\w+`, `\w+`},
		{`(?u)\w+`, `\w+`},
		{`(?ai)x`, `(?i)x`},
		// verbose mode
		{"(?x) a b # comment\n c", `abc`},
		{`(?x)a\ b`, `a\ b`},
		{`(?x)a\#b`, `a\#b`},
		{`(?x)[ a#]`, `[ a#]`},
		{`(?x)a{1, 2}`, `a\{1,2\}`},
		{`(?x)a {2}`, `a{2}`},
		{"a b(?x)", `ab`},
		{"(?x)a # \\\n b\nc", `ac`},
		{"(?x:a b) c", `(?:ab) c`},
		{"(?x)a(?-x: b )c", `a(?: b )c`},
		// scoped flags
		{`(?i:abc)d`, `(?i:abc)d`},
		{`(?-i:abc)`, `(?-i:abc)`},
		{`(?i-s:a.)`, `(?i-s:a.)`},
		{`(?a:\w)`, `(?:\w)`},
		{`(?im-sx:a)`, `(?im-s:a)`},
		// categories
		{`\d\D\s\S\w\W\b\B`, `\d\D\s\S\w\W\b\B`},
		// character escapes
		{`\n\t\r\f\v\a`, `\n\t\r\f\v\a`},
		{`\0`, `\x{0}`},
		{`\07`, `\x{7}`},
		{`\012`, `\x{a}`},
		{`\0123`, `\x{a}3`},
		{`\101`, `\x{41}`},
		{`\377`, `\x{ff}`},
		{`\x41`, `\x{41}`},
		{`\x7e`, `\x{7e}`},
		{`\u00e9`, `\x{e9}`},
		{`\U0001F600`, `\x{1f600}`},
		{`\\`, `\\`},
		{`\-\/\"\'\ \<\>\#\_\&\~\%`, `\-\/\"\'\ \<\>\#\_\&\~\%`},
		{`\.\*\+\?\(\)\[\]\{\}\|\^\$`, `\.\*\+\?\(\)\[\]\{\}\|\^\$`},
		{`\é`, `é`},
		{"\\\n", `\x{a}`},
		// character classes
		{`[abc]`, `[abc]`},
		{`[]abc]`, `[\]abc]`},
		{`[^]abc]`, `[^\]abc]`},
		{`[]]`, `[\]]`},
		{`[\]]`, `[\]]`},
		{`[a-z0-9_]`, `[a-z0-9_]`},
		{`[\d\s-]`, `[\d\s\-]`},
		{`[\w-]`, `[\w\-]`},
		{`[-a]`, `[\-a]`},
		{`[a-]`, `[a\-]`},
		{`[a-c-e]`, `[a-c\-e]`},
		{`[--/]`, `[\--/]`},
		{`[[:alpha:]]`, `[\[:alpha:]\]`},
		{`[\b]`, `[\x{8}]`},
		{`[\x00-\x1f]`, `[\x{0}-\x{1f}]`},
		{`[\0-\7]`, `[\x{0}-\x{7}]`},
		{`[\101-\132]`, `[\x{41}-\x{5a}]`},
		{`[\u00e0-\u00ff]`, `[\x{e0}-\x{ff}]`},
		{`[^^]`, `[^\^]`},
		{`[a^]`, `[a\^]`},
		{`[\.]`, `[\.]`},
		{`[.*+?(){}|$]`, `[.*+?(){}|$]`},
		{`[\\]`, `[\\]`},
		{`[\n\t]`, `[\n\t]`},
		{`[é-ü]`, `[é-ü]`},
		{`[(?#x)]`, `[(?#x)]`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := Translate(tc.in)
			if err != nil {
				t.Fatalf("Translate(%q): unexpected error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Translate(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if _, err := regexp.Compile(got); err != nil {
				t.Fatalf("translation %q of %q does not compile: %v", got, tc.in, err)
			}
		})
	}
}

func TestCompileMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`(?i)hello`, []string{"HeLLo", "say hello"}, []string{"help"}},
		{`^get_\w+$`, []string{"get_user"}, []string{"set_user", "get_"}},
		{`foo\Z`, []string{"xfoo"}, []string{"foo\n", "foox"}},
		{`\Afoo`, []string{"foox"}, []string{"xfoo"}},
		{`[]a]+`, []string{"]", "a"}, []string{"b"}},
		{`[^]a]`, []string{"b"}, []string{"]", "a", "]a"}},
		{`^a{,2}b$`, []string{"b", "ab", "aab"}, []string{"aaab"}},
		{`^a{2,}$`, []string{"aa", "aaaa"}, []string{"a"}},
		{"(?x) ^ a b c \\  # comment\n d $", []string{"abc d"}, []string{"abcd", "a b c d"}},
		{`^\x41\u0042\U00000043\104$`, []string{"ABCD"}, []string{"abcd"}},
		{`\0`, []string{"\x00"}, []string{"0"}},
		{`{foo}`, []string{"{foo}"}, []string{"foo"}},
		{`^a{$`, []string{"a{"}, []string{"a"}},
		{`^a{1,x}$`, []string{"a{1,x}"}, []string{"a"}},
		{`(?s)a.b`, []string{"a\nb", "axb"}, []string{"ab"}},
		{`a.b`, []string{"axb"}, []string{"a\nb"}},
		{`(?m)^b$`, []string{"a\nb\nc"}, []string{"ab"}},
		{`^b$`, []string{"b"}, []string{"a\nb\nc"}},
		{`\bword\b`, []string{"a word here"}, []string{"swordfish"}},
		{`\Bor\B`, []string{"word"}, []string{"or"}},
		{`^\-\/\"\'\ \<$`, []string{`-/"' <`}, []string{`-/"'<`}},
		{`^[\w-]+$`, []string{"a-b_c"}, []string{"a b"}},
		{`^[\d\s]+$`, []string{"1 2\t3"}, []string{"1a"}},
		{`^\D\S\W$`, []string{"a.-"}, []string{"1.-"}},
		{`(?i:ab)c`, []string{"ABc"}, []string{"ABC"}},
		{`(?i)a(?-i:b)`, []string{"Ab"}, []string{"AB"}},
		{`[[:alpha:]]`, []string{"a]", ":]", "[]"}, []string{"a", "x]"}},
		{`^[\b]$`, []string{"\b"}, []string{"b"}},
		{`a(?#comment)b`, []string{"ab"}, []string{"a(?#comment)b"}},
		{`^\é$`, []string{"é"}, []string{"e"}},
		{`^[é-ü]$`, []string{"ö"}, []string{"a"}},
		{`^(a+)+$`, []string{"aaa"}, []string{"aaa!"}},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			t.Parallel()
			re, err := Compile(tc.pattern)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.pattern, err)
			}
			for _, s := range tc.match {
				if !re.MatchString(s) {
					t.Errorf("%q (RE2 %q) does not match %q", tc.pattern, re.String(), s)
				}
			}
			for _, s := range tc.noMatch {
				if re.MatchString(s) {
					t.Errorf("%q (RE2 %q) matches %q", tc.pattern, re.String(), s)
				}
			}
		})
	}
}

func TestNamedGroups(t *testing.T) {
	t.Parallel()
	re, err := Compile(`(?P<key>\w+)=(?<value>\d+)`)
	if err != nil {
		t.Fatal(err)
	}
	m := re.FindStringSubmatch("x: limit=42")
	if m == nil {
		t.Fatal("no match")
	}
	if got := m[re.SubexpIndex("key")]; got != "limit" {
		t.Errorf("key = %q, want limit", got)
	}
	if got := m[re.SubexpIndex("value")]; got != "42" {
		t.Errorf("value = %q, want 42", got)
	}
}

func TestLazyQuantifiers(t *testing.T) {
	t.Parallel()
	re, err := Compile(`<.+?>`)
	if err != nil {
		t.Fatal(err)
	}
	if got := re.FindString("<a><b>"); got != "<a>" {
		t.Errorf("FindString = %q, want <a>", got)
	}
	re, err = Compile(`a{2,4}?`)
	if err != nil {
		t.Fatal(err)
	}
	if got := re.FindString("aaaa"); got != "aa" {
		t.Errorf("FindString = %q, want aa", got)
	}
}

// TestErrors checks every rejected construct and the position reported.
func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		pos     int
		msg     string // substring of Msg
	}{
		// no linear-time equivalent
		{`\1`, 0, "backreference"},
		{`(a)\1`, 3, "backreference"},
		{`(a)x\12`, 4, "backreference"},
		{`(a)\9`, 3, "backreference"},
		{`(?P<x>a)(?P=x)`, 8, "backreference"},
		{`a(?=b)`, 1, "lookahead"},
		{`a(?!b)`, 1, "negative lookahead"},
		{`a(?<=b)`, 1, "lookbehind"},
		{`a(?<!b)`, 1, "negative lookbehind"},
		{`(?(1)a|b)`, 0, "conditional"},
		{`(a)(?(1)b)`, 3, "conditional"},
		{`(?>a)`, 0, "atomic group"},
		{`x(?>a+)b`, 1, "atomic group"},
		{`a*+`, 1, "possessive"},
		{`a++`, 1, "possessive"},
		{`a?+`, 1, "possessive"},
		{`a{2}+`, 1, "possessive"},
		{`ab{1,3}+`, 2, "possessive"},
		{`(?:ab){,3}+`, 6, "possessive"},
		{`(?P>x)`, 0, "recursive"},
		{`(?R)`, 0, "recursive"},
		{`(?1)`, 0, "recursive"},
		// malformed
		{`(`, 0, "missing )"},
		{`a(b(c)`, 1, "missing )"},
		{`a)`, 1, "unbalanced parenthesis"},
		{`[a`, 0, "unterminated character set"},
		{`x[]`, 1, "unterminated character set"},
		{`[a-`, 0, "unterminated character set"},
		{`*a`, 0, "nothing to repeat"},
		{`a|*`, 2, "nothing to repeat"},
		{`(*)`, 1, "nothing to repeat"},
		{`^*`, 1, "nothing to repeat"},
		{`\b+`, 2, "nothing to repeat"},
		{`{2}`, 0, "nothing to repeat"},
		{`a**`, 2, "multiple repeat"},
		{`a*?*`, 3, "multiple repeat"},
		{`a{2}{3}`, 4, "multiple repeat"},
		{"(?x)a+ ?", 7, "multiple repeat"},
		{`a{3,2}`, 1, "min repeat greater than max repeat"},
		{`a{1001}`, 1, "too large"},
		{`a{99999999999999999999999}`, 1, "too large"},
		{`(?:a{1000}){2}`, 11, "invalid repeat count"},
		{`(?:ab|cd){1,1000}`, 9, "too complex"},
		{`x{10}(?:\W\w\S\s\D\d){1000}`, 21, "too complex"},
		{`a\`, 1, "bad escape (end of pattern)"},
		{`[a\`, 2, "bad escape (end of pattern)"},
		{`\q`, 0, "bad escape"},
		{`x\p{L}`, 1, "bad escape"},
		{`[\A]`, 1, "bad escape"},
		{`[\8]`, 1, "bad escape"},
		{`\x4`, 0, "incomplete escape"},
		{`\xg0`, 0, "incomplete escape"},
		{`\u12`, 0, "incomplete escape"},
		{`\U0000004`, 0, "incomplete escape"},
		{`\U00110000`, 0, "bad escape"},
		{`\N{EM DASH}`, 0, "named Unicode escape"},
		{`\400`, 0, "octal escape"},
		{`[\400]`, 1, "octal escape"},
		{`[z-a]`, 1, "bad character range"},
		{`[\d-z]`, 1, "bad character range"},
		{`[a-\w]`, 1, "bad character range"},
		{`(?#abc`, 0, "unterminated comment"},
		{`(?`, 0, "unexpected end"},
		{`(?P`, 0, "unexpected end"},
		{`(?Q)`, 0, "unknown extension"},
		{`(?Px)`, 0, "unknown extension"},
		{`(?iZ)`, 3, "unknown flag"},
		{`(?i`, 3, "missing -, : or )"},
		{`(?i-)`, 4, "missing flag"},
		{`(?-i)`, 4, "missing :"},
		{`(?i-i:a)`, 0, "turned on and off"},
		{`(?-a:x)`, 3, "cannot turn off"},
		{`(?au)`, 3, "incompatible"},
		{`(?L)`, 2, "locale"},
		{`(?P<1a>x)`, 4, "bad character in group name"},
		{`(?P<a-b>x)`, 4, "bad character in group name"},
		{`(?P<>x)`, 4, "missing group name"},
		{`(?P<abc`, 4, "unterminated name"},
		{`(?P<ñ>x)`, 4, "ASCII"},
		{`(?P<a>x)(?<a>y)`, 11, "redefinition"},
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			t.Parallel()
			got, err := Translate(tc.pattern)
			if err == nil {
				t.Fatalf("Translate(%q) = %q, want error", tc.pattern, got)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Translate(%q): error %T is not *Error", tc.pattern, err)
			}
			if e.Pos != tc.pos {
				t.Errorf("Translate(%q): Pos = %d, want %d (%v)", tc.pattern, e.Pos, tc.pos, err)
			}
			if !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("Translate(%q): Msg = %q, want it to contain %q", tc.pattern, e.Msg, tc.msg)
			}
			if e.Pattern != tc.pattern {
				t.Errorf("Pattern = %q, want %q", e.Pattern, tc.pattern)
			}
			if _, cerr := Compile(tc.pattern); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Compile(%q) error = %v, want %v", tc.pattern, cerr, err)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	_, err := Compile(`a(?<=b)`)
	want := `regex "a(?<=b)": at position 1: lookbehind is not supported (patterns run in linear time)`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pattern string
		ok      bool
		pos     int
	}{
		{"empty", "", false, 0},
		{"max length", strings.Repeat("a", MaxLen), true, 0},
		{"large repetition", `.{0,450}`, true, 0},
		{"large repetition of a class", `(?i)[^a]{900}`, true, 0},
		{"too complex", `.{0,1000}`, false, 1},
		{"too complex class", `(?i)[^a]{1000}`, false, 8},
		{"too long", strings.Repeat("a", MaxLen+1), false, MaxLen},
		{"much too long", strings.Repeat("(", 10000), false, MaxLen},
		{"invalid utf-8", "ab\xffc", false, 2},
		{"truncated utf-8", "abc\xc3", false, 3},
		{"invalid utf-8 first", "\x80", false, 0},
		{"invalid utf-8 in class", "[\xfe]", false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			re, err := Compile(tc.pattern)
			if tc.ok {
				if err != nil || re == nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile(%q): got %v, want *Error", tc.pattern, err)
			}
			if e.Pos != tc.pos {
				t.Errorf("Pos = %d, want %d (%v)", e.Pos, tc.pos, err)
			}
		})
	}
	// Translate accepts the empty pattern but enforces the other limits.
	if got, err := Translate(""); err != nil || got != "" {
		t.Errorf(`Translate("") = %q, %v`, got, err)
	}
	if _, err := Translate(strings.Repeat("a", MaxLen+1)); err == nil {
		t.Error("Translate accepted an over-long pattern")
	}
	if _, err := Translate("\xff"); err == nil {
		t.Error("Translate accepted invalid UTF-8")
	}
}

// TestCatastrophicPattern runs a pattern that takes exponential time in a
// backtracking engine; with RE2 it returns promptly.
func TestCatastrophicPattern(t *testing.T) {
	t.Parallel()
	input := strings.Repeat("a", 100_000) + "!"
	for _, p := range []string{`(a+)+$`, `^(a|a)*$`, `(a*)*b`, `^(\w+\s?)*$`} {
		re, err := Compile(p)
		if err != nil {
			t.Fatalf("Compile(%q): %v", p, err)
		}
		if re.MatchString(input) {
			t.Errorf("%q matched %d a's followed by '!'", p, 100_000)
		}
	}
}

// fuzzSeeds covers every construct the translator handles or rejects.
var fuzzSeeds = []string{
	``, `abc`, `a|b`, `(a)(?:b)`, `é+`,
	`(?P<name>\w+)`, `(?<name>x)`, `(?P=name)`, `(?P<a>x)(?P=a)`, `(?P>a)`,
	`\Afoo\Z`, `foo\z`, `a{,3}`, `a{2,}`, `a{,}`, `a{2,3}?`, `a{1001}`, `a{3,2}`,
	`a{`, `{foo}`, `a{}`, `a{1,x}`, `x}`, `a]`,
	`a(?#comment)b`, `(?#unterminated`, `a(?#c\)d)e`,
	`(?i)abc`, `abc(?i)`, `(?m)^a$`, `(?s)a.b`, "(?x) a b # c\n d", `(?a)\w`, `(?u)\w`, `(?L)a`, `(?au)`,
	`(?i:a)`, `(?-i:a)`, `(?i-s:a)`, `(?x:a b)`, `(?i-i:a)`, `(?-a:x)`, `(?iZ)`, `(?-i)`,
	`\d\D\s\S\w\W\b\B`, `\n\t\r\f\v\a\0`, `\x41`, `\x4`, `\u00e9`, `\U0001F600`, `\U00110000`,
	`\101`, `\400`, `\0123`, `\N{EM DASH}`, `\\`, `\-\/\"\'\ \<`, `\q`, `a\`,
	`[]abc]`, `[^]abc]`, `[a-z]`, `[z-a]`, `[\d-z]`, `[\w-]`, `[-a]`, `[a-]`, `[[:alpha:]]`,
	`[\b]`, `[\x00-\x1f]`, `[\400]`, `[^^]`, `[a`, `[\8]`,
	`\1`, `(a)\1`, `a(?=b)`, `a(?!b)`, `a(?<=b)`, `a(?<!b)`, `(?(1)a|b)`, `(?>a)`,
	`a*+`, `a++`, `a?+`, `a{2}+`, `a**`, `*a`, `^*`, `(`, `)`, `(?`, `(?Q)`,
	`(a+)+$`, `(?:a{1000}){2}`, `(?:ab|cd){1,1000}`, `.{0,1000}`, `a{1000}`, "ab\xffc",
}

func FuzzTranslate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		out, err := Translate(pattern)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Translate(%q): error %T is not *Error: %v", pattern, err, err)
			}
			if e.Pos < 0 || e.Pos > len(pattern) {
				t.Fatalf("Translate(%q): Pos %d out of range [0, %d]: %v", pattern, e.Pos, len(pattern), err)
			}
			if e.Pattern != pattern {
				t.Fatalf("Translate(%q): Error.Pattern = %q", pattern, e.Pattern)
			}
			_ = e.Error()
			return
		}
		if _, cerr := regexp.Compile(out); cerr != nil {
			t.Fatalf("Translate(%q) = %q, which does not compile: %v", pattern, out, cerr)
		}
		if pattern != "" {
			if _, cerr := Compile(pattern); cerr != nil {
				t.Fatalf("Compile(%q) failed after Translate succeeded: %v", pattern, cerr)
			}
		}
	})
}

// TestGlobalVerboseInsideScopedGroup covers a global (?x) met again, after
// the restart in verbose mode, inside a (?-x:...) group: it changes nothing
// more, and an unclosed group is reported with the pattern (found by
// FuzzTranslate).
func TestGlobalVerboseInsideScopedGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{in: `(?-x:a (?x)b) c`, want: `(?:a b)c`},
		{in: `a(?x) b`, want: `ab`},
		{in: `(?-x:(?x)`, err: "missing )"},
	} {
		out, err := Translate(tc.in)
		if tc.err != "" {
			var e *Error
			if !errors.As(err, &e) || e.Pattern != tc.in || !strings.Contains(e.Msg, tc.err) {
				t.Errorf("Translate(%q) = %q, %v; want an error saying %q about the pattern", tc.in, out, err, tc.err)
			}
			continue
		}
		if err != nil || out != tc.want {
			t.Errorf("Translate(%q) = %q, %v; want %q", tc.in, out, err, tc.want)
		}
	}
}
