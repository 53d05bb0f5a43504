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
	for i := range 500 {
		if _, err := ix.Search(ctx, Request{Query: fmt.Sprintf("zorblax%d quuxified%d", i, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ix.plans.m); n != 0 {
		t.Fatalf("after 500 queries of unknown words the index keeps %d plans, want 0", n)
	}
	queries := []string{"open a pull request", "post message to slack channel", "+repository file", "k8s pod logs", "delete issue"}
	var first [][]string
	for _, q := range queries {
		res, err := ix.Search(ctx, Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, ids(res))
	}
	kept := len(ix.plans.m)
	if kept == 0 {
		t.Fatal("queries of indexed words kept no plan")
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
	if n := len(ix.plans.m); n != kept {
		t.Errorf("asking the same queries again grew the plans from %d to %d", kept, n)
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
