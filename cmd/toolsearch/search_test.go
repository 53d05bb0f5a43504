package main

import (
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/search"
)

func TestMoreNote(t *testing.T) {
	t.Parallel()
	hits := func(n int) []search.Hit {
		out := make([]search.Hit, n)
		for i := range out {
			out[i] = search.Hit{Tool: &catalog.Tool{Server: "s", Name: "t"}}
		}
		return out
	}
	max := search.MaxMaxResults
	tests := []struct {
		name string
		res  search.Result
		n    int
		want string // "" for no note
	}{
		{name: "all shown", res: search.Result{Hits: hits(3), Total: 3}, n: 5},
		{name: "nothing found", res: search.Result{Total: 0}, n: 5},
		{name: "cut by -n", res: search.Result{Hits: hits(5), Total: 12}, n: 5,
			want: "(5 of 12 matching tools shown; raise -n (up to 50) to see more)"},
		{name: "cut by -n, a lower bound", res: search.Result{Hits: hits(5), Total: 12, TotalAtLeast: true}, n: 5,
			want: "(5 of at least 12 matching tools shown; raise -n (up to 50) to see more)"},
		{name: "-n at its maximum", res: search.Result{Hits: hits(max), Total: 300, TotalAtLeast: true}, n: max,
			want: "(50 of at least 300 matching tools shown; 50 is the most -n shows: add words to narrow the search)"},
		{name: "cut by the ranking", res: search.Result{Hits: hits(3), Total: 40}, n: 10,
			want: "(3 of 40 matching tools shown; the others score too low beside the best to be listed)"},
		{name: "cut by the ranking at the maximum", res: search.Result{Hits: hits(7), Total: 90}, n: max,
			want: "(7 of 90 matching tools shown; the others score too low beside the best to be listed)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := moreNote(tc.res, tc.n); got != tc.want {
				t.Errorf("moreNote = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSearchSaysHowManyMatched runs the command on a catalog where a
// server's listing is cut by -n.
func TestSearchSaysHowManyMatched(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	code, out, errs := runCLI(t, "search", "--catalog", cat, "-n", "1", "notes")
	if code != exitOK || !strings.Contains(out, "(1 of 2 matching tools shown; raise -n (up to 50) to see more)") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI(t, "search", "--catalog", cat, "-n", "2", "notes")
	if code != exitOK || strings.Contains(out, "matching tools shown") {
		t.Errorf("a complete list has a note: exit %d\n%s", code, out)
	}
}
