package search

import (
	"fmt"
	"math/bits"
	"strings"
)

// Breakdown is a keyword hit's score taken apart into the factors of the
// score model (score.go): the numbers behind the ranking, for a person
// tuning a catalog or the engine.
type Breakdown struct {
	// Terms are the query terms the tool matched, in query order.
	Terms []TermScore
	// Sum is S, the summed term scores.
	Sum float64
	// Coverage is C, the share of the query's idf the tool covers (for a
	// tool with written hints, the mean of its two views', weighed as
	// HintView says), and CoveragePower the power it is raised to.
	Coverage, CoveragePower float64
	// HintView is the weight of the tool's hint view (its definition with
	// its written hints in place of its description) against its
	// definition; 0 for a tool without written hints, scored by its
	// definition alone. Its term scores (TermScore.TF) and Coverage are
	// the means of its two views', so weighed.
	HintView float64
	// NameShare is N, the share of the tool's name the query covers, and
	// NameWeight its weight a: the factor is 1 + a·N.
	NameShare, NameWeight float64
	// Mention is M, how clearly the query names the tool's server, and
	// MentionWeight its weight m: the factor is 1 + m·M.
	Mention, MentionWeight float64
	// HintShare is H, the share of the query the tool's best phrasing
	// covers (a written search hint, or its own: its name or the first
	// sentence of its description), and HintWeight its weight h: the
	// factor is 1 + h·H². The weight is 0 when no tool of the index has
	// written hints.
	HintShare, HintWeight float64
	// HintLead is L, the weight of the query's first term when one of
	// the tool's phrasings starts with it (1 for the word itself, the
	// synonym weight for a synonym, else 0), and HintLeadWeight its
	// weight l: the factor is 1 + l·L. The weight is 0 when no tool of
	// the index has written hints.
	HintLead, HintLeadWeight float64
	// Learned is U, the tool's learned share for the query (how strongly
	// it was called after queries like this one), and LearnedWeight its
	// weight u: the factor is 1 + u·U. The weight is 0 when the search
	// learns nothing.
	Learned, LearnedWeight float64
	// Score is the product: Sum · Coverage^CoveragePower · (1 +
	// NameWeight·NameShare) · (1 + MentionWeight·Mention) · (1 +
	// HintWeight·HintShare²) · (1 + HintLeadWeight·HintLead) · (1 +
	// LearnedWeight·Learned).
	Score float64
}

// TermScore is one query term's part of a hit's score.
type TermScore struct {
	// Word is the query word the term came from, and Term the indexed
	// term that matched it: the word's own term, a synonym or an action
	// class (Kind says which).
	Word, Term string
	Kind       string // "term", "synonym" or "action"
	// Fields are the fields the matched term occurs in.
	Fields []string
	// IDF is the matched term's inverse document frequency, Weight its
	// weight relative to the word's own term (times a repeated word's
	// weight in a long query), and TF the saturated, field-weighted,
	// length-normalised term frequency f / (f + k1).
	IDF, Weight, TF float64
	// K1 is the term-frequency saturation; a term scores IDF · Weight ·
	// (K1 + 1) · TF.
	K1 float64
	// Named is the share of the term counted by the server mention
	// instead, because the word names the tool's server.
	Named float64
	// Score is the term's part of Sum.
	Score float64
}

// String writes the breakdown on a few lines: the product, then each
// term's part.
func (b *Breakdown) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.3f = sum %.3f × coverage %.3f^%.2f × name (1 + %.2f×%.3f) × server (1 + %.2f×%.3f)",
		b.Score, b.Sum, b.Coverage, b.CoveragePower, b.NameWeight, b.NameShare, b.MentionWeight, b.Mention)

	if b.HintWeight > 0 {
		fmt.Fprintf(&sb, " × hint (1 + %.2f×%.3f²)", b.HintWeight, b.HintShare)
	}
	if b.HintLeadWeight > 0 {
		fmt.Fprintf(&sb, " × lead (1 + %.2f×%.2f)", b.HintLeadWeight, b.HintLead)
	}
	if b.LearnedWeight > 0 {
		fmt.Fprintf(&sb, " × learned (1 + %.2f×%.3f)", b.LearnedWeight, b.Learned)
	}
	if b.HintView > 0 {
		fmt.Fprintf(&sb, "\n  sum, tf and coverage are the means of the definition (×%.2f) and the hint view (×%.2f)", 1-b.HintView, b.HintView)
	}
	for _, t := range b.Terms {
		fmt.Fprintf(&sb, "\n  %s", t.Word)
		if t.Kind == "term" && !strings.EqualFold(t.Word, t.Term) {
			fmt.Fprintf(&sb, " (%s)", t.Term)
		}
		if t.Kind != "term" {
			fmt.Fprintf(&sb, " ~%s %s", t.Kind, strings.TrimPrefix(t.Term, actionPrefix))
		}
		fmt.Fprintf(&sb, " [%s]: idf %.3f × weight %.3f × (k1+1) %.2f × tf %.3f", strings.Join(t.Fields, ","), t.IDF, t.Weight, t.K1+1, t.TF)
		if t.Named > 0 {
			fmt.Fprintf(&sb, " × (1 − named %.2f)", t.Named)
		}
		fmt.Fprintf(&sb, " = %.3f", t.Score)
	}
	return sb.String()
}

// breakdown takes apart the score of document doc of seg, which matched
// the groups in matched.
func (r *ranking) breakdown(seg *segment, doc uint32, matched uint64) *Breakdown {
	ix := r.ix
	b := &Breakdown{}
	srv := seg.srv[doc]
	var score, name [MaxTerms]float32 // per query group
	for m := matched; m != 0; m &= m - 1 {
		gi := bits.TrailingZeros64(m)
		g := &r.groups[r.order[gi]]
		var named float32
		if r.byGroup[gi] != nil {
			named = r.byGroup[gi][srv]
		}
		var best TermScore
		var bestScore, bestName float32
		found := false
		for _, mem := range g.members {
			l := seg.post[mem.term]
			if l == nil {
				continue
			}
			p, ok := l.find(doc, seg.ranks)
			if !ok {
				continue
			}
			if p.fields()&(1<<FieldName) != 0 {
				bestName = max(bestName, mem.fidf)
			}
			c := mem.w * p.sat * (1 - named)
			if found && c <= bestScore {
				continue
			}
			found, bestScore = true, c
			kind := "term"
			switch {
			case isAction(mem.term):
				kind = "action"
			case !mem.own:
				kind = "synonym"
			}
			idf := ix.idf(ix.df[mem.term])
			best = TermScore{Word: r.pq.groups[gi].word, Term: mem.term, Kind: kind, Fields: fieldList(p.fields()),
				IDF: idf, Weight: float64(mem.fidf) / idf, TF: float64(p.sat), K1: ix.w.K1, Named: float64(named), Score: float64(c)}
		}
		if found {
			b.Terms = append(b.Terms, best)
			score[gi], name[gi] = bestScore, bestName
		}
	}
	// The sums as ranking adds them, group by group in its order, so
	// that the factors below are ranking's own to the last bit.
	var acc, nameAcc float32
	for _, g := range r.groups {
		if matched&g.bit != 0 {
			acc += score[g.gi]
			nameAcc += name[g.gi]
		}
	}
	f, hint, lead := r.parts(acc, nameAcc, matched, seg, int(doc))
	b.Sum, b.Coverage, b.NameShare, b.Mention = f.sum, f.coverage, unitShare(f.name), f.mention
	b.CoveragePower, b.NameWeight, b.MentionWeight = r.model.coordination, r.model.nameCoverage, r.model.serverMention
	b.HintWeight, b.HintLeadWeight = r.model.hintCoverage, r.model.hintLead
	b.HintShare, b.HintLead = hint, lead
	if seg.docs[doc].written {
		b.HintView = r.model.view
	}
	if r.learned != nil {
		b.Learned, b.LearnedWeight = r.learned[seg.docs[doc].tool.ID()], r.ix.w.Learned
	}
	b.Score = r.final(acc, nameAcc, matched, seg, int(doc))
	return b
}

// fieldList names the fields in fs, bit f for field f.
func fieldList(fs uint8) []string {
	var out []string
	for f := Field(0); f < numFields; f++ {
		if fs&(1<<f) != 0 {
			out = append(out, f.String())
		}
	}
	return out
}
