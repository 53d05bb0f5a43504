package search

import (
	"slices"
	"strings"
	"testing"
)

// FuzzNextField checks that nextField splits text into the fields
// strings.Fields finds.
func FuzzNextField(f *testing.F) {
	for _, s := range []string{
		"", " ", "a", " create  pull\trequest ", "x\u00a0y", "em\u2003space", "\u0085lead",
		"+github issue", "über straße", "\xff\xfe bad utf8 \xc3", "trail\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []string
		for i := 0; ; {
			from, to := nextField(s, i)
			if from == to {
				break
			}
			got = append(got, s[from:to])
			i = to
		}
		if want := strings.Fields(s); !slices.Equal(got, want) {
			t.Fatalf("fields of %q = %q, want %q", s, got, want)
		}
	})
}
