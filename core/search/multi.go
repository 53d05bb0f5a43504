package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Several queries in one search.
//
// A model that needs several tools at once ("read the log file, then post
// a summary to Slack") asks for each in its own words. SearchMany runs each
// query as Search would, with the same MaxResults, MinScore, Servers and
// Visible, and merges the answers into one list:
//
//  1. Tools named outright (by select: or by an exact tool name) come
//     first, in the order the queries name them. As in a select: alone,
//     MaxResults does not cut them; MaxSelectNames bounds them in all.
//  2. The remaining places, up to MaxResults, go to the ranked hits (words,
//     a regex, a server's listing) by reciprocal rank fusion: a tool's fused
//     score is the sum, over the queries that found it, of
//     1/(RRFConstant + rank), rank counting from 1 in that query's ranked
//     hits. Scores of different queries are not comparable; ranks are.
//  3. Before the fused order fills those places, the best ranked hit of
//     each query that names no tool is given one, so that every need gets
//     its best answer whenever MaxResults leaves room for one per query.
//
// A tool found by several queries is listed once, with its fused score
// (and the Why of the query that ranked it best; no Breakdown).

// MaxQueries bounds the queries of one SearchMany.
const MaxQueries = 8

// RRFConstant is k in the reciprocal rank fusion score 1/(k + rank). The
// value 60 is the one Cormack, Clarke and Büttcher proposed with the method
// (SIGIR 2009); it keeps a tool that several queries rank fairly well ahead
// of one that a single query ranks first, without letting rank 1 dominate.
const RRFConstant = 60

// FormMixed is the Form of a SearchMany whose queries were understood in
// different ways (say, a select: and keywords).
const FormMixed Form = "mixed"

// QueryError is the error of one query among several. Index is its place
// in the queries of SearchMany (from 0), or -1 for the Request's own
// Query; Err is what Search said, which it wraps.
type QueryError struct {
	Index int
	Query string
	Err   error
}

// Error names the query as a search tool's input does: query, or
// queries[i].
func (e *QueryError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("query: %v", e.Err)
	}
	return fmt.Sprintf("queries[%d]: %v", e.Index, e.Err)
}

// Unwrap returns the query's own error.
func (e *QueryError) Unwrap() error { return e.Err }

// SearchMany runs req.Query and each of queries, and merges the answers
// into one Result, as the comment at the top of this file describes: the
// shape of a search tool that takes a query, a list of queries, or both.
// req.Query is left out when it is blank and queries are given. Queries
// repeated word for word are run once; query and queries together may be
// at most MaxQueries. A query that fails fails the whole search with a
// *QueryError naming it. When one query is run, it is answered exactly as
// Search answers it, error included.
//
// The merged Result's Form is the queries' common form, or FormMixed. Its
// Total counts the distinct tools matched: exact when every query listed
// all it matched, otherwise the larger of the tools listed and the largest
// single Total, with TotalAtLeast set. Unknown and Ambiguous gather every
// query's; NearestServers is set only when nothing at all matched.
func (ix *Index) SearchMany(ctx context.Context, req Request, queries []string) (Result, error) {
	return SearchEach(ctx, req, queries, ix.Search)
}

// SearchEach is SearchMany for a caller that answers single queries itself
// (resolving names the index does not know, say, before calling Search):
// search is called once per distinct query, with req.Query set to it, and
// the answers are merged as SearchMany merges them.
func SearchEach(ctx context.Context, req Request, queries []string, search func(context.Context, Request) (Result, error)) (Result, error) {
	type asked struct {
		index int // -1: req.Query
		query string
	}
	var list []asked
	if strings.TrimSpace(req.Query) != "" || len(queries) == 0 {
		list = append(list, asked{-1, req.Query})
	}
	for i, q := range queries {
		list = append(list, asked{i, q})
	}
	switch {
	case len(list) > MaxQueries:
		return Result{}, badQuery("%d queries given (query and queries together); the limit is %d", len(list), MaxQueries)
	case len(list) == 1 && list[0].index < 0:
		return search(ctx, req)
	case req.MaxResults < 0:
		return Result{}, badQuery("max_results is %d; it must be at least 1", req.MaxResults)
	}
	if req.MaxResults == 0 {
		req.MaxResults = DefaultMaxResults
	}
	req.MaxResults = min(req.MaxResults, MaxMaxResults)
	results := make([]Result, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, a := range list {
		key := strings.TrimSpace(a.query)
		if key != "" && seen[key] {
			continue
		}
		seen[key] = true
		one := req
		one.Query = a.query
		res, err := search(ctx, one)
		if err != nil {
			if len(list) == 1 {
				return Result{}, err
			}
			return Result{}, &QueryError{Index: a.index, Query: a.query, Err: err}
		}
		results = append(results, res)
	}
	if len(results) == 1 {
		return results[0], nil
	}
	return fuse(results, req.MaxResults), nil
}

// named reports whether a hit of res was named outright: by select:, or
// by an exact name (scored exactScore, above any keyword score).
func named(res Result, h Hit) bool {
	return res.Form == FormSelect || (res.Form == FormExact && h.Score >= exactScore)
}

// fused is a ranked hit of several queries.
type fused struct {
	hit   Hit
	score float64 // Σ 1/(RRFConstant + rank)
	best  int     // its best rank in any query
	query int     // the first query that found it at that rank
	top   bool    // it is the best ranked hit of a query that names no tool
}

// fuse merges the results of several queries: the named hits, then ranked
// ones up to maxResults hits in all.
func fuse(results []Result, maxResults int) Result {
	out := Result{Form: results[0].Form}
	listed := map[*catalog.Tool]bool{}
	byTool := map[*catalog.Tool]*fused{}
	var ranked []*fused
	exact := true
	for qi, res := range results {
		if res.Form != out.Form {
			out.Form = FormMixed
		}
		exact = exact && !res.TotalAtLeast && res.Total <= len(res.Hits)
		out.Total = max(out.Total, res.Total)
		out.Unknown = appendMissing(out.Unknown, res.Unknown...)
		out.Ambiguous = appendMissing(out.Ambiguous, res.Ambiguous...)
		// A query that names a tool has its answer: none of its ranked
		// hits needs a place kept.
		names := slices.ContainsFunc(res.Hits, func(h Hit) bool { return named(res, h) })
		rank := 0
		for _, h := range res.Hits {
			if named(res, h) {
				if !listed[h.Tool] {
					// Past MaxSelectNames a named tool is counted, not listed.
					listed[h.Tool] = true
					if len(out.Hits) < MaxSelectNames {
						out.Hits = append(out.Hits, h)
					}
				}
				continue
			}
			rank++
			f := byTool[h.Tool]
			if f == nil {
				f = &fused{hit: h, best: rank, query: qi}
				byTool[h.Tool] = f
				ranked = append(ranked, f)
			} else if rank < f.best {
				f.best, f.query, f.hit.Why = rank, qi, h.Why
			}
			f.score += 1 / float64(RRFConstant+rank)
			f.top = f.top || (rank == 1 && !names)
		}
	}
	slices.SortStableFunc(ranked, func(a, b *fused) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.best, b.best); c != 0 {
			return c
		}
		return cmp.Compare(a.query, b.query)
	})
	// Tools named outright were also ranked by the words of a query: they
	// are listed already.
	ranked = slices.DeleteFunc(ranked, func(f *fused) bool { return listed[f.hit.Tool] })
	room := maxResults - len(out.Hits)
	keep := map[*fused]bool{}
	for _, f := range ranked {
		if len(keep) < room && f.top {
			keep[f] = true
		}
	}
	for _, f := range ranked {
		if len(keep) < room {
			keep[f] = true
		}
	}
	for _, f := range ranked {
		if keep[f] {
			h := f.hit
			// The fused score replaces the query's own, which a
			// Breakdown would take apart.
			h.Score, h.Breakdown = f.score, nil
			out.Hits = append(out.Hits, h)
		}
	}
	distinct := len(listed) + len(ranked)
	if exact {
		out.Total = distinct
	} else {
		out.Total, out.TotalAtLeast = max(out.Total, distinct), true
	}
	if len(out.Hits) == 0 {
		// Each query's closest server first, then each one's second...
		for i := 0; ; i++ {
			more := false
			for _, res := range results {
				if i < len(res.NearestServers) {
					out.NearestServers = appendMissing(out.NearestServers, res.NearestServers[i])
					more = true
				}
			}
			if !more {
				break
			}
		}
	}
	return out
}

// appendMissing appends the values of add that dst lacks.
func appendMissing(dst []string, add ...string) []string {
	for _, s := range add {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}
