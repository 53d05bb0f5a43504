package utf8cut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"},      // é is two bytes: a cut inside it goes before it
		{"héllo", 3, "hé"},     // after it
		{"日本語", 4, "日"},        // three-byte runes
		{"日本語", 2, ""},         // no whole rune fits
		{"a\xffb", 2, "a\xff"}, // a stray byte is a rune of its own
		{"", 3, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"hello", "héllo", "日本語", "a\xffb", ""} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if len(got) > max(n, 0) && got != s || len(got) > len(s) || s[:len(got)] != got {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix within n", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q split a rune", s, n, got)
		}
	})
}
