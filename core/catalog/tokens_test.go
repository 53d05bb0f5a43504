package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// The reference the counts are checked against is the tokenizer library
// github.com/tiktoken-go/tokenizer, a test dependency only: it holds the
// vocabularies as Go source, which is slow to compile and large to link.
var (
	refOnce sync.Once
	ref     tokenizer.Codec
	refErr  error
)

// reference returns the library's o200k_base codec.
func reference(t testing.TB) tokenizer.Codec {
	t.Helper()
	refOnce.Do(func() { ref, refErr = tokenizer.Get(tokenizer.O200kBase) })
	if refErr != nil {
		t.Fatalf("loading the reference tokenizer: %v", refErr)
	}
	return ref
}

// refCount is the reference's count of s.
func refCount(t testing.TB, s string) int {
	t.Helper()
	n, err := reference(t).Count(s)
	if err != nil {
		t.Fatalf("the reference tokenizer on %q: %v", s, err)
	}
	return n
}

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
		ids, _, err := reference(t).Encode(p)
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
	whole, _, err := reference(t).Encode(s)
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

// tokenFixtures are texts of the kinds tool definitions hold, and the
// kinds they might: prose, code, JSON Schema, scripts other than Latin,
// emoji, numbers, runs of white space and of marks, long words that no
// token covers (merged with the heap), and bytes that are not UTF-8.
var tokenFixtures = map[string]string{
	"english": "Search issues and pull requests across every repository you can see, using the same qualifiers as the web search box. " +
		"Returns up to 100 results per page; it's the user's job to page through them, and they'll get an error if they don't.",
	"code": "func (s *Server) Tokens() int {\n\tn := 0\n\tfor _, t := range s.Tools {\n\t\tn += t.Tokens()\n\t}\n\treturn n\n}\n" +
		"def parse(path: str) -> dict[str, int]:\r\n    return {k: v for k, v in items if v >= 0x1F}  # TODO(ops): fix\r\n" +
		"const x = a?.b ?? c; x >>>= 2; /* ==> */ printf(\"%-08.3f\\n\", y);",
	"schema": `{"name":"create_issue","description":"Create an issue.","inputSchema":{"type":"object","properties":{` +
		`"owner":{"type":"string","description":"Repository owner"},"labels":{"type":"array","items":{"type":"string"}},` +
		`"state":{"enum":["open","closed"]},"per_page":{"type":"integer","minimum":1,"maximum":100}},"required":["owner"],` +
		`"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}`,
	"cjk":     "東京都の天気を取得します。데이터베이스에서 사용자를 검색합니다。查询数据库中的用户信息，并返回结果。ｶﾀｶﾅ ひらがな",
	"emoji":   "Deploy 🚀 done ✅ — 👩‍👩‍👧‍👦 family, 🇫🇷 flag, 👍🏽 thumbs; 😀😀😀😀😀😀😀😀 and ✓✗★☆",
	"numbers": "0 1 12 123 1234 12345 3.14159 -2.5e-10 1,000,000 0xDEADBEEF 2024-06-01T12:34:56Z ²³ ٣٤٥٦ ⅫⅩ 〇",
	"spaces":  "a  b   c    d\t\t\te\n\n\nf \n \n g\r\n\r\n   \u00a0\u00a0h\u3000\u3000i" + strings.Repeat(" ", 200) + "j" + strings.Repeat("\n", 70),
	"mixed":   "Привет, world! Ελληνικά και English; עברית עם 123; हिन्दी भाषा; ภาษาไทย; Tiếng Việt có dấu; العربية؟",
	"long": strings.Repeat("a", 1000) + " " + strings.Repeat("ab", 300) + " " + strings.Repeat("!?", 200) +
		" pneumonoultramicroscopicsilicovolcanoconiosisPneumonoultramicroscopicsilicovolcanoconiosis " +
		strings.Repeat("日本", 80) + " " + strings.Repeat("=", 129) + " " + strings.Repeat("😀", 40),
	"invalid": "ok \xff\xfe bytes \xe6\x97 cut \xe6\x97a and \xc0\xaf overlong, \xed\xa0\x80 surrogate, \x80 alone",
}

// TestCountTokensReference: every fixture, whole and cut at every 97th
// byte (which cuts runes too), is counted as the reference counts it.
func TestCountTokensReference(t *testing.T) {
	t.Parallel()
	for name, text := range tokenFixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for end := len(text) % 97; end <= len(text); end += 97 {
				s := text[:end]
				if got, want := CountTokens(s), refCount(t, s); got != want {
					t.Errorf("CountTokens(%q) = %d, the reference counts %d", s, got, want)
				}
			}
			if got, want := CountTokens(text), refCount(t, text); got != want {
				t.Errorf("CountTokens(%q) = %d, the reference counts %d", text, got, want)
			}
		})
	}
}

// TestCountTokensInvalidUTF8: each byte that is not part of valid UTF-8
// counts as U+FFFD would in its place.
func TestCountTokensInvalidUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, same string }{
		{"\xff", "\ufffd"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"a\xffb", "a\ufffdb"},
		{"\xe6\x97a", "\ufffd\ufffda"},         // a rune cut short: one U+FFFD a byte
		{"\xc0\xaf", "\ufffd\ufffd"},           // overlong
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // surrogate
		{"x \x80\x80\x80 y", "x \ufffd\ufffd\ufffd y"},
	} {
		got, want := CountTokens(tc.in), CountTokens(tc.same)
		if got != want {
			t.Errorf("CountTokens(%q) = %d, CountTokens(%q) = %d", tc.in, got, tc.same, want)
		}
		if ref := refCount(t, tc.in); got != ref {
			t.Errorf("CountTokens(%q) = %d, the reference counts %d", tc.in, got, ref)
		}
	}
}

// TestCountTokensSharedCatalog: the definitions of the shared catalog
// (when it is there) are counted as the reference counts them: all of
// them, or a sample of one in 16 under the race detector, which makes the
// reference slow. .ci/run runs it again without -race.
func TestCountTokensSharedCatalog(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sharedCatalog); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("skipping: the shared catalog %s is not there", sharedCatalog)
	}
	s, err := LoadFile(sharedCatalog)
	if err != nil {
		t.Fatal(err)
	}
	step := 1
	if raceEnabled {
		step = 16
	}
	tools := s.Tools()
	checked := 0
	for i := 0; i < len(tools); i += step {
		def := string(tools[i].Definition())
		if got, want := CountTokens(def), refCount(t, def); got != want {
			t.Errorf("%s: CountTokens = %d, the reference counts %d", tools[i].ID(), got, want)
		}
		checked++
	}
	t.Logf("checked %d of %d definitions", checked, len(tools))
}

// FuzzCountTokens: any text is counted as the reference counts it, and
// valid UTF-8 is cut as the reference's pattern cuts it.
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{"hello world", " \n \n x", "don't", "a\x7fb", "ǅemal 123 ²", "\xff\xfe"} {
		f.Add(s)
	}
	for _, name := range slices.Sorted(maps.Keys(tokenFixtures)) {
		f.Add(tokenFixtures[name])
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if got, want := CountTokens(s), refCount(t, s); got != want {
				t.Fatalf("CountTokens(%q) = %d, the reference counts %d", s, got, want)
			}
			return
		}
		checkSameTokens(t, s)
	})
}

// catalogText is made-up definitions of 100 tools, about 12,000 tokens.
func catalogText() []string {
	rnd := rand.New(rand.NewPCG(3, 5))
	words := strings.Fields("create update delete list get search issue repository branch commit message channel user " +
		"the a of to in for with by from and or string object integer boolean array required description type properties " +
		"identifier pagination cursor webhook subscription attachments 東京 überprüfen")
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
	return defs
}

// BenchmarkCountTokens counts the made-up definitions of 100 tools, each
// once per iteration, with CountTokens and with the reference library;
// pieces seen before are looked up, as when a catalog is counted.
func BenchmarkCountTokens(b *testing.B) {
	defs := catalogText()
	reference(b)
	CountTokens("")
	b.Run("CountTokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range defs {
				CountTokens(d)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range defs {
				refCount(b, d)
			}
		}
	})
}
