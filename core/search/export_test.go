package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// SearchExhaustive answers a keyword query by reading every posting list
// whole: the reference the early-stopping ranking is checked against.
func (ix *Index) SearchExhaustive(ctx context.Context, req Request) (Result, error) {
	if req.MaxResults == 0 {
		req.MaxResults = DefaultMaxResults
	}
	return ix.rankKeywords(ctx, req.Query, req, ix.visibility(req), false)
}

// SearchPruned answers a keyword query with early stopping, as Search does
// for keyword queries on a prunable index.
func (ix *Index) SearchPruned(ctx context.Context, req Request) (Result, error) {
	if req.MaxResults == 0 {
		req.MaxResults = DefaultMaxResults
	}
	return ix.rankKeywords(ctx, req.Query, req, ix.visibility(req), true)
}

// Prunable reports whether Search may stop reading lists early.
func (ix *Index) Prunable() bool { return ix.prunable() }

// MergedGroups counts the groups of a keyword query read through a merged
// list of the word and its synonyms.
func (ix *Index) MergedGroups(q string) int {
	n := 0
	ix.withRanking(q, func(r *ranking) {
		for _, g := range r.groups {
			if g.merged != nil {
				n++
			}
		}
	})
	return n
}

// QueryLists is the number of posting lists (query words and their
// synonyms) a keyword query reads.
func (ix *Index) QueryLists(q string) int {
	n := 0
	ix.withRanking(q, func(r *ranking) { n = r.lists })
	return n
}

// withRanking calls f with the ranking of keyword query q, unless q does
// not parse.
func (ix *Index) withRanking(q string, f func(*ranking)) {
	s := getScratch()
	defer putScratch(s)
	pq, err := ix.parseKeywords(q, s)
	if err != nil {
		return
	}
	f(ix.newRanking(pq, Request{MaxResults: 5}, nil, s))
}

// BuildUnmerged builds an index of snap that keeps no merged lists, so that
// every query group reads its members one by one, as a group too large to
// merge does.
func BuildUnmerged(snap *catalog.Snapshot, w Weights) *Index {
	ix := BuildWith(snap, w)
	ix.segs[0].groups = map[string]*groupBlocks{}
	return ix
}

// BoundViolations ranks keyword query q by reading every posting, then
// checks every bound the score model gives against the scores it bounds:
// for each tool with a posting, the bound of its block, its block's scale
// times its summed group scores, and the query's largest scale times its
// sums must each be at least its final score. It returns the tools
// checked and a description of each bound that fell short. A query that
// does not parse, or an index that is not one segment, checks nothing.
func (ix *Index) BoundViolations(q string) (checked int, bad []string) {
	return ix.BoundViolationsLearned(q, nil)
}

// BoundViolationsLearned is BoundViolations for a query that learns from
// learned.
func (ix *Index) BoundViolationsLearned(q string, learned Learner) (checked int, bad []string) {
	if !ix.prunable() {
		return 0, nil
	}
	s := getScratch()
	defer putScratch(s)
	pq, err := ix.parseKeywords(q, s)
	if err != nil || len(pq.groups) == 0 {
		return 0, nil
	}
	r := ix.newRanking(pq, Request{MaxResults: 5, Learned: learned}, nil, s)
	seg := ix.segs[0]
	b := &s.blk
	b.size((len(seg.docs) + blockSize - 1) >> blockShift)
	defer b.reset()
	r.bounds(seg, b)
	s.sizeDocs(ix.total)
	for i := range r.groups {
		r.read(s, &r.groups[i])
	}
	for _, d := range s.touched {
		da := &s.docs[d]
		if !pq.satisfied(da.exact) {
			continue
		}
		checked++
		final := r.final(da.acc, da.nameAcc, da.matched, seg, int(d))
		st := &b.st[d>>blockShift]
		id := seg.docs[d].tool.ID()
		if float64(st.bound) < final {
			bad = append(bad, fmt.Sprintf("%s: block bound %v < score %v", id, st.bound, final))
		}
		if most := r.blockMost(st); float64(da.acc)*most < final {
			bad = append(bad, fmt.Sprintf("%s: sum %v × block scale %v < score %v", id, da.acc, most, final))
		}
		if float64(da.acc)*r.most < final {
			bad = append(bad, fmt.Sprintf("%s: sum %v × query scale %v < score %v", id, da.acc, r.most, final))
		}
	}
	return checked, bad
}

// QueryTerms returns the terms keyword query q is ranked with, in query
// order.
func (ix *Index) QueryTerms(q string) []string {
	s := getScratch()
	defer putScratch(s)
	pq, err := ix.parseKeywords(q, s)
	if err != nil {
		return nil
	}
	var out []string
	for _, g := range pq.groups {
		out = append(out, g.term)
	}
	return out
}

// FixtureIndex is the small fixture catalog of the package's own tests
// and its index.
func FixtureIndex(t testing.TB) (*catalog.Snapshot, *Index) { return fixtureIndex(t) }
