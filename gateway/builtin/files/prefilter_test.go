package files

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// prefilterPatterns cover what the class analysis handles (classes,
// repetitions, alternations, literals with and without case) and what it
// must give up on (non-ASCII, ".", empty matches, U+FFFD).
var prefilterPatterns = []string{
	`[A-Z]{3}[0-9]{2}`, `[0-9]+\.[0-9]+`, `[a-z]+[0-9]+[a-z]+`, `x[0-9]*y`, `[a-c]+[b-d]`, `(?:[xy]+z)+q`, `#\w+[0-9]`,
	`[a-z]+a[a-z]+`, `[q]+q`, `\d{4}-\d{2}-\d{2}`, `a[0-9]{4}`, `[a-f0-9]{8}`, `\b[A-Z][a-z]+[A-Z]\w*`,
	`foo|bar|baz`, `(ab|cd)[0-9]`, `x?y[0-9]`, `(x|yz)?[0-9]{2}`, `[0-9]{2}(x|yz)?`, `[xy]+[0-9]`, `[0-9]*[A-Z]`,
	`colou?r`, `^[A-Z]+$`, `^\s*[0-9]+`, `[A-Z]{2,4}[0-9]`, `([A-Z][0-9]){3}`, `(?:[a-c][x-z]){2,}`, `[^a-z]`,
	`\w+`, `.`, `a.b`, `^$`, `x*`, `\s\s`, `[0-9]\n[0-9]`, `a\nb`, `[\n]`, `\x00`, "\uFFFD", "é[0-9]", `[éa][0-9]`,
	`kelvin`, `(?i)kelvin`, `(?i)s[0-9]`, `(?i)[a-z][0-9]`, `(?i)ab[0-9]`, `(?i)straße`, `(?i)ǅ[0-9]`, `Σ[0-9]`,
	`[[:upper:]]{3}`, `[[:^alpha:]][0-9]`, `\pL[0-9]`, `(a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r)[0-9]`,
	`(aa|bb|cc|dd|ee)(ff|gg|hh|ii)[0-9]`, strings.Repeat("[a-c]", 70), strings.Repeat("(x|y)", 10) + "z",
	`(?:[0-9]{3}|[A-Z]{3}|_{3})-`, `\A[0-9]`, `[0-9]\z`, `\B[0-9]\B`, `(?U)[0-9]+?x`, `[0-9]{100}`, `a{0}b[0-9]`,
	`(?s)[0-9].[0-9]`, `(?m)^[0-9]$`, `[\x80-\xff]`, `[\r][0-9]`,
	// Rare bytes: a search for them, then a check of the sequences.
	`[xy]z[0-9]`, `(q|j)[0-9]`, `[#@][a-z]`, `#[0-9]|@[A-Z]|~x`, `z[0-9]{2}|[0-9]{2}q`, `[0-9]{2}-[0-9]{2}`, `\$\{[a-z]`,
}

// prefilterTexts are inputs, some with invalid UTF-8 and case variants
// outside ASCII.
var prefilterTexts = []string{
	"",
	"\n",
	"ABC12 and abc12\nxyz\nAB12 ABCD123\n",
	"version 1.25 and 3.\n.5\n2024-01-31\n2024-1-31\n",
	"a1234 b12 a123\nfoo\nxbar\nbazz\n\n",
	"deadbeef 0123abcd\nDEADBEEF\n",
	"HelloWorld x\nhello world\nCamelCaseX\n",
	"ab1 cd2 ef3\nx0 y1 yz12 z12\n12x 12yz\n",
	"color colour colr\n",
	"ABC\n  42 is\n42\nAB\n",
	"A1B2C3 A1B2\nax ay az bx\n",
	"\xff\xfe0\n\x00\nnul\x00here\n\xef\xbf\xbd1\n",
	"\u212aelvin \u017f1 \u212a\u212aAB1 Ab2\n",
	"STRASSE straße STRAẞE\nǄ1 ǅ1 ǆ1\nσ1 Σ1 ς1\n",
	"é1 e1 a1\nxyz\n",
	"x\r\n1\r\n2\n",
	"0\n1\n" + strings.Repeat("abc", 30) + "\n",
	"___- 123- ABC- 12-\n",
	"aaff1 eeii9 aagg\n",
	"x\ny\nz\nxyxyxyxyxyz\nyyyyyyyyyyyz\n",
	strings.Repeat("9", 101) + "\n" + strings.Repeat("9", 99) + "\n",
	"b1 ab1\n",
	"#1 #a @B ~x z12 12q 1-1 12-34 ${x} $x\nz z z1 zz12\n#\n@\n~\nxz1 yz2 zz3\nq1j2\n12-3\n12-34\n",
	strings.Repeat("q1 x j ", 40) + "\n" + strings.Repeat("z\nq\n", 20) + "xz9\n",
}

// wantLines returns the starts of the lines of text that re matches, the
// plain way.
func wantLines(re *regexp.Regexp, text string) []int {
	var want []int
	pos := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		if re.MatchString(strings.TrimSuffix(line, "\n")) {
			want = append(want, pos)
		}
		pos += len(line)
		if line == "" {
			break
		}
	}
	return want
}

// matcherCheck compares what a matcher finds with a plain regexp run on
// each line (or, in multiline mode, on the whole text).
type matcherCheck struct {
	pattern     string
	fold, multi bool
	m           *matcher
	re          *regexp.Regexp
	// scans are the matcher's class scan in each of its ways (rare
	// bytes, shift-or, shift-and), and narrow its narrow scan's.
	scans, narrow []*classScan
}

// ways returns sc and copies of it that scan in the other ways.
func ways(sc *classScan) []*classScan {
	if sc == nil {
		return nil
	}
	plain := *sc
	plain.rare, plain.at = nil, nil
	general := plain
	general.single = false
	return []*classScan{sc, &plain, &general}
}

func newMatcherCheck(pattern string, fold, multi bool) (*matcherCheck, bool) {
	m, err := newMatcher(pattern, fold, multi)
	if err != nil {
		return nil, false
	}
	flags := ""
	if fold {
		flags += "i"
	}
	if multi {
		flags += "ms"
	}
	full := pattern
	if flags != "" {
		full = "(?" + flags + ")" + pattern
	}
	c := &matcherCheck{pattern: pattern, fold: fold, multi: multi, m: m, re: regexp.MustCompile(full),
		scans: ways(m.scan), narrow: ways(m.narrow)}
	return c, true
}

func (c *matcherCheck) check(t *testing.T, text string) {
	t.Helper()
	var scratch []byte
	var got []int
	var gotSpans [][]int
	c.m.matchLines([]byte(text), &scratch, func(s, e int) bool {
		got = append(got, s)
		gotSpans = append(gotSpans, []int{s, e})
		return true
	})
	if c.multi {
		want := c.re.FindAllStringIndex(text, -1)
		if len(want) == 0 {
			want = nil
		}
		if fmt.Sprint(gotSpans) != fmt.Sprint(want) {
			t.Fatalf("pattern %q fold %v multiline, text %q: matches %v, want %v", c.pattern, c.fold, text, gotSpans, want)
		}
		return
	}
	if want := wantLines(c.re, text); !slices.Equal(got, want) {
		t.Fatalf("pattern %q fold %v, text %q: lines at %v, want %v (lit %q, scan %v)", c.pattern, c.fold, text, got, want, c.m.lit, c.m.scan != nil)
	}
	// The scan alone, each way, must find something in every matching
	// line; the narrow one when the text lacks its absent runes.
	scans := c.scans
	if !containsAny([]byte(text), c.m.absent) {
		scans = append(scans, c.narrow...)
	}
	for i, sc := range scans {
		for _, line := range strings.Split(text, "\n") {
			if st := newScanState(); c.re.MatchString(line) && sc.find([]byte(line), 0, &st) < 0 {
				t.Fatalf("pattern %q fold %v: scan %d misses line %q", c.pattern, c.fold, i, line)
			}
		}
	}
}

func checkMatcher(t *testing.T, pattern, text string, fold, multi bool) {
	t.Helper()
	if c, ok := newMatcherCheck(pattern, fold, multi); ok {
		c.check(t, text)
	}
}

// randomTexts makes n texts of up to 40 characters, from the pattern's own
// characters and a few that tend to matter (digits, case, newlines, runes
// that fold to ASCII, an invalid byte).
func randomTexts(r *rand.Rand, pattern string, n int) []string {
	alphabet := []string{"a", "A", "z", "Z", "0", "1", "9", "_", " ", "-", "#", "\n", "\n", "\r", "é", "\u212a", "\u017f", "\xff", "\x00"}
	for _, c := range pattern {
		alphabet = append(alphabet, string(c), string(c))
	}
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		for range r.IntN(41) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		texts[i] = b.String()
	}
	return texts
}

func TestPrefilterMatchesRegexp(t *testing.T) {
	t.Parallel()
	all := strings.Join(prefilterTexts, "\n")
	for i, p := range prefilterPatterns {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, uint64(i)))
			texts := append(randomTexts(r, p, 100), prefilterTexts...)
			for _, fold := range []bool{false, true} {
				for _, multi := range []bool{false, true} {
					c, ok := newMatcherCheck(p, fold, multi)
					if !ok {
						continue
					}
					for _, text := range texts {
						c.check(t, text)
					}
					// Every text at once, so lines meet other lines.
					c.check(t, all)
				}
			}
		})
	}
}

// TestPrefilterChosen: the patterns the scan exists for get one, and
// patterns it cannot help get none.
func TestPrefilterChosen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern      string
		fold         bool
		scan, narrow bool
	}{
		{`[A-Z]{3}[0-9]{2}`, false, true, false},
		{`\d{4}-\d{2}-\d{2}`, false, true, false},
		{`a[0-9]{4}`, false, true, false},   // better than the literal "a"
		{`foo|bar|baz`, false, true, false}, // no single literal
		{`[0-9]{2}-[0-9]{2}`, false, true, false},
		{`func \w+Handler\(`, false, false, false}, // the literal is better
		{`hello`, false, false, false},
		{`(?i)[a-z]{3}`, false, false, false}, // (?i)[a-z] holds U+212A and U+017F, and is common
		{`(?i)[a-z]{3}[0-9]{2}`, false, true, true},
		{`[a-z]{3}[0-9]{2}`, true, true, true},
		{`(?i)[q-r]x[0-9]`, false, true, false}, // no rune outside ASCII to assume absent
		{`\w+`, false, false, false},            // too common to help
		{`.`, false, false, false},
		{`x*`, false, false, false},
		{`[^a-z]`, false, false, false},
	} {
		m, err := newMatcher(tc.pattern, tc.fold, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.scan != nil; got != tc.scan {
			t.Errorf("pattern %q: scan %v, want %v", tc.pattern, got, tc.scan)
		}
		if got := m.narrow != nil; got != tc.narrow {
			t.Errorf("pattern %q: narrow scan %v, want %v", tc.pattern, got, tc.narrow)
		}
	}
}

// TestClassScanWays: each way of scanning is chosen where it pays.
func TestClassScanWays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		rare    string
		single  bool
	}{
		{`[A-Z]{3}[0-9]{2}`, "", true},
		{`[0-9]{2}-[0-9]{2}`, "-", true},
		{`foo|bar|baz`, "fb", false},
		{`(ab|cd)[A-Z]`, "bc", false},
		{`(ab|cd|ef|gh|ij)[A-Z]`, "", false}, // too many rare bytes
		{`[A-Z][a-z]{2}[0-9]`, "", true},     // no class is small
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := newClassScan(re.Simplify(), true, false)
		if sc == nil {
			t.Errorf("pattern %q: no scan", tc.pattern)
		} else if string(sc.rare) != tc.rare || sc.single != tc.single {
			t.Errorf("pattern %q: rare %q, single %v, want %q, %v", tc.pattern, sc.rare, sc.single, tc.rare, tc.single)
		}
	}
}

// TestClassScanSets checks the analysis on a few patterns: the sets it
// picks, written as classes.
func TestClassScanSets(t *testing.T) {
	t.Parallel()
	show := func(s seqSet) string {
		var alts []string
		for _, q := range s {
			var b strings.Builder
			for _, c := range q {
				b.WriteByte('[')
				for i := range 256 {
					if c.set.has(byte(i)) {
						b.WriteByte(byte(i))
					}
				}
				b.WriteByte(']')
				if c.plus {
					b.WriteByte('+')
				}
			}
			alts = append(alts, b.String())
		}
		return strings.Join(alts, "|")
	}
	for _, tc := range []struct{ pattern, want string }{
		{`[A-C]{2}[0-2]`, "[ABC][ABC][012]"},
		{`x?y`, "[y]"},
		{`(ab|cd)e`, "[a][b][e]|[c][d][e]"},
		{`[0-2]+z[0-2]+`, "[012]+[z][012]+"},
		{`[0-2]*z`, "[z]"},
		{`x[0-2]*z`, "[x][z]|[x][012]+[z]"},
		{`(ab)+c`, "[a][b][c]"},
		{`(?i)ab`, "[Aa][Bb]"},
		{`(?i)k1`, "[1]"},
		{`a*`, ""},
		{`a.b`, "[b]"},
		{`\bq\b`, "[q]"},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := show((&analyzer{}).analyze(re.Simplify()).best()); got != tc.want {
			t.Errorf("pattern %q: %s, want %s", tc.pattern, got, tc.want)
		}
	}
}

// FuzzPrefilter compares the matcher, with its literal and class
// prefilters, with a plain regexp on random patterns and texts. Its seed
// corpus runs with go test.
func FuzzPrefilter(f *testing.F) {
	for i, p := range prefilterPatterns {
		f.Add(p, prefilterTexts[i%len(prefilterTexts)], i%3 == 0, i%5 == 0)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold, multi bool) {
		if len(pattern) > 200 || len(text) > 4096 {
			return
		}
		checkMatcher(t, pattern, text, fold, multi)
	})
}

// TestIndexLit compares indexLit, which looks for a literal's rarest byte,
// with bytes.Index.
func TestIndexLit(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for _, lit := range []string{"errors.New(\"", "TODO", "Q", "xQ", "Qx", "aQa", "the", "zqxjkvbw", "QQ", "a\nQ"} {
		m := &matcher{lit: []byte(lit), rareAt: rareLitByte([]byte(lit), false)}
		for range 300 {
			var b strings.Builder
			for range r.IntN(60) {
				b.WriteString([]string{"a", "Q", "x", "e", "\n", lit, lit[:len(lit)/2], lit[len(lit)/2:]}[r.IntN(8)])
			}
			hay := []byte(b.String())
			for from := 0; from <= len(hay); from++ {
				want := bytes.Index(hay[from:], m.lit)
				if want >= 0 {
					want += from
				}
				if got := m.indexLit(hay, from); got != want {
					t.Fatalf("indexLit(%q, %q, %d) = %d, want %d", hay, lit, from, got, want)
				}
			}
		}
	}
}
