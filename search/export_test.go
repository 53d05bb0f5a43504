package search

// WithoutPruning returns a copy of ix whose keyword queries read every
// posting, for comparison with the pruned ranking.
func WithoutPruning(ix *Index) *Index {
	c := *ix
	c.noPrune = true
	return &c
}
