package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
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
		min  float64 // --min-score
		want string  // "" for no note
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
		{name: "cut by --min-score", res: search.Result{Hits: hits(2), Total: 30, TotalAtLeast: true}, n: 10, min: 1.5,
			want: "(2 of at least 30 matching tools shown; the others score below --min-score 1.5)"},
		{name: "cut by -n beside --min-score", res: search.Result{Hits: hits(10), Total: 30}, n: 10, min: 1.5,
			want: "(10 of 30 matching tools shown; raise -n (up to 50) to see more)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := moreNote(tc.res, tc.n, tc.min); got != tc.want {
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

// TestSearchMinScore: --min-score drops the keyword hits scoring below
// it, and the note says so rather than suggesting a larger -n.
func TestSearchMinScore(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	code, out, errs := runCLI(t, "search", "--catalog", cat, "--json", "title city")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res resultJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) < 2 || res.Hits[0].Score <= res.Hits[1].Score {
		t.Fatalf("want two hits of different scores for %q: %+v", "title city", res.Hits)
	}
	between := (res.Hits[0].Score + res.Hits[1].Score) / 2
	code, out, errs = runCLI(t, "search", "--catalog", cat, "--min-score", fmt.Sprint(between), "title city")
	if code != exitOK || !strings.Contains(out, "1. "+res.Hits[0].ID) || strings.Contains(out, res.Hits[1].ID) ||
		!strings.Contains(out, fmt.Sprintf("(1 of %d matching tools shown; the others score below --min-score %g)", res.Total, between)) {
		t.Errorf("--min-score %g: exit %d\n%s%s", between, code, out, errs)
	}
	for _, bad := range []string{"-1", "NaN", "+Inf", "x"} {
		code, _, errs := runCLI(t, "search", "--catalog", cat, "--min-score", bad, "title city")
		if code != exitUsage || !strings.Contains(errs, "min-score") {
			t.Errorf("--min-score %s: exit %d, stderr %q", bad, code, errs)
		}
	}
}
