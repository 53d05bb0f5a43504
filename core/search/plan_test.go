package search

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestPlansKeepOnlyIndexTerms checks that an index keeps the plans of the
// words it knows, so that queries made of unknown words cannot grow it, and
// that a query answers the same with its plans kept as on a fresh index.
func TestPlansKeepOnlyIndexTerms(t *testing.T) {
	t.Parallel()
	snap, ix := fixtureIndex(t)
	ctx := context.Background()
	// letters spells i in letters only: a plain word, whose analysis the
	// index would keep if its terms' plans were kept.
	letters := func(i int) string {
		w := []byte("zq")
		for ; i > 0; i /= 26 {
			w = append(w, byte('a'+i%26))
		}
		return string(w)
	}
	for i := range 500 {
		if _, err := ix.Search(ctx, Request{Query: fmt.Sprintf("zorblax%d quuxified%d %s", i, i, letters(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n, w := len(ix.plans.m), len(ix.plans.words); n != 0 || w != 0 {
		t.Fatalf("after 500 queries of unknown words the index keeps %d plans and %d words, want 0", n, w)
	}
	queries := []string{"open a pull request", "post message to slack channel", "+repository file", "k8s pod logs", "delete issue", "+on the pr", "list the repo files"}
	var first [][]string
	for _, q := range queries {
		res, err := ix.Search(ctx, Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, ids(res))
	}
	kept, words := len(ix.plans.m), len(ix.plans.words)
	if kept == 0 || words == 0 {
		t.Fatalf("queries of indexed words kept %d plans and %d words", kept, words)
	}
	fresh := Build(snap)
	for i, q := range queries {
		again, err := ix.Search(ctx, Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		cold, err := fresh.Search(ctx, Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(again), first[i]) || !slices.Equal(ids(cold), first[i]) {
			t.Errorf("%q: first %v, again %v, on a fresh index %v", q, first[i], ids(again), ids(cold))
		}
	}
	if n, w := len(ix.plans.m), len(ix.plans.words); n != kept || w != words {
		t.Errorf("asking the same queries again grew the plans from %d to %d, the words from %d to %d", kept, n, words, w)
	}
}

// TestGroupsFitAMask checks that no word has more synonyms than ranking
// can follow in a 64-bit mask of a group's members.
func TestGroupsFitAMask(t *testing.T) {
	t.Parallel()
	for term, syns := range synonyms {
		if n := 1 + len(syns); n > maxGroupMembers {
			t.Errorf("%q has %d members with its synonyms; at most %d fit", term, n, maxGroupMembers)
		}
	}
}
