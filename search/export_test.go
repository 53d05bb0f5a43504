package search

import (
	"context"

	"github.com/toolsearch/toolsearch/catalog"
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
func BuildUnmerged(snap *catalog.Snapshot) *Index {
	ix := Build(snap)
	ix.segs[0].groups = map[string]*groupBlocks{}
	return ix
}
