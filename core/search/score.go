package search

import "math"

// The keyword score, written once. Every way of ranking a keyword query
// (reading every posting, or block by block) scores a tool with final, and
// every shortcut that skips tools or blocks bounds their scores with upper,
// so the two can never drift apart.
//
// A query is analysed into groups, one per distinct term: the term itself
// and its synonyms (see rank.go). For a tool t of server s:
//
//	score(t) = S · C^c · (1 + a·N) · (1 + m·M) · (1 + h·H²) · (1 + l·L) · (1 + u·U)
//
//	S = Σ over groups g of  max over members x of g found in t of
//	        w(x) · sat(x, t) · (1 − named(g, s))
//	    w(x)      = weight(x) · idf(x) · (k1 + 1), weight 1 for the term itself,
//	                Weights.Synonym for a synonym and Weights.Action for an
//	                action class (actions.go)
//	    sat(x, t) = f / (f + k1), f = Σ over fields F of
//	                Field[F] · tf(x, F) / (1 − B[F] + B[F] · len(F) / avglen(F))
//	                (BM25F, worked out at build and kept in the posting);
//	                for the hints field, each hint is a field instance of
//	                its own, normalised by its length against the average
//	                hint's: the best hint's part counts whole and the
//	                others' times Weights.HintRest
//	    named(g, s) is how clearly g's word names server s: that share of
//	                the word is counted by the mention factor instead
//	C = Σ idf(g) over the groups t matches or that name s / Σ idf(g) over all
//	    groups                       (query coverage, c = Weights.Coordination)
//	N = min(1, Σ over groups g of max weight(x) · idf(x) over members x in
//	    t's name, divided by the summed idf of t's name terms)
//	                                 (name coverage, a = Weights.NameCoverage)
//	M = how clearly the query names s, at most 1
//	                                 (server mention, m = Weights.ServerMention)
//	H = max over t's phrasings of Σ idf(g) over the groups (action classes
//	    aside) with a member in that phrasing / Σ idf(g) over all groups
//	                                 (hint coverage, h = Weights.HintCoverage)
//	L = the largest weight(x) over members x of the query's first group
//	    that are the first term of one of t's phrasings, at most 1
//	                                 (hint lead, l = Weights.HintLead)
//	U = t's learned share: how strongly t was called after queries like
//	    this one (package usage), in [0, 1]; 0 when the request learns
//	    nothing (Request.Learned nil)   (learned, u = Weights.Learned)
//
// A tool's phrasings are short texts that each say what it does: its own
// (its name, and the first sentence of its description) and its written
// search hints (catalog.Tool.Hints). Every tool has its own, so H and L
// never favour a tool for merely having hints.
//
// # Two views of a tool with written hints
//
// Written hints say in other words what the description says. A tool with
// them is scored by two views of it, on the same scale: its definition
// (every field but the hints) and its hint view (the same with the hints
// in place of the description, the hints field weighed as the description
// is). The tool gets the mean of the two, the hint view weighed
// v = Weights.HintView and the definition 1 − v, part by part: sat(x, t)
// is the mean of the views' saturated frequencies (worked out at build),
// and C the mean of their coverages (a group counts for the definition
// when a member is in a field other than the hints, for the hint view
// when one is in a field other than the description). A tool without
// written hints has one view, its definition, which stands for both. So
// hints lift a tool where they say the query better than its description
// does, and lower it where its description only happens to share the
// query's words; a tool without hints is scored as if its hints said what
// its definition says. H and L take the best of all a tool's phrasings,
// and every tool has its own: a tool without written hints is judged by
// its name and summary where one with them is judged by those and its
// hints.
//
// H and L take part only in an index where some tool has written hints:
// an index without them ranks exactly as if the two factors did not exist.
//
// idf(d) = ln(1 + (n − d + 0.5) / (d + 0.5)) for a term in d of n tools.
//
// S carries the words; C, N, M, H and L are factors of at least 0 and at
// most 1 that scale it. H scores a tool by its best phrasing: each is a way
// of asking for the tool, so a phrasing that says most of the query on its
// own is strong evidence, while words scattered over several (which S and
// C already count) are not. Squared, it favours a phrasing that says
// nearly all of the query over one that says half. A phrasing's words are
// words of the tool, so H is at most the coverage of the groups the tool
// matched in any field, which bounds every view's coverage: bounds take
// the coverage bound for both. L says whether a phrasing asks for what the
// query asks for: hints are written as requests, a request mostly starts
// with what it wants done ("archive the March invoices", "archive paid
// invoices"), and a phrasing with the query's words in another part of it
// ("which invoices did we archive in March") asks something else about
// them; a name mostly starts with what its tool does (archive_invoices).
// Bounds take 1 for it. U is given by the request per tool, and bounds
// take the largest U of the query's tools for it, so that a query that
// learned nothing is bounded (and ranked) exactly as before. The factor
// is at most 1 + u: learning can never lift a tool that does not match
// the query, nor above a tool named exactly or by select:, which are not
// ranked by this score. H and L are looked up in the tool's phrasing terms
// apart from the other factors.
//
// A long query (more than Weights.LongQuery groups) reads no synonyms, weighs a term it repeats by 1 + 2·ln(count)
// (repeatWeight), and has its coverage power c scaled by LongQuery /
// groups. Every factor is monotone, so the score of a tool is at most the
// score of any factors that bound its own: that is what upper relies on.

// factors are the parts of a tool's keyword score, or bounds of them.
type factors struct {
	sum      float64 // S: summed group scores
	coverage float64 // C: the share of the query's idf covered, in [0, 1]
	name     float64 // N: the share of the tool's name covered (capped at 1)
	mention  float64 // M: how clearly the query names the tool's server
}

// scoreModel is the formula above with an index's weights.
type scoreModel struct {
	coordination  float64
	nameCoverage  float64
	serverMention float64
	hintCoverage  float64 // 0 when no tool of the index has written hints
	hintLead      float64 // 0 when no tool of the index has written hints
	// view is the weight of the hint view of a tool with written hints
	// (Weights.HintView).
	view float64
	// learned is u times the largest learned share among the query's
	// tools: 1 + learned bounds every tool's learned factor. 0 when the
	// request learns nothing.
	learned float64
}

// model returns the index's score model for a query of n groups. A long
// query (more than Weights.LongQuery groups) describes what it wants in
// more words than any tool will share: the power of its coverage falls as
// its length grows, so that a tool is not lost for missing a few of them.
func (ix *Index) model(n int) scoreModel {
	m := scoreModel{coordination: ix.w.Coordination, nameCoverage: ix.w.NameCoverage, serverMention: ix.w.ServerMention, view: ix.w.HintView}
	if ix.hinted() {
		m.hintCoverage, m.hintLead = ix.w.HintCoverage, ix.w.HintLead
	}
	if long := ix.w.LongQuery; long > 0 && n > long {
		m.coordination *= float64(long) / float64(n)
	}
	return m
}

// final is the score of a tool with factors f, but for the hint factors
// (hintFactor and leadFactor), which multiply it last in an index with
// hints.
func (m *scoreModel) final(f factors) float64 {
	return m.scaled(f, m.coverageFactor(f.coverage))
}

// hintFactor is the hint coverage factor 1 + h·H² for H = x.
func (m *scoreModel) hintFactor(x float64) float64 {
	return 1 + m.hintCoverage*x*x
}

// leadFactor is the hint lead factor 1 + l·L for L = x.
func (m *scoreModel) leadFactor(x float64) float64 {
	return 1 + m.hintLead*x
}

// hinted reports whether the hint factors take part in the score.
func (m *scoreModel) hinted() bool { return m.hintCoverage > 0 || m.hintLead > 0 }

// scaled is the score of a tool with factors f whose coverage factor C^c
// is k: the one place where the factors are multiplied. It is small
// enough to inline, for bounding, which works out a score for every block
// a query touches.
func (m *scoreModel) scaled(f factors, k float64) float64 {
	return f.sum * k * (1 + m.nameCoverage*unitShare(f.name)) * (1 + m.serverMention*f.mention)
}

// hinted reports whether some tool of the index has written hints: only
// then do hint coverage and the hint lead take part in the score (and
// then for every tool, by its phrasings).
func (ix *Index) hinted() bool {
	for _, seg := range ix.segs {
		if seg.hinted {
			return true
		}
	}
	return false
}

// coverageFactor is C^c for coverage x: x itself for the usual power of
// 1, 1 for a power of 0 (coverage plays no part).
func (m *scoreModel) coverageFactor(x float64) float64 {
	if m.coordination == 1 {
		return x
	}
	return pow(x, m.coordination)
}

// upper bounds the score of every tool whose factors are each at most f's
// and whose hint lead is at most lead, widened by boundSlack so that float
// rounding can never make a bound fall below the score it bounds. A tool's
// hint coverage is at most its coverage (a phrasing's words are the
// tool's), so the hint coverage factor is bounded by f's coverage.
func (m *scoreModel) upper(f factors, lead float64) float64 {
	s := m.final(f) * boundSlack
	if m.hinted() {
		s *= m.hintFactor(f.coverage) * m.leadFactor(lead)
	}
	if m.learned > 0 {
		s *= 1 + m.learned
	}
	return s
}

// scale is the largest factor C, N and M bounded by f can multiply a
// tool's summed group scores by, widened like upper: a tool whose sum times
// scale is below a score cannot reach it.
func (m *scoreModel) scale(f factors, lead float64) float64 {
	f.sum = 1
	return m.upper(f, lead)
}

// boundSlack widens every bound a little, so that float rounding can never
// skip a tool that reading everything would have kept.
const boundSlack = 1.0001

// unitShare caps a share at 1. Shares are never negative or NaN, so this
// is math.Min(1, x) without the cases it handles.
func unitShare[F float32 | float64](x F) F {
	if x > 1 {
		return 1
	}
	return x
}

// pow is x^y, 1 when y is 0: math.Pow, kept out of line so that the
// usual path of coverageFactor stays small.
//
//go:noinline
func pow(x, y float64) float64 {
	if y <= 0 {
		return 1
	}
	return math.Pow(x, y)
}

// sanitized returns w with every weight made safe to rank with: a negative
// or not-a-number weight, length normalisation or share becomes 0, a length
// normalisation above 1 becomes 1, an infinite weight the largest float, and
// a K1 that is not positive and finite becomes DefaultWeights.K1. The score
// is then finite and never negative for any weights.
func (w Weights) sanitized() Weights {
	safe := func(x float64) float64 {
		switch {
		case math.IsNaN(x) || x < 0:
			return 0
		case math.IsInf(x, 1) || x > maxWeight:
			return maxWeight
		}
		return x
	}
	for f := range w.Field {
		w.Field[f] = safe(w.Field[f])
		w.B[f] = min(1, safe(w.B[f]))
	}
	if !(w.K1 > 0) || math.IsInf(w.K1, 1) {
		w.K1 = DefaultWeights.K1
	}
	w.K1 = min(w.K1, maxWeight)
	w.Synonym = safe(w.Synonym)
	w.Action = safe(w.Action)
	w.NameCoverage = safe(w.NameCoverage)
	w.Coordination = safe(w.Coordination)
	w.MinRelative = min(1, safe(w.MinRelative))
	w.ImplicitMention = min(1, safe(w.ImplicitMention))
	w.SynonymMaxDF = safe(w.SynonymMaxDF)
	w.ServerMention = safe(w.ServerMention)
	w.LongQuery = max(0, w.LongQuery)
	w.HintRest = min(1, safe(w.HintRest))
	w.HintCoverage = safe(w.HintCoverage)
	w.HintLead = safe(w.HintLead)
	w.HintView = min(1, safe(w.HintView))
	w.Learned = safe(w.Learned)
	return w
}

// maxWeight is the largest weight an index uses: large enough for any
// tuning, small enough that products of weights and idfs stay finite in
// float32.
const maxWeight = 1e6
