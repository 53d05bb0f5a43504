package search

import (
	"strings"
	"testing"
)

// TestStemCacheBounded checks that the shared stem cache keeps short words
// and not long ones, which only queries bring.
func TestStemCacheBounded(t *testing.T) {
	short := "zorblaxification"
	long := strings.Repeat("quux", 20) + "ing"
	before := stemCount.Load()
	if got := stem(short); got != stem(short) || got == "" {
		t.Fatalf("stem(%q) = %q", short, got)
	}
	if _, ok := stemCache.Load(short); !ok {
		t.Errorf("%q was not kept", short)
	}
	if got := stem(long); !strings.HasPrefix(got, "quux") {
		t.Fatalf("stem of a long word = %q", got)
	}
	if _, ok := stemCache.Load(long); ok {
		t.Errorf("a %d-byte word was kept; the limit is %d", len(long), maxStemLen)
	}
	if n := stemCount.Load() - before; n < 1 {
		t.Errorf("the count grew by %d after keeping a new word", n)
	}
}
