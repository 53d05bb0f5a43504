package search

import (
	"math"
	"sync"
)

// A query term's plan is everything ranking needs to know of it that
// depends only on the index: its idf, the live members of its group (the
// term and its synonyms) with their weights and posting lists, the bounds
// they give, their merged list, and the servers the term names. An
// index works a term's plan out the first time a query uses it and keeps
// it, so a query looks each of its words up once.

// termPlan is the ranking plan of one query term.
type termPlan struct {
	df      int32     // live documents containing the term itself
	idf     float64   // their idf, for query coverage
	members []rmember // the live members, the term itself first when live
	ub      float32   // the largest score the group can give a tool
	nameUB  float32   // the largest name idf it can add
	merged  *groupBlocks
	// named are the servers whose key, title or package has the term,
	// with the strength the term names each (in serverTerms order);
	// implicit is the server the term's tools concentrate in, when it
	// names none (strength implicitP > 0).
	named     []namedServer
	implicit  int32
	implicitP float64
}

// namedServer is a server a term names and how clearly.
type namedServer struct {
	idx int32
	p   float64
}

// planKey identifies a plan: a joined identifier has no synonyms.
type planKey struct {
	term   string
	joined bool
}

// plans caches an index's term plans, and the analysis of plain query
// words with their terms' plans.
type plans struct {
	mu    sync.RWMutex
	m     map[planKey]*termPlan
	words map[string][]wordTerm
}

// wordTerm is a term a plain query word analyses to, with its plan.
type wordTerm struct {
	term string
	plan *termPlan
}

// plainWord reports whether w is lower-case ASCII letters only: a word the
// analyser takes as one part, so that its terms depend on nothing else
// and can be kept with their plans.
func plainWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return len(w) > 0 && len(w) <= maxPlainWord
}

// maxPlainWord is the longest plain word whose analysis is kept.
const maxPlainWord = 32

// wordTerms returns the kept terms of the plain word w and whether they
// are kept.
func (ix *Index) wordTerms(w string) ([]wordTerm, bool) {
	ix.plans.mu.RLock()
	wt, ok := ix.plans.words[w]
	ix.plans.mu.RUnlock()
	return wt, ok
}

// keepWordTerms keeps the terms a plain word analyses to, when every
// term's plan is kept (a word of unknown terms is not, so that queries
// cannot grow the cache).
func (ix *Index) keepWordTerms(w string, wt []wordTerm) {
	ix.plans.mu.Lock()
	defer ix.plans.mu.Unlock()
	for _, t := range wt {
		if ix.plans.m[planKey{t.term, false}] != t.plan {
			return
		}
	}
	if ix.plans.words == nil {
		ix.plans.words = make(map[string][]wordTerm)
	}
	if len(ix.plans.words) < maxPlans {
		ix.plans.words[w] = wt
	}
}

// maxPlans bounds the plans an index keeps. Only terms of the index's
// vocabulary or of the synonym table get a plan kept, so this is a
// safeguard rather than a limit met in use.
const maxPlans = 1 << 17

// plan returns the plan of term.
func (ix *Index) plan(term string, joined bool) *termPlan {
	k := planKey{term, joined}
	ix.plans.mu.RLock()
	p := ix.plans.m[k]
	ix.plans.mu.RUnlock()
	if p != nil {
		return p
	}
	p = ix.makePlan(term, joined)
	if p.df == 0 && len(p.members) == 0 {
		// Neither the term nor a synonym is in the index: nothing to
		// keep, and keeping it would let queries grow the cache.
		return p
	}
	ix.plans.mu.Lock()
	if ix.plans.m == nil {
		ix.plans.m = make(map[planKey]*termPlan)
	}
	if q := ix.plans.m[k]; q != nil {
		p = q
	} else if len(ix.plans.m) < maxPlans {
		ix.plans.m[k] = p
	}
	ix.plans.mu.Unlock()
	return p
}

// makePlan works out the plan of term.
func (ix *Index) makePlan(term string, joined bool) *termPlan {
	p := &termPlan{df: ix.df[term], implicit: -1}
	p.idf = ix.idf(p.df)
	single := ix.prunable()
	consider := func(mi int, term string, weight float64) {
		var df int32
		var one *plist
		if single {
			// One segment and no retired tools: a list's length is the
			// term's document frequency.
			if one = ix.segs[0].post[term]; one != nil {
				df = int32(len(one.ps))
			}
		} else {
			df = ix.df[term]
		}
		if !ix.live(mi, df) {
			return
		}
		rm := rmember{term: term, own: mi == 0}
		rm.w, rm.fidf = ix.memberWeights(weight, df)
		var most float32
		if single {
			most, rm.l = one.max, one
		} else {
			for _, seg := range ix.segs {
				if l := seg.post[term]; l != nil {
					most = max(most, l.max)
					rm.l = l
				}
			}
		}
		p.ub = max(p.ub, rm.w*most)
		p.nameUB = max(p.nameUB, rm.fidf)
		p.members = append(p.members, rm)
	}
	if isAction(term) {
		// An action class is only ever read for a query verb, at its
		// own weight (see addActions).
		consider(0, term, ix.w.Action)
	} else {
		consider(0, term, 1)
	}
	if !joined {
		for i, syn := range synonyms[term] {
			consider(i+1, syn, ix.w.Synonym)
		}
		if single && len(p.members) > 1 {
			if gb := ix.segs[0].groups[term]; gb != nil && gb.live == len(p.members) {
				p.merged = gb
			}
		}
	}
	if p.df == 0 {
		return p
	}
	if keys := ix.serverTerms[term]; len(keys) > 0 {
		for _, k := range keys {
			info := ix.servers[k]
			p.named = append(p.named, namedServer{info.idx, math.Min(1, float64(len(info.srv.Tools))/float64(p.df))})
		}
	} else if ix.w.ImplicitMention > 0 {
		if srv, c := ix.concentration(term, p.df); c >= 0.5 {
			// A word names a server only when it is far more
			// concentrated in it than the server's share of the
			// catalog: in a server of a large part of the catalog,
			// most words are concentrated without naming it.
			info := ix.servers[srv]
			share := float64(len(info.srv.Tools)) / float64(ix.n)
			if c >= minMentionLift*share {
				p.implicit, p.implicitP = info.idx, ix.w.ImplicitMention*c
			}
		}
	}
	return p
}

// memberWeights returns the weights ranking gives a group member found in
// df tools, weight being 1 for the word itself and Weights.Synonym for a
// synonym: w, weight × idf × (k1+1), scales its saturated frequencies, and
// fidf, weight × idf, is its share of name coverage. Merged lists weigh
// members with it too, so that their scores are ranking's bit for bit.
func (ix *Index) memberWeights(weight float64, df int32) (w, fidf float32) {
	idf := weight * ix.idf(df)
	return float32(idf * (ix.w.K1 + 1)), float32(idf)
}

// minMentionLift is how many times a word must be more concentrated in a
// server's tools than the server's share of the catalog for the word to
// name the server implicitly.
const minMentionLift = 10
