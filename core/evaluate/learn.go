package evaluate

import (
	"context"
	"fmt"
	"time"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/usage"
)

// Learning from use, simulated. A query set with known answers stands in
// for use: within each style (a ToolRet task, a dev style), every second
// query in file order is "used" (its query is searched and its gold tools
// are recorded as the tools called after it, as the gateway records a
// call after a search), and the other queries are measured twice, with
// learning off and on. Both runs measure the same queries, so the
// difference is what learning from the first half did to the second.

// LearnScores are the figures of one group of measured queries.
type LearnScores struct {
	N        int     `json:"n"`
	HitAt1   float64 `json:"hit_at_1"`
	HitAt5   float64 `json:"hit_at_5"`
	NDCGAt10 float64 `json:"ndcg_at_10"`
}

// LearnReport is the result of SimulateLearning.
type LearnReport struct {
	// Learned counts the queries learned from, and Entries the (terms →
	// tool) entries they left in the store.
	Learned, Entries int
	// Off and On are the measured queries' figures without and with
	// learning, overall.
	Off, On LearnScores
	// ByStyleOff and ByStyleOn break them down by style.
	ByStyleOff map[string]LearnScores `json:"by_style_off"`
	ByStyleOn  map[string]LearnScores `json:"by_style_on"`
}

// SplitForLearning splits qs into the queries to learn from and those to
// measure: within each style, in the order of qs, the first, third, fifth...
// query is learned from and the others are measured.
func SplitForLearning(qs []Query) (learn, measure []Query) {
	seen := map[string]int{}
	for _, q := range qs {
		style := q.Style
		if style == "" {
			style = NoStyle
		}
		if seen[style]%2 == 0 {
			learn = append(learn, q)
		} else {
			measure = append(measure, q)
		}
		seen[style]++
	}
	return learn, measure
}

// SimulateLearning learns from half of qs and measures the other half
// with learning off and on (see above), in a fresh store with options
// opt. Time stands still during the simulation, so nothing fades.
func SimulateLearning(ctx context.Context, ix *search.Index, qs []Query, opt usage.Options) (LearnReport, error) {
	store, err := usage.New(opt)
	if err != nil {
		return LearnReport{}, err
	}
	learn, measure := SplitForLearning(qs)
	if len(measure) == 0 {
		return LearnReport{}, fmt.Errorf("%d queries leave none to measure: want two or more of a style", len(qs))
	}
	now := time.Now()
	for _, q := range learn {
		terms := ix.Terms(q.Query)
		if len(terms) == 0 {
			continue
		}
		for _, g := range q.Gold {
			if err := store.Record(terms, g, now); err != nil {
				return LearnReport{}, fmt.Errorf("query %s: %w", q.ID, err)
			}
		}
	}
	learned := func(terms []string, idf func(string) float64) map[string]float64 {
		return store.Shares(terms, idf, now)
	}
	rep := LearnReport{Learned: len(learn), Entries: store.Len()}
	if rep.Off, rep.ByStyleOff, err = measureLearning(ctx, ix, measure, nil); err != nil {
		return LearnReport{}, err
	}
	if rep.On, rep.ByStyleOn, err = measureLearning(ctx, ix, measure, learned); err != nil {
		return LearnReport{}, err
	}
	return rep, nil
}

// measureLearning runs qs at k = 10 for hit@1 and NDCG@10, and reads
// hit@5 off the same ranking: the queries whose best gold tool is in the
// first 5.
func measureLearning(ctx context.Context, ix *search.Index, qs []Query, learned search.Learner) (LearnScores, map[string]LearnScores, error) {
	rep, err := run(ctx, ix, qs, 10, learned)
	if err != nil {
		return LearnScores{}, nil, err
	}
	// Every query answered at rank 1 is in the first 5; the misses say
	// the rank of the others.
	beyond5 := map[string]int{}
	total := 0
	for _, m := range rep.Misses {
		if m.Rank == 0 || m.Rank > 5 {
			beyond5[m.Style]++
			total++
		}
	}
	pick := func(sc Scores, missed int) LearnScores {
		ls := LearnScores{N: sc.N, HitAt1: sc.HitAt1, NDCGAt10: sc.NDCGAtK}
		if sc.N > 0 {
			ls.HitAt5 = float64(sc.N-missed) / float64(sc.N)
		}
		return ls
	}
	by := map[string]LearnScores{}
	for s, sc := range rep.ByStyle {
		by[s] = pick(sc, beyond5[s])
	}
	return pick(rep.Scores, total), by, nil
}
