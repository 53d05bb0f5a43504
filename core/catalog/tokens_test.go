package catalog

import (
	"strings"
	"testing"
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
