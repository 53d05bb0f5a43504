package search

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// A keyword query is analysed like a document. Each distinct term becomes a
// group: the term itself at weight 1 and its synonyms at Weights.Synonym. A
// group scores a tool by its best member (BM25F: idf times saturated,
// field-weighted, length-normalised frequency), so a tool that says both
// "delete" and "remove" is not counted twice. The tool's score is the sum of
// its group scores, scaled by how much of the query it covers (each group
// weighted by its idf) and raised by how much of the tool's name the query
// covers. A word written "+word" must occur in the tool (itself, not a
// synonym).

// group is one query term with its synonyms.
type group struct {
	word   string // the query word it came from, for explanations
	term   string
	plan   *termPlan
	idf    float64 // idf of the term itself, for coverage
	joined bool
	count  int  // how many times the query has the term
	action bool // an action class's group (addActions)
	// whole is set when a query word is this term alone, not a part of
	// an identifier or an abbreviation's expansion.
	whole bool
}

// parsedQuery is a keyword query analysed into groups.
type parsedQuery struct {
	groups   []group
	required []uint64 // each entry: the groups of one +word, all needed
}

// parseKeywords analyses a keyword query into groups. The groups and
// their members live in s, so they are valid until s is put back.
//
// A query of more than MaxTerms distinct terms (an instruction and a
// request, a pasted task) is not refused: it keeps the terms of its +words
// and then its most informative terms (those whose best member has the
// largest weighted idf), MaxTerms in all, in query order. Terms past the
// first maxQueryGroups distinct ones are not read.
func (ix *Index) parseKeywords(q string, s *scratch) (parsedQuery, error) {
	pq := parsedQuery{groups: s.groups[:0], required: s.required[:0]}
	buf := s.tokens[:0]
	reqs := s.reqTerms[:0]
	defer func() {
		s.groups, s.required, s.tokens, s.reqTerms = pq.groups[:0], pq.required[:0], buf[:0], reqs[:0]
		clear(s.groupOf)
	}()
	words := 0 // +words read
	for i := 0; ; {
		var from, to int
		if from, to = nextField(q, i); from == to {
			break
		}
		raw := q[from:to]
		i = to
		req := false
		if len(raw) > 1 && raw[0] == '+' {
			req, raw = true, raw[1:]
		}
		// A plain word's terms and their plans are kept by the index:
		// one lookup instead of the analyser's and each term's.
		var kept []wordTerm
		var ok bool
		plain := plainWord(raw)
		if plain {
			kept, ok = ix.wordTerms(raw)
		}
		if ok {
			buf = buf[:0]
			for _, t := range kept {
				buf = append(buf, token{term: t.term})
			}
		} else {
			buf = analyzeWith(s.stems(), raw, buf[:0])
			if plain {
				kept = make([]wordTerm, len(buf))
				for k, tk := range buf {
					kept[k] = wordTerm{tk.term, ix.plan(tk.term, tk.joined)}
				}
				ix.keepWordTerms(raw, kept)
			}
		}
		if req && len(buf) == 0 {
			// A required stop word ("+on") is kept as it is.
			buf = append(buf, token{term: strings.ToLower(raw)})
			kept = nil
		}
		for k, tk := range buf {
			gi := s.findGroup(pq.groups, tk.term)
			if gi >= 0 {
				pq.groups[gi].count++
			} else {
				if len(pq.groups) == maxQueryGroups {
					continue
				}
				gi = len(pq.groups)
				var plan *termPlan
				if k < len(kept) {
					plan = kept[k].plan
				} else {
					plan = ix.plan(tk.term, tk.joined)
				}
				pq.groups = append(pq.groups, group{word: raw, term: tk.term, plan: plan, idf: plan.idf, joined: tk.joined, count: 1})
				s.addGroup(pq.groups, gi)
			}
			if len(buf) == 1 {
				pq.groups[gi].whole = true
			}
			if req {
				reqs = append(reqs, reqTerm{word: words, group: gi, joined: tk.joined})
			}
		}
		if req {
			words++
		}
	}
	if long := ix.w.LongQuery; long > 0 && len(pq.groups) > long {
		// A long query says what it wants in many words of its own:
		// synonyms of each would mostly add noise.
		for gi := range pq.groups {
			g := &pq.groups[gi]
			if !g.joined && len(g.plan.members) > 1 {
				g.plan = ix.plan(g.term, true)
			}
		}
	}
	if long := ix.w.LongQuery; ix.w.Action > 0 && (long == 0 || len(pq.groups) <= long) {
		pq.groups = ix.addActions(pq.groups, s)
	}
	keep := s.keepAll(len(pq.groups))
	if len(pq.groups) > MaxTerms {
		var err error
		if pq.groups, keep, err = informative(pq.groups, reqs, keep); err != nil {
			return pq, err
		}
	}
	// Each +word needs its terms, or its joined form when it has only
	// that.
	for w, at := 0, 0; w < words; w++ {
		var mask, joinedMask uint64
		for ; at < len(reqs) && reqs[at].word == w; at++ {
			bit := uint64(1) << keep[reqs[at].group]
			if reqs[at].joined {
				joinedMask |= bit
			} else {
				mask |= bit
			}
		}
		if mask == 0 {
			mask = joinedMask
		}
		pq.required = append(pq.required, mask)
	}
	return pq, nil
}

// addActions adds to groups, for each action class (see actions.go) a verb
// of the query belongs to (a word that is the verb alone, not a part of an
// identifier or of an abbreviation's expansion), a group of the class's
// term: it matches the verbs of that class in tool names, at
// Weights.Action. An action group says how a word is meant rather than
// adding a word, so it does not count towards the query's coverage.
func (ix *Index) addActions(groups []group, s *scratch) []group {
	n := len(groups)
	for gi := range n {
		g := &groups[gi]
		class, ok := queryActionOf[g.term]
		if !ok || !g.whole || len(groups) == MaxTerms || s.findGroup(groups, class) >= 0 {
			continue
		}
		plan := ix.plan(class, true)
		if len(plan.members) == 0 {
			continue
		}
		groups = append(groups, group{word: g.word, term: class, plan: plan, joined: true, count: 1, action: true})
		s.addGroup(groups, len(groups)-1)
	}
	return groups
}

// maxQueryGroups bounds the distinct terms a keyword query reads before it
// keeps its MaxTerms most informative ones.
const maxQueryGroups = 512

// reqTerm is a term a +word needs: the word's number among the query's
// +words, and the term's group.
type reqTerm struct {
	word   int
	group  int
	joined bool
}

// findGroup returns the number of the group of term among groups, or -1.
// A short query compares terms; a long one keeps them in a map.
func (s *scratch) findGroup(groups []group, term string) int {
	if len(groups) <= MaxTerms {
		return slices.IndexFunc(groups, func(g group) bool { return g.term == term })
	}
	if gi, ok := s.groupOf[term]; ok {
		return gi
	}
	return -1
}

// addGroup records group gi of groups for findGroup, filling the map the
// first time a query has more groups than a scan suits.
func (s *scratch) addGroup(groups []group, gi int) {
	if len(groups) <= MaxTerms {
		return
	}
	if s.groupOf == nil {
		s.groupOf = make(map[string]int, 2*MaxTerms)
	}
	if len(s.groupOf) == 0 {
		for i, g := range groups {
			s.groupOf[g.term] = i
		}
		return
	}
	s.groupOf[groups[gi].term] = gi
}

// keepAll returns, in s, the identity numbering of n groups.
func (s *scratch) keepAll(n int) []int {
	keep := slices.Grow(s.keep[:0], n)[:n]
	for i := range keep {
		keep[i] = i
	}
	s.keep = keep
	return keep
}

// informative keeps MaxTerms of groups: every group a +word needs, then
// the groups whose best member weighs most (weight × idf), ties going to
// the earlier; a group with no member in the index weighs nothing. It
// returns the kept groups in query order and, through keep, each old
// group's new number (-1 when dropped). A query whose +words alone need
// more than MaxTerms terms is refused.
func informative(groups []group, reqs []reqTerm, keep []int) ([]group, []int, error) {
	order := make([]int, len(groups))
	need := make([]bool, len(groups))
	for _, r := range reqs {
		need[r.group] = true
	}
	weight := func(g group) float32 {
		var w float32
		for _, m := range g.plan.members {
			w = max(w, m.fidf)
		}
		return w
	}
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if need[a] != need[b] {
			if need[a] {
				return -1
			}
			return 1
		}
		return cmp.Compare(weight(groups[b]), weight(groups[a]))
	})
	if need[order[MaxTerms]] {
		return nil, nil, badQuery("the query's +words need more than %d distinct terms", MaxTerms)
	}
	chosen := make([]bool, len(groups))
	for _, gi := range order[:MaxTerms] {
		chosen[gi] = true
	}
	out := groups[:0]
	for gi, g := range groups {
		keep[gi] = -1
		if chosen[gi] {
			keep[gi] = len(out)
			out = append(out, g)
		}
	}
	clear(groups[len(out):])
	return out, keep, nil
}

// nextField returns the bounds of the first field of q at or after byte i,
// fields being runs of non-space characters as strings.Fields finds them;
// from == to when there is none.
func nextField(q string, i int) (from, to int) {
	// ASCII is tested inline: a call per byte cost more than the test.
	for i < len(q) {
		if c := q[i]; c < utf8.RuneSelf {
			if !asciiSpace[c] {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(q[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	j := i
	for j < len(q) {
		if c := q[j]; c < utf8.RuneSelf {
			if asciiSpace[c] {
				break
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(q[j:])
		if unicode.IsSpace(r) {
			break
		}
		j += n
	}
	return i, j
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// scratch holds a query's per-document accumulators.
type scratch struct {
	// The parsed query: groups, required masks, and the analyser's
	// tokens and stem cache.
	groups   []group
	required []uint64
	tokens   []token
	stemMemo map[string]string
	reqTerms []reqTerm
	keep     []int
	groupOf  map[string]int // a long query's groups by term

	docs     []docAcc
	touched  []uint32 // docs with a group matched
	gTouched []uint32 // docs the current group matched
	blk      blockScratch
	// The ranking and its groups, idfs and order.
	rank    ranking
	rgroups []rgroup
	gidf    []float64
	covOf   [1 << covGroups]float64
	order   []int
	byGroup [][]float32
	top     topK
	block   [blockSize]docAcc // the accumulators of the block being read
	// Per server: mention strengths and, per query group, the strength
	// with which its word names the server; only the entries listed in
	// mentioned and namedSet are set.
	mention   []float32
	named     [][]float32
	namedBy   []uint64 // per server, the query groups naming it
	mentioned []int32
	namedSet  []namedAt
}

// docAcc is one document's accumulators, kept together so a posting
// touches one cache line.
type docAcc struct {
	acc      float32 // summed group scores
	best     uint32  // this group's best member score, as float32 bits
	nameAcc  float32 // summed name idf matched
	nameBest uint32  // this group's best member idf in the name, as float32 bits
	matched  uint64  // groups matched by the term itself or a synonym
	exact    uint64  // groups matched by the term itself
}

// maxStemMemo bounds a scratch's stem cache, which fills with the words of
// the queries it serves.
const maxStemMemo = 4096

// stems returns the scratch's stem cache for analyzeWith.
func (s *scratch) stems() map[string]string {
	if s.stemMemo == nil || len(s.stemMemo) > maxStemMemo {
		s.stemMemo = make(map[string]string, 256)
	}
	return s.stemMemo
}

var scratchPool sync.Pool

func getScratch() *scratch {
	s, _ := scratchPool.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	return s
}

// sizeDocs gives s accumulators for n documents, which only reading every
// posting needs (40 bytes a tool, so a query ranked block by block does
// not hold them).
func (s *scratch) sizeDocs(n int) {
	if len(s.docs) < n {
		s.docs = make([]docAcc, n)
	}
}

func putScratch(s *scratch) {
	for _, d := range s.touched {
		s.docs[d] = docAcc{}
	}
	s.touched = s.touched[:0]
	s.gTouched = s.gTouched[:0]
	for _, i := range s.mentioned {
		s.mention[i] = 0
	}
	for _, e := range s.namedSet {
		s.named[e.group][e.srv] = 0
		s.namedBy[e.srv] = 0
	}
	s.mentioned, s.namedSet = s.mentioned[:0], s.namedSet[:0]
	// Drop the references to the index, so a pooled scratch does not keep
	// a replaced index alive.
	s.rank = ranking{}
	clear(s.top.h[:cap(s.top.h)])
	clear(s.rgroups[:cap(s.rgroups)])
	clear(s.groups[:cap(s.groups)])
	scratchPool.Put(s)
}

// scored is a candidate hit.
type scored struct {
	seg     *segment
	doc     uint32
	matched uint64 // the query groups it matched, for explanations
	score   float64
}

func (ix *Index) keywordSearch(ctx context.Context, q string, req Request, v func(*catalog.Tool) bool) (Result, error) {
	return ix.rankKeywords(ctx, q, req, v, ix.prunable())
}

// rankKeywords ranks a keyword query, stopping early when prune is set
// (which needs a prunable index).
func (ix *Index) rankKeywords(ctx context.Context, q string, req Request, v func(*catalog.Tool) bool, prune bool) (Result, error) {
	s := getScratch()
	defer putScratch(s)
	pq, err := ix.parseKeywords(q, s)
	if err != nil {
		return Result{}, err
	}
	res := Result{Form: FormKeyword}
	if len(pq.groups) == 0 {
		res.NearestServers = ix.nearestServers(q)
		return res, nil
	}
	r := ix.newRanking(pq, req, v, s)
	var top *topK
	if prune {
		top, err = r.pruned(ctx, s, &res)
	} else {
		top, err = r.exhaustive(ctx, s, &res)
	}
	if err != nil {
		return Result{}, err
	}
	hits := top.sorted()
	// A tool whose score is 0 matched nothing that counts (a word of
	// weight 0, or only a word naming its server): it is not a hit.
	for len(hits) > 0 && !(hits[len(hits)-1].score > 0) {
		hits = hits[:len(hits)-1]
	}
	if req.MinScore > 0 {
		for i, h := range hits {
			if h.score < req.MinScore {
				hits = hits[:i]
				break
			}
		}
	}
	if len(hits) > 0 && ix.w.MinRelative > 0 {
		cut := hits[0].score * ix.w.MinRelative
		for i, h := range hits {
			if h.score < cut {
				hits = hits[:i]
				break
			}
		}
	}
	res.Hits = make([]Hit, 0, len(hits))
	for _, h := range hits {
		t := h.seg.docs[h.doc].tool
		hit := Hit{Tool: t, Score: h.score}
		if req.Explain {
			hit.Why = r.explain(h.seg, h.doc, h.matched)
			hit.Breakdown = r.breakdown(h.seg, h.doc, h.matched)
		}
		res.Hits = append(res.Hits, hit)
	}
	if len(res.Hits) == 0 {
		res.NearestServers = ix.nearestServers(q)
	}
	return res, nil
}

// ranking is one keyword query being ranked.
type ranking struct {
	ix     *Index
	model  scoreModel
	pq     parsedQuery
	req    Request
	v      func(*catalog.Tool) bool
	groups []rgroup // in the order they are read
	order  []int    // per query group, its place in groups
	// mentions is, per server, how clearly the query names it (nil when it
	// names none); byGroup, per query group, the servers its word names.
	mentions  []float32
	byGroup   [][]float32
	namedBy   []uint64  // per server, the query groups naming it (nil when none)
	mentioned []int32   // the servers with a mention
	gidf      []float64 // per query group, the idf of its own term
	// covOf is, for a query of at most covGroups groups, the summed idf
	// of every set of groups (bit i: group i), added in group order as
	// final would add them.
	covOf    []float64
	idfSum   float64
	filtered bool
	lists    int // the member lists of all groups
	// most is the largest factor any tool's summed group scores can be
	// multiplied by (scoreModel.scale).
	most float64
	// words are the query's groups other than action classes'.
	words uint64
	// learned is, per tool ID, the tool's learned share U for the query
	// (learn.go); nil when the query learns nothing.
	learned map[string]float64
}

// coverages fills cov (of 1<<len(idf) entries) with the summed idf of
// every set of groups, bit i standing for group i, each added lowest
// group first as final's loop adds them: a set's sum is its set without
// its highest group, plus that group. It returns cov.
func coverages(cov, idf []float64) []float64 {
	cov[0] = 0
	for m := 1; m < len(cov); m++ {
		hi := bits.Len(uint(m)) - 1
		cov[m] = cov[m&^(1<<hi)] + idf[hi]
	}
	return cov
}

// covGroups is the most groups a query may have for ranking to keep the
// coverage of every set of them.
const covGroups = 8

// rmember is one live member term of a query group.
type rmember struct {
	term string
	own  bool    // the group's own term, not a synonym
	w    float32 // weight × idf × (k1+1)
	fidf float32 // weight × idf, for name coverage
	l    *plist  // the postings, when the index is one segment
}

// rgroup is a query group prepared for ranking.
type rgroup struct {
	gi      int
	bit     uint64
	members []rmember
	ub      float32 // the largest score the group can give a tool
	nameUB  float32 // the largest name idf it can add
	idf     float64 // the idf of the group's own term, for coverage
	// merged is the merged list of all its members, when the index keeps
	// one for this word.
	merged *groupBlocks
	// first is the number of the group's first member among the query's
	// lists, which are numbered group after group in ranking order,
	// skipping the groups read through a merged list.
	first int
}

// repeatWeight is the weight of a term a long query has count times:
// 1 + repeatPower · ln count, a damped term frequency.
func repeatWeight(count int) float32 {
	return float32(1 + repeatPower*math.Log(float64(count)))
}

// repeatPower is how much a long query's repeated term gains per
// doubling of its count, in units of ln 2.
const repeatPower = 2

// scale multiplies the weights of g's members by x (their shares of name
// coverage stay as they are).
func (g *rgroup) scale(x float32) {
	ms := make([]rmember, len(g.members))
	for i, m := range g.members {
		m.w *= x
		ms[i] = m
	}
	g.members, g.ub, g.merged = ms, g.ub*x, nil
}

func (ix *Index) newRanking(pq parsedQuery, req Request, v func(*catalog.Tool) bool, s *scratch) *ranking {
	r := &s.rank
	*r = ranking{ix: ix, model: ix.model(len(pq.groups)), pq: pq, req: req, v: v, filtered: req.Visible != nil || len(req.Servers) > 0,
		groups: s.rgroups[:0], gidf: s.gidf[:0], order: s.order[:0]}
	defer func() { s.rgroups, s.gidf, s.order = r.groups, r.gidf, r.order }()
	if req.Learned != nil && ix.w.Learned > 0 {
		r.learn() // learn.go
	}
	r.mentions, r.byGroup, r.namedBy, r.mentioned = ix.serverMentions(pq, s)
	var required uint64
	for _, m := range pq.required {
		required |= m
	}
	for gi, g := range pq.groups {
		if !g.action {
			r.words |= 1 << gi
		}
		r.gidf = append(r.gidf, g.idf)
		r.idfSum += g.idf
		p := g.plan
		rg := rgroup{gi: gi, bit: 1 << gi, idf: g.idf, members: p.members, ub: p.ub, nameUB: p.nameUB, merged: p.merged}
		if long := ix.w.LongQuery; g.count > 1 && long > 0 && len(pq.groups) > long {
			// A long query's repeated term weighs more, as the query's
			// own words are all its evidence. Its members are weighed
			// anew, so it is read member by member.
			rg.scale(repeatWeight(g.count))
		}
		r.groups = append(r.groups, rg)
	}
	// Required words first (a tool unseen once one is read cannot qualify),
	// then the groups that can add the most. Every tool's sums are added in
	// this order whichever way the lists are read, so scores do not depend
	// on it.
	slices.SortStableFunc(r.groups, func(a, b rgroup) int {
		if ra, rb := a.bit&required != 0, b.bit&required != 0; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.ub, a.ub)
	})
	r.order = slices.Grow(r.order, len(r.groups))[:len(r.groups)]
	for i, g := range r.groups {
		r.order[g.gi] = i
		if g.merged == nil {
			// A merged list is read whole: its members need no bits.
			r.groups[i].first = r.lists
			r.lists += len(g.members)
		}
	}
	if len(r.gidf) <= covGroups {
		r.covOf = coverages(s.covOf[:1<<len(r.gidf)], r.gidf)
	}
	most := factors{coverage: 1, name: 1}
	for _, i := range r.mentioned {
		most.mention = max(most.mention, float64(r.mentions[i]))
	}
	r.most = r.model.scale(most, 1)
	return r
}

// read reads every posting of group g into the accumulators of s.
func (r *ranking) read(s *scratch, g *rgroup) {
	ix := r.ix
	named := r.byGroup[g.gi]
	for _, m := range g.members {
		for _, seg := range ix.segs {
			l := seg.post[m.term]
			if l == nil {
				continue
			}
			if len(g.members) == 1 {
				// One list: each tool's group score is its one
				// posting's, added at once.
				ix.addOnly(s, seg, l, g.bit, m.w, m.fidf, named, m.own)
				continue
			}
			base := uint32(seg.base)
			for _, p := range l.ps {
				if seg.deadDoc != nil && seg.deadDoc[p.doc()] {
					continue
				}
				da := &s.docs[base+p.doc()]
				c := m.w * p.sat
				// The server boost already counts a word that names
				// the tool's own server, as far as it names it.
				if named != nil {
					c *= 1 - named[seg.srv[p.doc()]]
				}
				if da.matched&g.bit == 0 {
					// First posting of this group for d.
					if da.matched == 0 {
						s.touched = append(s.touched, base+p.doc())
					}
					da.matched |= g.bit
					s.gTouched = append(s.gTouched, base+p.doc())
				}
				if c := math.Float32bits(c); c > da.best {
					da.best = c
				}
				if m.own {
					da.exact |= g.bit
				}
				if f := math.Float32bits(m.fidf); p.fields()&(1<<FieldName) != 0 && f > da.nameBest {
					da.nameBest = f
				}
			}
		}
	}
	for _, d := range s.gTouched {
		da := &s.docs[d]
		da.acc += math.Float32frombits(da.best)
		da.best = 0
		da.nameAcc += math.Float32frombits(da.nameBest)
		da.nameBest = 0
	}
	s.gTouched = s.gTouched[:0]
}

// exhaustive ranks by reading every posting of every group.
func (r *ranking) exhaustive(ctx context.Context, s *scratch, res *Result) (*topK, error) {
	s.sizeDocs(r.ix.total)
	for i := range r.groups {
		if i%8 == 7 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.read(s, &r.groups[i])
	}
	top := s.newTopK(r.req.MaxResults)
	for _, d := range s.touched {
		r.offer(top, &s.docs[d], d, r.most, res)
	}
	return top, nil
}

// offer scores document d from its accumulators and offers it to top,
// counting it in res.Total when it qualifies.
//
// most is the largest factor the tool's summed group scores can still be
// multiplied by, for skipping it cheaply.
func (r *ranking) offer(top *topK, da *docAcc, d uint32, most float64, res *Result) {
	ix := r.ix
	if !r.counts(da) || !r.pq.satisfied(da.exact) {
		return
	}
	score := float64(da.acc)
	if !r.filtered {
		res.Total++
		if top.full() && score*most < top.min() {
			return
		}
	}
	seg, i := ix.locate(d)
	if r.filtered {
		if !r.v(seg.docs[i].tool) {
			return
		}
		res.Total++
	}
	if top.full() {
		// Query coverage is at most 1 (and so is a hint's): skip a tool
		// that cannot enter the top k even with all of it.
		if r.model.upper(r.partial(da.acc, da.nameAcc, seg, i), r.leadBound(da.matched)) < top.min() {
			return
		}
		if r.model.hinted() && !r.mayEnter(da, seg, i, top.min()) {
			return
		}
	}
	top.offer(scored{seg: seg, doc: uint32(i), matched: da.matched, score: r.final(da.acc, da.nameAcc, da.matched, seg, i)})
}

// mayEnter reports whether document i of seg, with accumulators da, may
// score min or more in an index with hints. Its factors but hint coverage
// are cheap to work out, and its hint coverage is at most its coverage:
// a tool that cannot reach min even so is not worth looking up hint by
// hint, which costs more than the rest of its score.
//
// The coverage taken is the groups it matched in any field, which bounds
// its coverage by view and the hint coverage of each of its phrasings.
func (r *ranking) mayEnter(da *docAcc, seg *segment, i int, min float64) bool {
	f := r.factors(da.acc, da.nameAcc, da.matched, seg, i)
	s := r.model.final(f) * r.model.hintFactor(f.coverage) * r.model.leadFactor(r.lead(da.matched, seg, i))
	if r.learned != nil {
		s *= r.learnedFactor(seg, i)
	}
	return s*boundSlack >= min
}

// counts reports whether a tool with accumulators da matched the query:
// a positive sum (not only a word naming its server, or words of weight
// 0) from some group other than an action class's (which says how a word
// is meant, not what is asked for).
func (r *ranking) counts(da *docAcc) bool {
	return da.acc > 0 && da.matched&r.words != 0
}

// final is a tool's score (see score.go) from its summed group scores and
// name idf and the groups it matched. The tool is document i of seg.
func (r *ranking) final(acc, nameAcc float32, matched uint64, seg *segment, i int) float64 {
	if !r.model.hinted() && r.learned == nil {
		return r.model.final(r.factors(acc, nameAcc, matched, seg, i))
	}
	f, hint, lead := r.parts(acc, nameAcc, matched, seg, i)
	s := r.model.final(f)
	if r.model.hinted() {
		s *= r.model.hintFactor(hint) * r.model.leadFactor(lead)
	}
	if r.learned != nil {
		s *= r.learnedFactor(seg, i)
	}
	return s
}

// parts are the factors of final for document i of seg, whose summed group
// scores and name idf are acc and nameAcc and which matched the groups in
// matched: C, N and M, and H and L (0 in an index without written hints).
// For a tool with written hints, C is the mean of its two views' (see
// score.go).
func (r *ranking) parts(acc, nameAcc float32, matched uint64, seg *segment, i int) (f factors, hint, lead float64) {
	f = r.factors(acc, nameAcc, matched, seg, i)
	written := seg.docs[i].written && r.model.view > 0
	if written && r.idfSum > 0 {
		f.coverage = r.viewCoverage(matched, seg, i)
	}
	if !r.model.hinted() {
		return f, 0, 0
	}
	return f, r.hintShare(matched, seg, i), r.lead(matched, seg, i)
}

// viewCoverage is C of score.go for document i of seg, a tool with written
// hints, which matched the groups in matched: the share of the query's idf
// its definition covers, weighed 1 − HintView, plus the share its hint
// view covers, weighed HintView. A group counts for the definition when
// one of its members is in a field of the tool other than the hints, and
// for the hint view when one is in a field other than the description. A
// word naming the tool's server covers its part of the query in both.
func (r *ranking) viewCoverage(matched uint64, seg *segment, i int) float64 {
	var def, hint uint64
	if r.namedBy != nil {
		def = r.namedBy[seg.srv[i]]
		hint = def
	}
	const notHints, notDescription = ^uint8(1 << FieldHints), ^uint8(1 << FieldDescription)
	// An action class's group covers nothing (its idf is 0): only the
	// query's words are looked up.
	for m := matched & r.words &^ def; m != 0; m &= m - 1 {
		gi := bits.TrailingZeros64(m)
		var fields uint8
		for _, mem := range r.groups[r.order[gi]].members {
			l := mem.l
			if len(r.ix.segs) > 1 {
				l = seg.post[mem.term]
			}
			if l == nil {
				continue
			}
			if p, ok := l.find(uint32(i), seg.ranks); ok {
				fields |= p.fields()
			}
			if fields&notHints != 0 && fields&notDescription != 0 {
				break
			}
		}
		if fields&notHints != 0 {
			def |= 1 << gi
		}
		if fields&notDescription != 0 {
			hint |= 1 << gi
		}
	}
	v := r.model.view
	return ((1-v)*r.coverage(def) + v*r.coverage(hint)) / r.idfSum
}

// factors are the parts of the score of document i of seg, whose summed
// group scores and name idf are acc and nameAcc and which matched the
// groups in matched.
func (r *ranking) factors(acc, nameAcc float32, matched uint64, seg *segment, i int) factors {
	f := r.partial(acc, nameAcc, seg, i)
	if r.idfSum > 0 {
		// A word naming the tool's server covers its part of the query.
		if r.namedBy != nil {
			matched |= r.namedBy[seg.srv[i]]
		}
		f.coverage = r.coverage(matched) / r.idfSum
	}
	return f
}

// partial is factors with the coverage taken as full: the factors known
// before the groups a tool matched are looked at, which bound its score.
func (r *ranking) partial(acc, nameAcc float32, seg *segment, i int) factors {
	f := factors{sum: float64(acc), coverage: 1}
	if r.mentions != nil {
		f.mention = float64(r.mentions[seg.srv[i]])
	}
	if nidf := seg.nameIDF[i]; nidf > 0 {
		f.name = float64(nameAcc / nidf)
	}
	return f
}

// hintShare is H of score.go for document i of seg, which matched the
// groups in matched: the largest share of the query's idf one of its
// phrasings covers (its name, its summary or one of its written hints), a
// group counting for a phrasing when one of its members occurs in it. Each
// phrasing's idf is added group by group in query order, as coverage adds
// them, so it is never above the coverage of the groups the tool matched.
func (r *ranking) hintShare(matched uint64, seg *segment, i int) float64 {
	d := &seg.docs[i]
	hs := d.hints
	if r.model.hintCoverage == 0 || len(hs) == 0 || !(r.idfSum > 0) {
		return 0
	}
	starts, rest := hs[:d.leads], hs[d.leads:]
	var cov [64]float64 // per phrasing bit
	var seen uint64
	for m := matched & r.words; m != 0; m &= m - 1 {
		gi := bits.TrailingZeros64(m)
		var in uint64
		for _, mem := range r.groups[r.order[gi]].members {
			if j, ok := slices.BinarySearchFunc(starts, mem.term, compareHintTerm); ok {
				in |= starts[j].in
			} else if j, ok := slices.BinarySearchFunc(rest, mem.term, compareHintTerm); ok {
				in |= rest[j].in
			}
		}
		seen |= in
		for b := in; b != 0; b &= b - 1 {
			cov[bits.TrailingZeros64(b)] += r.gidf[gi]
		}
	}
	var best float64
	for b := seen; b != 0; b &= b - 1 {
		best = max(best, cov[bits.TrailingZeros64(b)])
	}
	return min(1, best/r.idfSum)
}

// leadBound bounds L of score.go for a tool, or the tools of a block, that
// matched the groups in matched: 1, or 0 when the query's first group is
// not among them (or is an action class's): only a term of the tool can
// start one of its phrasings.
func (r *ranking) leadBound(matched uint64) float64 {
	return float64(matched & r.words & 1)
}

// lead is L of score.go for document i of seg, which matched the groups in
// matched: the weight of the best member of the query's first group that
// is the first term of one of its phrasings (1 for the group's own term,
// Weights.Synonym for a synonym, at most 1), 0 when none is. Hints are
// written as requests, and a request mostly starts with what it wants done
// ("archive paid invoices", "which invoices did we archive"): a hint that
// starts as the query does asks for the same thing, where one that only
// has its words may ask something else about them. So does a name that
// starts with the query's first word (archive_invoices).
func (r *ranking) lead(matched uint64, seg *segment, i int) float64 {
	d := &seg.docs[i]
	hs := d.hints[:d.leads]
	if r.model.hintLead == 0 || len(hs) == 0 || r.leadBound(matched) == 0 {
		return 0
	}
	// A tool has a few phrasings and so a few terms that start one, and
	// the group may have many members: the terms are walked, not
	// searched.
	members := r.groups[r.order[0]].members
	var best float64
	for _, h := range hs {
		for _, mem := range members {
			if mem.term != h.term {
				continue
			}
			if mem.own {
				return 1
			}
			best = min(1, r.ix.w.Synonym)
		}
	}
	return best
}

// compareHintTerm orders a tool's hint terms by term, for searching them.
func compareHintTerm(h hintTerms, term string) int { return strings.Compare(h.term, term) }

// coverage is the summed idf of the groups in matched, each group added
// in query order.
func (r *ranking) coverage(matched uint64) float64 {
	if matched < uint64(len(r.covOf)) {
		return r.covOf[matched]
	}
	// Every group is visited, so that the loop runs as many times for
	// every tool of the query and its end is predicted; an unmatched
	// group adds zero, which leaves the sum as it is.
	var cov float64
	for gi, idf := range r.gidf {
		cov += idf * float64(matched>>gi&1)
	}
	return cov
}

// live reports whether member mi of a group, found in df tools, has
// postings to read: it is used by some tool, and a synonym is not too
// common.
func (ix *Index) live(mi int, df int32) bool {
	return df > 0 && (mi == 0 || ix.w.SynonymMaxDF <= 0 || float64(df) <= ix.w.SynonymMaxDF*float64(ix.n))
}

// addOnly reads the postings of a group that has a single list: a tool's
// group score is its one posting's, so it goes straight into the sums (the
// same sums, in the same order, as through the group's best).
func (ix *Index) addOnly(s *scratch, seg *segment, l *plist, bit uint64, w, fidf float32, named []float32, own bool) {
	base := uint32(seg.base)
	for _, p := range l.ps {
		if seg.deadDoc != nil && seg.deadDoc[p.doc()] {
			continue
		}
		da := &s.docs[base+p.doc()]
		c := w * p.sat
		if named != nil {
			c *= 1 - named[seg.srv[p.doc()]]
		}
		if da.matched == 0 {
			s.touched = append(s.touched, base+p.doc())
		}
		da.matched |= bit
		da.acc += c
		if own {
			da.exact |= bit
		}
		if p.fields()&(1<<FieldName) != 0 {
			da.nameAcc += fidf
		}
	}
}

// serverMentions measures how clearly the query names each server. A query
// term found in a server's key, title or package names that server with the
// probability that a tool containing the term belongs to it: 1 for a word
// only that server's tools use ("datadog"), little for a word that is also
// common elsewhere ("email"). A word in no server's name but concentrated in
// one server's tools names it more weakly (ImplicitMention). The strengths
// of a server add up, to at most 1. Both results are indexed by server
// number; byGroup gives, per query group, the servers its word names, and
// namedBy, per server, the query groups naming it (nil when none does).
// The arrays come from s and are cleared when s is put back; mentioned
// lists the servers with a mention.
func (ix *Index) serverMentions(pq parsedQuery, s *scratch) (mentions []float32, byGroup [][]float32, namedBy []uint64, mentioned []int32) {
	byGroup = slices.Grow(s.byGroup[:0], len(pq.groups))[:len(pq.groups)]
	clear(byGroup)
	s.byGroup = byGroup
	mentioned = s.mentioned[:0]
	n := int(ix.nextSrv)
	add := func(idx int32, p float64) {
		if mentions == nil {
			if len(s.mention) < n {
				s.mention = make([]float32, n)
			}
			mentions = s.mention[:n]
		}
		if mentions[idx] == 0 {
			mentioned = append(mentioned, idx)
		}
		mentions[idx] = float32(math.Min(1, float64(mentions[idx])+p))
	}
	for gi, g := range pq.groups {
		p := g.plan
		if g.action {
			continue
		}
		if p.implicit >= 0 {
			add(p.implicit, p.implicitP)
		}
		if len(p.named) == 0 {
			continue
		}
		for len(s.named) <= gi {
			s.named = append(s.named, nil)
		}
		if len(s.named[gi]) < n {
			s.named[gi] = make([]float32, n)
		}
		named := s.named[gi][:n]
		if len(s.namedBy) < n {
			s.namedBy = make([]uint64, n)
		}
		namedBy = s.namedBy[:n]
		for _, ns := range p.named {
			named[ns.idx] = float32(ns.p)
			if named[ns.idx] > 0 {
				namedBy[ns.idx] |= 1 << gi
			}
			s.namedSet = append(s.namedSet, namedAt{gi, ns.idx})
			add(ns.idx, ns.p)
		}
		byGroup[gi] = named
	}
	s.mentioned = mentioned
	return mentions, byGroup, namedBy, mentioned
}

// namedAt is an entry set in scratch.named.
type namedAt struct {
	group int
	srv   int32
}

// concentration returns the server with the most live documents containing
// term and their share of the term's documents, when there are at least
// three.
func (ix *Index) concentration(term string, df int32) (string, float64) {
	if ix.prunable() {
		// One segment: the list knows its top server.
		l := ix.segs[0].post[term]
		if l == nil || l.top.count < 3 {
			return "", 0
		}
		return ix.segs[0].server(l.top), float64(l.top.count) / float64(df)
	}
	counts := map[string]int32{}
	for _, seg := range ix.segs {
		if l := seg.post[term]; l != nil && l.top.count > 0 && !seg.dead[seg.server(l.top)] {
			counts[seg.server(l.top)] += l.top.count
		}
	}
	var best serverCount
	for srv, c := range counts {
		if c > best.count || (c == best.count && srv < best.server) {
			best = serverCount{srv, c}
		}
	}
	if best.count < 3 {
		return "", 0
	}
	return best.server, float64(best.count) / float64(df)
}

// satisfied reports whether a document matching the groups in exact meets
// every +required word.
func (pq *parsedQuery) satisfied(exact uint64) bool {
	for _, r := range pq.required {
		if exact&r != r {
			return false
		}
	}
	return true
}

// locate maps a global document number to its segment and index.
func (ix *Index) locate(d uint32) (*segment, int) {
	segs := ix.segs
	if len(segs) == 1 {
		return segs[0], int(d)
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > int(d) }) - 1
	return segs[i], int(d) - segs[i].base
}

// explain lists, per field, the query words that matched document doc of
// seg, which matched the groups in matched: for each of them, in query
// order, the first member found.
func (r *ranking) explain(seg *segment, doc uint32, matched uint64) string {
	// Per matched group, in query order: the member found and its fields.
	type found struct {
		g, m   uint8
		fields uint8
	}
	var arr [MaxTerms]found
	labels := arr[:0]
	var union uint8
	for m := matched; m != 0; m &= m - 1 {
		gi := bits.TrailingZeros64(m)
		for mi, mem := range r.groups[r.order[gi]].members {
			l := mem.l
			if len(r.ix.segs) > 1 {
				l = seg.post[mem.term]
			}
			if l == nil {
				continue
			}
			p, ok := l.find(doc, seg.ranks)
			if !ok {
				continue
			}
			labels = append(labels, found{uint8(gi), uint8(mi), p.fields()})
			union |= p.fields()
			break
		}
	}
	// label is the text for group g's member m: the query word, followed
	// by the synonym found when it is not the word's own term.
	label := func(f found) (string, string) {
		mem := r.groups[r.order[f.g]].members[f.m]
		if mem.own {
			return r.pq.groups[f.g].word, ""
		}
		return r.pq.groups[f.g].word, mem.term
	}
	var buf [256]byte
	b := buf[:0]
	for f := Field(0); f < numFields; f++ {
		bit := uint8(1) << f
		if union&bit == 0 {
			continue
		}
		first := true
	next:
		for i, l := range labels {
			if l.fields&bit == 0 {
				continue
			}
			word, term := label(l)
			for _, e := range labels[:i] {
				if e.fields&bit != 0 {
					if w, t := label(e); w == word && t == term {
						continue next
					}
				}
			}
			switch {
			case first && len(b) > 0:
				b = append(b, "; "...)
			case !first:
				b = append(b, ", "...)
			}
			if first {
				b = append(b, f.String()...)
				b = append(b, ": "...)
				first = false
			}
			b = append(b, word...)
			if term != "" {
				b = append(b, '~')
				b = append(b, term...)
			}
		}
	}
	return string(b)
}

// find returns doc's posting in l, if it has one, ranks being its
// segment's block ranks. A long list goes through its block entries to the
// block's postings.
func (l *plist) find(doc uint32, ranks []blockRank) (posting, bool) {
	from, to := l.blockRun(doc>>blockShift, ranks)
	ps := l.ps[from:to]
	j := searchPostings(ps, doc)
	if j < len(ps) && ps[j].doc() == doc {
		return ps[j], true
	}
	return posting{}, false
}

// topK keeps the k best candidates; ties go to the smaller tool ID so results
// are stable. h is a min-heap: the weakest candidate held is h[0].
type topK struct {
	k   int
	h   []scored
	arr [8]scored // backing for h when k is small
}

func newTopK(k int) *topK {
	t := &topK{k: k}
	t.h = t.arr[:0]
	return t
}

// newTopK is newTopK kept in s.
func (s *scratch) newTopK(k int) *topK {
	s.top = topK{k: k, h: s.top.h[:0]}
	if cap(s.top.h) == 0 {
		s.top.h = s.top.arr[:0]
	}
	return &s.top
}

// full reports whether k candidates are held.
func (t *topK) full() bool { return len(t.h) >= t.k }

// min is the score of the weakest candidate held.
func (t *topK) min() float64 { return t.h[0].score }

func (t *topK) offer(c scored) {
	h := t.h
	if len(h) < t.k {
		// Sift up.
		h = append(h, c)
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if !worse(h[0], c) {
		return
	}
	h[0] = c
	// Sift down.
	for i := 0; ; {
		m := i
		if l := 2*i + 1; l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if r := 2*i + 2; r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// worse reports whether a ranks below b.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return compareIDs(a.seg.docs[a.doc].tool, b.seg.docs[b.doc].tool) > 0
}

// compareIDs compares the IDs of two tools (server, separator, name) as
// strings, without building them.
func compareIDs(a, b *catalog.Tool) int {
	if a.Server == b.Server {
		return strings.Compare(a.Name, b.Name)
	}
	// Compare server+IDSeparator+name byte by byte.
	ida := [3]string{a.Server, catalog.IDSeparator, a.Name}
	idb := [3]string{b.Server, catalog.IDSeparator, b.Name}
	var i, j, pi, pj int
	for {
		for i < 3 && pi == len(ida[i]) {
			i, pi = i+1, 0
		}
		for j < 3 && pj == len(idb[j]) {
			j, pj = j+1, 0
		}
		switch {
		case i == 3 && j == 3:
			return 0
		case i == 3:
			return -1
		case j == 3:
			return 1
		}
		if ca, cb := ida[i][pi], idb[j][pj]; ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		pi++
		pj++
	}
}

// sorted returns the candidates best first. It sorts them in place, so
// nothing may be offered after it.
func (t *topK) sorted() []scored {
	out := t.h
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}
