package evaluate

import "math"

// judgement is how one query's first k hits compare with its gold tools.
type judgement struct {
	// rank is the 1-based rank of the best gold tool in the first k, 0
	// when there is none.
	rank int
	// ndcg and recall are the query's NDCG@k and recall@k.
	ndcg, recall float64
}

// judge scores the hits got (IDs, best first) against gold at cut-off k,
// with binary relevance. A gold ID listed twice counts once, and so does a
// hit repeated in got.
func judge(gold, got []string, k int) judgement {
	want := make(map[string]bool, len(gold))
	for _, g := range gold {
		want[g] = true
	}
	if len(want) == 0 || k < 1 {
		return judgement{}
	}
	var j judgement
	dcg, found := 0.0, 0
	for i, id := range got[:min(len(got), k)] {
		if !want[id] {
			continue
		}
		want[id] = false // counted once
		rank := i + 1
		if j.rank == 0 {
			j.rank = rank
		}
		dcg += discount(rank)
		found++
	}
	ideal := 0.0
	for rank := 1; rank <= min(k, len(want)); rank++ {
		ideal += discount(rank)
	}
	j.ndcg = dcg / ideal
	j.recall = float64(found) / float64(len(want))
	return j
}

// discount is the gain of a relevant hit at a 1-based rank.
func discount(rank int) float64 { return 1 / math.Log2(float64(rank)+1) }
