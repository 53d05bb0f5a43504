package search

import "math"

// Learning from use: the request brings, per tool, a share U of how
// strongly the tool was called after queries like this one (package
// usage keeps the record), and the score multiplies a matching tool by
// 1 + Weights.Learned × U (score.go). A query that learns nothing (no
// Learned in the request, or no tool with a share) is ranked exactly as
// it would be without learning, bounds and all.

// Learner gives, for a query's analysed terms (as Index.Terms returns
// them), each tool's learned share in [0, 1] by tool ID. idf weighs a
// term by how rare it is in the index, for telling alike queries from
// queries that share only common words. A share outside [0, 1] is taken
// as the nearest end, one that is not a number as 0; a tool the query
// does not match gains nothing whatever its share.
type Learner func(terms []string, idf func(term string) float64) map[string]float64

// Terms returns the analysed terms of keyword query q that learning
// keys on, in query order: the terms the query is ranked by, without
// their synonyms or action classes. A query that does not parse has
// none.
func (ix *Index) Terms(q string) []string {
	s := getScratch()
	defer putScratch(s)
	pq, err := ix.parseKeywords(clipQuery(q), s)
	if err != nil {
		return nil
	}
	return learnTerms(pq)
}

// learnTerms are the terms of pq that learning keys on.
func learnTerms(pq parsedQuery) []string {
	var out []string
	for _, g := range pq.groups {
		if !g.action {
			out = append(out, g.term)
		}
	}
	return out
}

// learn asks the request's Learner for the query's learned shares and
// sets the score model's bound on them.
func (r *ranking) learn() {
	ix := r.ix
	shares := r.req.Learned(learnTerms(r.pq), func(t string) float64 {
		df, ok := ix.df[t]
		if !ok || df <= 0 {
			return 0
		}
		return ix.idf(df)
	})
	var most float64
	var kept map[string]float64
	for id, u := range shares {
		switch {
		case math.IsNaN(u) || u <= 0:
			continue
		case u > 1:
			u = 1
		}
		if kept == nil {
			kept = make(map[string]float64, len(shares))
		}
		kept[id] = u
		most = max(most, u)
	}
	if kept == nil {
		return
	}
	r.learned = kept
	r.model.learned = ix.w.Learned * most
}

// learnedFactor is the learned factor 1 + u·U of document i of seg.
func (r *ranking) learnedFactor(seg *segment, i int) float64 {
	return 1 + r.ix.w.Learned*r.learned[seg.docs[i].tool.ID()]
}
