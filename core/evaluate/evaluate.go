// Package evaluate measures search quality over a set of queries with known
// correct tools: hit@1, hit@k, mean reciprocal rank, NDCG@k and recall@k,
// overall, per query style and per category.
//
// A query file is JSON Lines, one object a line:
//
//	{"id": "q1", "query": "open a pull request", "gold": ["github/create_pull_request"], "style": "task", "category": "code"}
//
// gold lists tool IDs ("<server>/<tool>"); style and category are optional
// labels the figures are broken down by. Blank lines are skipped.
//
// Every figure looks at the first k hits only, and every gold tool has the
// same gain (binary relevance):
//
//   - hit@1 and hit@k: the share of queries with a gold tool at rank 1, or
//     in the first k.
//   - MRR: the mean of 1/rank of the best-ranked gold tool (0 when none is
//     in the first k).
//   - NDCG@k: DCG = Σ 1/log2(rank+1) over the gold tools in the first k,
//     divided by the DCG of an ideal list that puts min(k, |gold|) gold
//     tools first.
//   - recall@k: the share of a query's gold tools found in the first k.
//
// A query the engine refuses (a select: naming no tool, a bad regex) is not
// dropped: it counts in n and in errors, and scores 0 on every figure.
package evaluate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/search"
)

// Query is one evaluation query.
type Query struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Gold  []string `json:"gold"`
	Style string   `json:"style"`
	// Category is an optional coarser label than Style (the ToolRet sets
	// say web or code).
	Category string `json:"category,omitempty"`
}

// maxLine bounds one line of a query file.
const maxLine = 1 << 20

// Labels given to queries that carry none.
const (
	NoStyle    = "unstyled"
	NoCategory = "uncategorized"
)

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
			q.Style = NoStyle
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
	N int `json:"n"`
	// Errors counts the queries the engine refused; they are part of N
	// and score 0.
	Errors    int     `json:"errors"`
	HitAt1    float64 `json:"hit_at_1"`
	HitAtK    float64 `json:"hit_at_k"`
	MRR       float64 `json:"mrr"`
	NDCGAtK   float64 `json:"ndcg_at_k"`
	RecallAtK float64 `json:"recall_at_k"`
}

// Miss is a query whose best gold tool was not ranked first, or that the
// engine refused.
type Miss struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Style    string   `json:"style"`
	Category string   `json:"category,omitempty"`
	Gold     []string `json:"gold"`
	// Rank is the 1-based rank of the best gold tool, 0 when it is not in
	// the first k.
	Rank int `json:"rank"`
	// Got are the IDs of the first k hits, best first.
	Got []string `json:"got"`
	// Err is set when the engine refused the query.
	Err string `json:"error,omitempty"`
}

// Report is the result of an evaluation.
type Report struct {
	Scores
	K int `json:"k"`
	// Part is the subset evaluated ("1/2"), empty for the whole set.
	Part    string            `json:"part,omitempty"`
	ByStyle map[string]Scores `json:"by_style"`
	// ByCategory is set when a query carries a category; queries without
	// one are counted under NoCategory.
	ByCategory map[string]Scores `json:"by_category,omitempty"`
	// Misses are the queries not answered at rank 1, refused ones included.
	Misses []Miss `json:"misses,omitempty"`
}

// Run searches every query with max_results k and scores the first k hits.
// A query the engine refuses is counted as an error and scored 0; only a
// cancelled ctx (or a k out of range) fails the run.
func Run(ctx context.Context, ix *search.Index, qs []Query, k int) (Report, error) {
	return run(ctx, ix, qs, k, nil)
}

// run is Run with every search learning from learned (nil: none).
func run(ctx context.Context, ix *search.Index, qs []Query, k int, learned search.Learner) (Report, error) {
	if k < 1 || k > search.MaxMaxResults {
		return Report{}, fmt.Errorf("k is %d; it must be between 1 and %d", k, search.MaxMaxResults)
	}
	rep := Report{K: k, ByStyle: map[string]Scores{}}
	total := &sums{}
	styles := map[string]*sums{}
	var categories map[string]*sums
	for _, q := range qs {
		if q.Category != "" && categories == nil {
			categories = map[string]*sums{}
		}
	}
	group := func(m map[string]*sums, key string) *sums {
		s := m[key]
		if s == nil {
			s = &sums{}
			m[key] = s
		}
		return s
	}
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		res, err := ix.Search(ctx, search.Request{Query: q.Query, MaxResults: k, Learned: learned})
		if err != nil && !errors.Is(err, search.ErrBadQuery) {
			// Not a refusal of the query: the context ended.
			return Report{}, fmt.Errorf("query %s: %w", q.ID, err)
		}
		var got []string
		for _, h := range res.Hits {
			if len(got) == k {
				// A select: is not cut to max_results; the figures are.
				break
			}
			got = append(got, h.Tool.ID())
		}
		j := judge(q.Gold, got, k)
		refused := err != nil
		acc := []*sums{total, group(styles, q.Style)}
		if categories != nil {
			c := q.Category
			if c == "" {
				c = NoCategory
			}
			acc = append(acc, group(categories, c))
		}
		for _, a := range acc {
			a.add(j, refused)
		}
		if j.rank != 1 {
			m := Miss{ID: q.ID, Query: q.Query, Style: q.Style, Category: q.Category, Gold: q.Gold, Rank: j.rank, Got: got}
			if err != nil {
				m.Err = err.Error()
			}
			rep.Misses = append(rep.Misses, m)
		}
	}
	rep.Scores = total.scores()
	for s, a := range styles {
		rep.ByStyle[s] = a.scores()
	}
	if categories != nil {
		rep.ByCategory = map[string]Scores{}
		for c, a := range categories {
			rep.ByCategory[c] = a.scores()
		}
	}
	sort.Slice(rep.Misses, func(i, j int) bool { return rep.Misses[i].ID < rep.Misses[j].ID })
	return rep, nil
}

// sums accumulates the judgements of a group of queries.
type sums struct {
	n, errors, h1, hk int
	rr, ndcg, recall  float64
}

func (s *sums) add(j judgement, refused bool) {
	s.n++
	if refused {
		s.errors++
	}
	if j.rank == 1 {
		s.h1++
	}
	if j.rank >= 1 {
		s.hk++
		s.rr += 1 / float64(j.rank)
	}
	s.ndcg += j.ndcg
	s.recall += j.recall
}

func (s *sums) scores() Scores {
	if s.n == 0 {
		return Scores{}
	}
	n := float64(s.n)
	return Scores{N: s.n, Errors: s.errors, HitAt1: float64(s.h1) / n, HitAtK: float64(s.hk) / n,
		MRR: s.rr / n, NDCGAtK: s.ndcg / n, RecallAtK: s.recall / n}
}
