// Package evaluate measures search quality over a set of queries with known
// correct tools: hit@1, hit@k and mean reciprocal rank, overall and per query
// style.
//
// A query file is JSON Lines, one object a line:
//
//	{"id": "q1", "query": "open a pull request", "gold": ["github/create_pull_request"], "style": "task"}
//
// gold lists tool IDs ("<server>/<tool>"); any of them counts as a hit.
// Blank lines are skipped.
package evaluate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/search"
)

// Query is one evaluation query.
type Query struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Gold  []string `json:"gold"`
	Style string   `json:"style"`
}

// maxLine bounds one line of a query file.
const maxLine = 1 << 20

// LoadQueries reads a JSON Lines query file. An error names the line.
func LoadQueries(r io.Reader) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var out []Query
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var q Query
		dec := json.NewDecoder(strings.NewReader(text))
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case strings.TrimSpace(q.Query) == "":
			return nil, fmt.Errorf("line %d: missing \"query\"", line)
		case len(q.Gold) == 0:
			return nil, fmt.Errorf("line %d: missing \"gold\"", line)
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("line-%d", line)
		}
		if q.Style == "" {
			q.Style = "unstyled"
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queries")
	}
	return out, nil
}

// Scores are the figures for a set of queries.
type Scores struct {
	N      int     `json:"n"`
	HitAt1 float64 `json:"hit_at_1"`
	HitAtK float64 `json:"hit_at_k"`
	MRR    float64 `json:"mrr"`
}

// Miss is a query whose gold tools were not all ranked first.
type Miss struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Style string   `json:"style"`
	Gold  []string `json:"gold"`
	// Rank is the 1-based rank of the best gold tool, 0 when it is not in
	// the first k.
	Rank int `json:"rank"`
	// Got are the IDs returned, best first.
	Got []string `json:"got"`
	// Err is set when the search failed.
	Err string `json:"error,omitempty"`
}

// Report is the result of an evaluation.
type Report struct {
	Scores
	K       int               `json:"k"`
	ByStyle map[string]Scores `json:"by_style"`
	// Misses are the queries not answered at rank 1.
	Misses []Miss `json:"misses,omitempty"`
}

// Run searches every query with max_results k and scores the results.
func Run(ctx context.Context, ix *search.Index, qs []Query, k int) (Report, error) {
	if k < 1 || k > search.MaxMaxResults {
		return Report{}, fmt.Errorf("k is %d; it must be between 1 and %d", k, search.MaxMaxResults)
	}
	rep := Report{K: k, ByStyle: map[string]Scores{}}
	type acc struct {
		n, h1, hk int
		rr        float64
	}
	total := acc{}
	styles := map[string]*acc{}
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		res, err := ix.Search(ctx, search.Request{Query: q.Query, MaxResults: k})
		var got []string
		rank := 0
		if err == nil {
			gold := map[string]bool{}
			for _, g := range q.Gold {
				gold[g] = true
			}
			for i, h := range res.Hits {
				id := h.Tool.ID()
				got = append(got, id)
				if rank == 0 && gold[id] {
					rank = i + 1
				}
			}
		}
		st := styles[q.Style]
		if st == nil {
			st = &acc{}
			styles[q.Style] = st
		}
		for _, a := range []*acc{&total, st} {
			a.n++
			if rank == 1 {
				a.h1++
			}
			if rank >= 1 {
				a.hk++
				a.rr += 1 / float64(rank)
			}
		}
		if rank != 1 {
			m := Miss{ID: q.ID, Query: q.Query, Style: q.Style, Gold: q.Gold, Rank: rank, Got: got}
			if err != nil {
				m.Err = err.Error()
			}
			rep.Misses = append(rep.Misses, m)
		}
	}
	score := func(a acc) Scores {
		if a.n == 0 {
			return Scores{}
		}
		n := float64(a.n)
		return Scores{N: a.n, HitAt1: float64(a.h1) / n, HitAtK: float64(a.hk) / n, MRR: a.rr / n}
	}
	rep.Scores = score(total)
	for s, a := range styles {
		rep.ByStyle[s] = score(*a)
	}
	sort.Slice(rep.Misses, func(i, j int) bool { return rep.Misses[i].ID < rep.Misses[j].ID })
	return rep, nil
}
