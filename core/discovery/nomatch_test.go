package discovery

import (
	"strings"
	"testing"
)

func TestNoMatchText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		unknown, nearest []string
		want, not        []string
	}{
		{nil, nil, []string{`No deferred tool matched "q".`}, []string{"Unknown", "Servers"}},
		{[]string{"a", "b"}, nil, []string{"Unknown names: a, b."}, []string{"Servers"}},
		{nil, []string{"github", "gitlab"}, []string{"Servers with the closest names: github, gitlab", `"github__"`}, []string{"Unknown"}},
	} {
		got := NoMatchText("q", tc.unknown, tc.nearest)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("NoMatchText(%v, %v) = %q, lacks %q", tc.unknown, tc.nearest, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("NoMatchText(%v, %v) = %q, has %q", tc.unknown, tc.nearest, got, n)
			}
		}
	}
}

func TestNoMatchAnyText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		queries []string
		want    string
	}{
		{[]string{"a"}, `No deferred tool matched "a".`},
		{[]string{"a", "b"}, `No deferred tool matched "a" or "b".`},
		{[]string{"", "a", "  ", "b \"c\"", "d"}, `No deferred tool matched "a", "b \"c\"" or "d".`},
		{[]string{" "}, `No deferred tool matched "".`},
		{nil, `No deferred tool matched "".`},
	} {
		if got := NoMatchAnyText(tc.queries, nil, nil); got != tc.want {
			t.Errorf("NoMatchAnyText(%q) = %q, want %q", tc.queries, got, tc.want)
		}
	}
}
