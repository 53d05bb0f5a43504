package catalog

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want bool
	}{
		{"create_issue", true}, {"get-file.v2", true}, {strings.Repeat("a", 128), true},
		{"", false}, {strings.Repeat("a", 129), false}, {"a b", false}, {"a\nb", false},
		{"a/b", false}, {"émoji", false}, {"drop;--", false},
	} {
		if got := ValidName(c.name); got != c.want {
			t.Errorf("ValidName(%.20q) = %v, want %v", c.name, got, c.want)
		}
	}
}
