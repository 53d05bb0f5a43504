package search

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

func TestCompareIDs(t *testing.T) {
	t.Parallel()
	tools := []*catalog.Tool{
		{Server: "git", Name: "x"},
		{Server: "git-hub", Name: "y"},
		{Server: "git", Name: "hub"},
		{Server: "gi", Name: "t/x"},
		{Server: "", Name: "git"},
		{Server: "git", Name: ""},
		{Server: "a", Name: "b"},
		{Server: "a/b", Name: ""},
		{Server: "github", Name: "create_issue"},
		{Server: "github", Name: "create_issue_r2"},
	}
	for _, a := range tools {
		for _, b := range tools {
			want := strings.Compare(a.ID(), b.ID())
			if got := compareIDs(a, b); got != want {
				t.Errorf("compareIDs(%q, %q) = %d, want %d", a.ID(), b.ID(), got, want)
			}
		}
	}
}

// TestTopK offers random candidates, many tied, and checks that the k kept
// are the k best of a full sort, in order.
func TestTopK(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var docs []doc
	for i := range 40 {
		docs = append(docs, doc{tool: &catalog.Tool{Server: string(rune('a' + i%7)), Name: strings.Repeat("n", 1+i%5) + string(rune('a'+i%3))}})
	}
	seg := &segment{docs: docs}
	for _, k := range []int{1, 3, 5, 8, 20, 50} {
		for round := range 50 {
			var all []scored
			top := newTopK(k)
			for range 1 + rng.IntN(60) {
				c := scored{seg: seg, doc: uint32(rng.IntN(len(docs))), score: float64(rng.IntN(4))}
				if slices.ContainsFunc(all, func(x scored) bool { return x.doc == c.doc }) {
					continue
				}
				all = append(all, c)
				top.offer(c)
			}
			slices.SortFunc(all, func(a, b scored) int {
				if a.score != b.score {
					return cmp.Compare(b.score, a.score)
				}
				return strings.Compare(docs[a.doc].tool.ID(), docs[b.doc].tool.ID())
			})
			want := all[:min(k, len(all))]
			got := top.sorted()
			if !slices.EqualFunc(got, want, func(a, b scored) bool { return a.doc == b.doc && a.score == b.score }) {
				t.Fatalf("k=%d round %d: kept %v, want %v", k, round, got, want)
			}
		}
	}
}
