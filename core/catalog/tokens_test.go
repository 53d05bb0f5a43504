package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

func TestCountTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"hello", 1},
	}
	for _, tc := range tests {
		if got := CountTokens(tc.in); got != tc.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	for _, s := range []string{"x", "{}", `{"name":"a"}`, "Ünïcödé ✓ 日本語", "\x00\xff invalid utf-8"} {
		if CountTokens(s) <= 0 {
			t.Errorf("CountTokens(%q) = %d, want > 0", s, CountTokens(s))
		}
	}
}

func TestCountTokensMonotone(t *testing.T) {
	t.Parallel()
	// BPE is not monotone over every character prefix (a longer prefix can
	// merge into fewer tokens), but appending whole words always adds at
	// least one token.
	const text = "Search issues and pull requests across every repository you can see, using the same qualifiers as the web search box. Returns up to 100 results per page."
	s, prev := "", 0
	for i, w := range strings.Fields(text) {
		if i > 0 {
			s += " "
		}
		s += w
		n := CountTokens(s)
		if n <= prev {
			t.Fatalf("CountTokens(%q) = %d, not more than %d before the last word", s, n, prev)
		}
		prev = n
	}
	// Repeating text grows the count roughly in proportion.
	one := CountTokens(text)
	ten := CountTokens(strings.Repeat(text+"\n", 10))
	if ten < 10*one || ten > 12*one {
		t.Errorf("10 copies count %d tokens, one copy %d", ten, one)
	}
}

func TestClaudeTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want int }{{0, 0}, {1, 2}, {5, 6}, {10, 12}, {1000, 1200}} {
		if got := ClaudeTokens(tc.in); got != tc.want {
			t.Errorf("ClaudeTokens(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// o200kAlphabet has characters of every class the tokenizer's pattern
// tells apart: lower- and upper-case letters (the letters of contractions
// among them, and ſ), title-case, modifier and other letters, marks,
// numbers of each kind, punctuation, symbols, controls, DEL, and white
// space of each kind.
var o200kAlphabet = []rune("abstrevmldxLSTREVMDſéÉßǅʰא日\u0301\u0903" +
	"07²٣Ⅻ'\"./-_(){}:,!?€✓😀\x00\x1f\x7f" +
	" \t\n\r\v\f\u00a0\u0085\u2028\u3000\u200b")

// tokensByPieces are the tokens of s encoded piece by piece as o200kSplit
// cuts it.
func tokensByPieces(t *testing.T, s string) []uint {
	t.Helper()
	var out []uint
	o200kSplit(s, func(p string) {
		ids, _, err := enc.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ids...)
	})
	return out
}

// o200kPattern is the tokenizer's pattern (package
// github.com/tiktoken-go/tokenizer/codec), compiled by the engine the
// tokenizer uses: the same pattern gets the same compiled matcher.
var o200kPattern = regexp2.MustCompile(`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`, regexp2.None)

// patternPieces are the pieces the tokenizer's pattern cuts s into.
func patternPieces(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	m, err := o200kPattern.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = o200kPattern.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSameTokens fails when o200kSplit cuts s otherwise than the
// tokenizer's pattern, s encoded piece by piece differs from s encoded
// whole by the tokenizer, or CountTokens from its count.
func checkSameTokens(t *testing.T, s string) {
	t.Helper()
	whole, _, err := enc.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	o200kSplit(s, func(p string) { pieces = append(pieces, p) })
	if want := patternPieces(t, s); !slices.Equal(pieces, want) {
		t.Fatalf("%q: pieces %q, the tokenizer's pattern cuts %q", s, pieces, want)
	}
	if got := tokensByPieces(t, s); !slices.Equal(got, whole) {
		var pieces []string
		o200kSplit(s, func(p string) { pieces = append(pieces, p) })
		t.Fatalf("%q: tokens by pieces %v, whole %v (pieces %q)", s, got, whole, pieces)
	}
	if got := CountTokens(s); got != len(whole) {
		t.Fatalf("CountTokens(%q) = %d, the tokenizer counts %d", s, got, len(whole))
	}
}

// TestO200kSplitRandom: random text of every class the pattern tells
// apart is tokenized piece by piece exactly as whole.
func TestO200kSplitRandom(t *testing.T) {
	t.Parallel()
	CountTokens("") // loads the tokenizer
	rnd := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		r := make([]rune, 1+rnd.IntN(24))
		for i := range r {
			r[i] = o200kAlphabet[rnd.IntN(len(o200kAlphabet))]
		}
		checkSameTokens(t, string(r))
	}
}

// TestO200kSplitCases: the places where the pattern's alternatives meet.
func TestO200kSplitCases(t *testing.T) {
	t.Parallel()
	CountTokens("")
	for _, s := range []string{
		"", "a", "A", "Hello world", "HELLOworld", "helloWORLD", "ǅemal", "ʰab", "a\u0301b", "\u0301",
		"don't I'LL we've they'RE she'd 'ſ 'x '", "12345 1,000,000 ²³ ٣٤٥٦",
		"  leading", "trailing  ", "a  b", "a \n b", " \n \n x", "\r\n\r\n", "\t\tx", "x\u00a0\u00a0y",
		"// comment\n", "a/b//c\n/", " ...\n\n", "\x7f", "a\x7fb", " \x7f ", "😀😀 ✓",
		`{"name":"create_issue","description":"Create an issue.","input_schema":{"type":"object","properties":{"title":{"type":"string"}}}}`,
	} {
		checkSameTokens(t, s)
	}
}

// TestCountTokensSharedCatalog: every definition of the shared catalog
// (when it is there) is counted as the tokenizer counts it.
func TestCountTokensSharedCatalog(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sharedCatalog); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("skipping: the shared catalog %s is not there", sharedCatalog)
	}
	s, err := LoadFile(sharedCatalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range s.Tools() {
		def := string(tool.Definition())
		if got, want := CountTokens(def), codecCount(def); got != want {
			t.Errorf("%s: CountTokens = %d, the tokenizer counts %d", tool.ID(), got, want)
		}
	}
}

// FuzzCountTokens: any text is counted as the tokenizer counts it, and
// valid UTF-8 is cut as the tokenizer's pattern cuts it.
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{"hello world", " \n \n x", "don't", "a\x7fb", "ǅemal 123 ²", "\xff\xfe"} {
		f.Add(s)
	}
	CountTokens("")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if got, want := CountTokens(s), codecCount(s); got != want {
				t.Fatalf("CountTokens(%q) = %d, the tokenizer counts %d", s, got, want)
			}
			return
		}
		checkSameTokens(t, s)
	})
}

// BenchmarkCountTokens counts the made-up definitions of 100 tools, each
// once per iteration (pieces seen before are looked up, as in a start).
func BenchmarkCountTokens(b *testing.B) {
	rnd := rand.New(rand.NewPCG(3, 5))
	words := strings.Fields("create update delete list get search issue repository branch commit message channel user " +
		"the a of to in for with by from and or string object integer boolean array required description type properties")
	var defs []string
	for i := range 100 {
		var d strings.Builder
		fmt.Fprintf(&d, `{"name":"tool_%d","description":"`, i)
		for range 60 {
			d.WriteString(words[rnd.IntN(len(words))] + " ")
		}
		d.WriteString(`.","input_schema":{"type":"object","properties":{"id":{"type":"string","description":"The id."}}}}`)
		defs = append(defs, d.String())
	}
	CountTokens("")
	b.Run("CountTokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range defs {
				CountTokens(d)
			}
		}
	})
	b.Run("tokenizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range defs {
				codecCount(d)
			}
		}
	})
}
