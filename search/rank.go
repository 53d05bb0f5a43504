package search

import (
	"container/heap"
	"context"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/catalog"
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

// member is one term of a group.
type member struct {
	term   string
	weight float64
}

// group is one query term with its synonyms.
type group struct {
	word    string // the query word it came from, for explanations
	members []member
	idf     float64 // idf of the term itself, for coverage
	joined  bool
}

// parsedQuery is a keyword query analysed into groups.
type parsedQuery struct {
	groups   []group
	required []uint64 // each entry: the groups of one +word, all needed
}

func (ix *Index) parseKeywords(q string) (parsedQuery, error) {
	var pq parsedQuery
	index := map[string]int{}
	var buf []token
	for _, raw := range strings.Fields(q) {
		req := false
		if len(raw) > 1 && raw[0] == '+' {
			req, raw = true, raw[1:]
		}
		buf = analyze(raw, buf[:0])
		if req && len(buf) == 0 {
			// A required stop word ("+on") is kept as it is.
			buf = append(buf, token{term: strings.ToLower(raw)})
		}
		var mask, joinedMask uint64
		for _, tk := range buf {
			gi, ok := index[tk.term]
			if !ok {
				if len(pq.groups) == MaxTerms {
					return pq, badQuery("the query has more than %d distinct terms", MaxTerms)
				}
				gi = len(pq.groups)
				index[tk.term] = gi
				g := group{word: raw, joined: tk.joined, members: []member{{tk.term, 1}}}
				if !tk.joined {
					for _, s := range synonyms[tk.term] {
						g.members = append(g.members, member{s, ix.w.Synonym})
					}
				}
				pq.groups = append(pq.groups, g)
			}
			if tk.joined {
				joinedMask |= 1 << gi
			} else {
				mask |= 1 << gi
			}
		}
		if req {
			if mask == 0 {
				mask = joinedMask
			}
			pq.required = append(pq.required, mask)
		}
	}
	for i := range pq.groups {
		pq.groups[i].idf = ix.idf(ix.df[pq.groups[i].members[0].term])
	}
	return pq, nil
}

// scratch holds a query's per-document accumulators.
type scratch struct {
	docs     []docAcc
	touched  []uint32    // docs with a group matched, in the order first seen
	fresh    []uint32    // docs the current posting list matched
	bests    []groupBest // per touched doc, one entry per query group
	selected []uint32
}

// docAcc is one document's accumulators, kept together so a posting
// touches one cache line.
type docAcc struct {
	acc     float32 // summed group bests, in the order they arrived
	nameAcc float32 // summed name idf matched, likewise
	cov     float32 // summed idf of the groups matched
	slot    int32   // 1 + the document's index in scratch.bests, by groups
	matched uint64  // groups matched by the term itself or a synonym
	exact   uint64  // groups matched by the term itself
}

// groupBest is a document's best member score in one group, and the best
// idf of a member found in its name.
type groupBest struct {
	best, name float32
}

var scratchPool sync.Pool

func getScratch(n int) *scratch {
	s, _ := scratchPool.Get().(*scratch)
	if s == nil || len(s.docs) < n {
		s = &scratch{docs: make([]docAcc, n)}
	}
	return s
}

func putScratch(s *scratch) {
	for _, d := range s.touched {
		s.docs[d] = docAcc{}
	}
	s.touched = s.touched[:0]
	s.fresh = s.fresh[:0]
	s.bests = s.bests[:0]
	s.selected = s.selected[:0]
	scratchPool.Put(s)
}

// scored is a candidate hit.
type scored struct {
	seg   *segment
	doc   uint32
	score float64
}

// Ranking reads the posting lists of the query's terms and synonyms from
// the one that can add the most to a score to the one that can add the
// least. Once no tool unseen so far could enter the top results (a bound
// from the remaining lists' largest contributions and query coverage), the
// remaining lists are only looked up for the tools already seen that could
// still make it, instead of being read whole: the common words of a query,
// and most synonyms, are never read in full. Scores are the same as when
// every list is read (the tests compare both); only Result.Total becomes a
// lower bound.

// unit is one member term of a query group and its posting lists.
type unit struct {
	g     int     // the group
	own   bool    // the group's own term, not a synonym
	idf   float32 // the member's idf times its weight
	w     float32 // idf × (k1+1)
	ub    float32 // the most it adds to a group's best score
	lists []segList
}

// segList is one segment's postings of a term.
type segList struct {
	seg *segment
	l   *plist
}

// boundSlack widens every bound a little, so float rounding can never
// drop a tool that reading everything would have kept.
const boundSlack = 1.001

// units lists the member terms of the query with their postings, best
// bound first.
func (ix *Index) units(pq parsedQuery) []unit {
	k1 := float32(ix.w.K1)
	var us []unit
	for gi, g := range pq.groups {
		for mi, m := range g.members {
			df := ix.df[m.term]
			if df == 0 || (mi > 0 && ix.w.SynonymMaxDF > 0 && float64(df) > ix.w.SynonymMaxDF*float64(ix.n)) {
				continue
			}
			idf := m.weight * ix.idf(df)
			u := unit{g: gi, own: mi == 0, idf: float32(idf), w: float32(idf * (ix.w.K1 + 1))}
			var most float32
			for _, seg := range ix.segs {
				if l := seg.post[m.term]; l != nil {
					u.lists = append(u.lists, segList{seg, l})
					most = max(most, l.max)
				}
			}
			if len(u.lists) == 0 {
				continue
			}
			u.ub = u.w * most / (most + k1)
			us = append(us, u)
		}
	}
	sort.SliceStable(us, func(i, j int) bool { return us[i].ub > us[j].ub })
	return us
}

// rankState is what one keyword query needs while it ranks.
type rankState struct {
	ix       *Index
	pq       parsedQuery
	s        *scratch
	ng       int // groups
	mentions []float32
	byGroup  [][]float32
	// namedMask is, per server, the groups naming it.
	namedMask []uint64
	idfSum    float64
	k1        float32
}

// touch returns d's accumulators and its group bests, making room for
// them the first time.
func (r *rankState) touch(d uint32) (*docAcc, []groupBest) {
	s := r.s
	da := &s.docs[d]
	if da.slot == 0 {
		n := len(s.bests)
		s.bests = slices.Grow(s.bests, r.ng)[:n+r.ng]
		clear(s.bests[n:])
		da.slot = int32(n/r.ng) + 1
		s.touched = append(s.touched, d)
	}
	i := int(da.slot-1) * r.ng
	return da, s.bests[i : i+r.ng : i+r.ng]
}

// add counts one posting of unit u for document d of seg.
func (r *rankState) add(u *unit, seg *segment, d uint32, p posting, gidf float32) {
	da, gb := r.touch(d)
	c := u.w * p.wtf / (p.wtf + r.k1)
	// The server boost already counts a word that names the tool's own
	// server, as far as it names it.
	if named := r.byGroup[u.g]; named != nil {
		c *= 1 - named[seg.docs[p.doc].srv]
	}
	b := &gb[u.g]
	if c > b.best {
		da.acc += c - b.best
		b.best = c
	}
	bit := uint64(1) << u.g
	if da.matched&bit == 0 {
		da.matched |= bit
		da.cov += gidf
	}
	if u.own {
		da.exact |= bit
	}
	if p.fields&(1<<FieldName) != 0 && u.idf > b.name {
		da.nameAcc += u.idf - b.name
		b.name = u.idf
	}
}

// scan reads a unit's postings whole, adding every tool they name and
// remembering them in s.fresh.
func (r *rankState) scan(u *unit) {
	gidf := float32(r.pq.groups[u.g].idf)
	for _, sl := range u.lists {
		seg, base := sl.seg, uint32(sl.seg.base)
		for _, p := range sl.l.ps {
			if seg.deadDoc != nil && seg.deadDoc[p.doc] {
				continue
			}
			r.add(u, seg, base+p.doc, p, gidf)
			r.s.fresh = append(r.s.fresh, base+p.doc)
		}
	}
}

// probe looks a unit's postings up for the candidates only (sorted by
// document number).
func (r *rankState) probe(u *unit, cands []uint32) {
	gidf := float32(r.pq.groups[u.g].idf)
	for _, sl := range u.lists {
		seg, base := sl.seg, uint32(sl.seg.base)
		end := base + uint32(len(seg.docs))
		ps := sl.l.ps
		lo, _ := slices.BinarySearch(cands, base)
		for _, d := range cands[lo:] {
			if d >= end || len(ps) == 0 {
				break
			}
			ps = ps[gallop(ps, d-base):]
			if len(ps) == 0 || ps[0].doc != d-base {
				continue
			}
			r.add(u, seg, d, ps[0], gidf)
		}
	}
}

// gallop returns the first index of ps whose document is at least doc.
func gallop(ps []posting, doc uint32) int {
	if len(ps) == 0 || ps[0].doc >= doc {
		return 0
	}
	hi := 1
	for hi < len(ps) && ps[hi].doc < doc {
		hi *= 2
	}
	lo := hi / 2
	hi = min(hi, len(ps))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ps[m].doc < doc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// exact is a tool's final score, once every list has been read for it:
// its group bests summed in query order, scaled by query coverage, name
// coverage and server mention.
func (r *rankState) exact(da *docAcc, dc *doc) float64 {
	var acc, nameAcc float32
	i := int(da.slot-1) * r.ng
	for _, b := range r.s.bests[i : i+r.ng] {
		acc += b.best
		nameAcc += b.name
	}
	return r.finish(float64(acc), nameAcc, da.matched, dc)
}

// lower is a lower bound of a tool's final score from what has been read:
// every factor only grows as more lists match.
func (r *rankState) lower(da *docAcc, dc *doc) float64 {
	return r.finish(float64(da.acc), da.nameAcc, da.matched, dc) / boundSlack
}

func (r *rankState) finish(score float64, nameAcc float32, matched uint64, dc *doc) float64 {
	w := &r.ix.w
	var mention float64
	if r.mentions != nil {
		mention = float64(r.mentions[dc.srv])
	}
	// Coverage of the query, each group weighted by its idf. A word
	// naming the tool's server covers its part.
	for gi, named := range r.byGroup {
		if named != nil && named[dc.srv] > 0 {
			matched |= 1 << gi
		}
	}
	var cov float64
	for m := matched; m != 0; m &= m - 1 {
		cov += r.pq.groups[bits.TrailingZeros64(m)].idf
	}
	if r.idfSum > 0 && w.Coordination > 0 {
		score *= coordination(cov/r.idfSum, w.Coordination)
	}
	// Coverage of the tool's name.
	if dc.nameIDF > 0 {
		nc := math.Min(1, float64(nameAcc/dc.nameIDF))
		score *= 1 + w.NameCoverage*nc
	}
	return score * (1 + w.ServerMention*mention)
}

// upper bounds the final score of a tool seen so far, given what the lists
// from some point of the order on can still add to it.
func (r *rankState) upper(da *docAcc, dc *doc, rest *remaining) float64 {
	w := &r.ix.w
	var acc, name float64
	i := int(da.slot-1) * r.ng
	for g, b := range r.s.bests[i : i+r.ng] {
		acc += float64(max(b.best, rest.ub[g]))
		name += float64(max(b.name, rest.name[g]))
	}
	score := acc
	if r.idfSum > 0 && w.Coordination > 0 {
		matched := da.matched | rest.groups
		if r.namedMask != nil {
			matched |= r.namedMask[dc.srv]
		}
		var cov float64
		for m := matched; m != 0; m &= m - 1 {
			cov += r.pq.groups[bits.TrailingZeros64(m)].idf
		}
		score *= coordination(min(1, cov/r.idfSum), w.Coordination)
	}
	if dc.nameIDF > 0 {
		score *= 1 + w.NameCoverage*min(1, name/float64(dc.nameIDF))
	}
	if r.mentions != nil {
		score *= 1 + w.ServerMention*float64(r.mentions[dc.srv])
	}
	return score * boundSlack
}

func coordination(share, exp float64) float64 {
	if exp == 1 {
		return share
	}
	return math.Pow(share, exp)
}

// remaining is what the lists from some point of the order on can add to
// a tool: per group its largest contribution and largest name idf, and in
// all their sums and the idf of the groups with a list left.
type remaining struct {
	ub, name []float32 // per group
	acc, cov float64
	groups   uint64 // groups with a list left
}

// remainders computes, for each position i of the order, what the units
// from i on can add.
func remainders(us []unit, pq parsedQuery) []remaining {
	ng := len(pq.groups)
	rest := make([]remaining, len(us)+1)
	flat := make([]float32, 2*ng*(len(us)+1))
	for i := range rest {
		rest[i].ub = flat[2*ng*i : 2*ng*i+ng : 2*ng*i+ng]
		rest[i].name = flat[2*ng*i+ng : 2*ng*(i+1) : 2*ng*(i+1)]
	}
	for i := len(us) - 1; i >= 0; i-- {
		u := &us[i]
		copy(rest[i].ub, rest[i+1].ub)
		copy(rest[i].name, rest[i+1].name)
		rest[i].ub[u.g] = max(rest[i].ub[u.g], u.ub)
		rest[i].name[u.g] = max(rest[i].name[u.g], u.idf)
		rest[i].groups = rest[i+1].groups | 1<<u.g
		for _, x := range rest[i].ub {
			rest[i].acc += float64(x)
		}
		for m := rest[i].groups; m != 0; m &= m - 1 {
			rest[i].cov += pq.groups[bits.TrailingZeros64(m)].idf
		}
	}
	return rest
}

// boundTop keeps the k best lower bounds of distinct tools.
type boundTop struct {
	k      int
	docs   []uint32
	scores []float64
	least  float64 // the smallest score held once k are held
}

func (t *boundTop) offer(d uint32, score float64, visible func() bool) {
	if len(t.docs) == t.k && score <= t.least {
		return
	}
	for i, x := range t.docs {
		if x == d {
			t.scores[i] = max(t.scores[i], score)
			t.least = slices.Min(t.scores)
			return
		}
	}
	if !visible() {
		return
	}
	if len(t.docs) < t.k {
		t.docs = append(t.docs, d)
		t.scores = append(t.scores, score)
		t.least = slices.Min(t.scores)
		return
	}
	i := slices.Index(t.scores, t.least)
	t.docs[i], t.scores[i] = d, score
	t.least = slices.Min(t.scores)
}

// threshold is the score a tool must beat to enter the top k, or -1 while
// fewer than k tools are known.
func (t *boundTop) threshold() float64 {
	if len(t.docs) < t.k {
		return -1
	}
	return t.least
}

func (ix *Index) keywordSearch(ctx context.Context, q string, req Request, v func(*catalog.Tool) bool) (Result, error) {
	pq, err := ix.parseKeywords(q)
	if err != nil {
		return Result{}, err
	}
	res := Result{Form: FormKeyword}
	if len(pq.groups) == 0 {
		res.NearestServers = ix.nearestServers(q)
		return res, nil
	}
	if req.Visible == nil && len(req.Servers) == 0 {
		v = nil
	}
	s := getScratch(ix.total)
	defer putScratch(s)
	r := &rankState{ix: ix, pq: pq, s: s, ng: len(pq.groups), k1: float32(ix.w.K1)}
	r.mentions, r.byGroup = ix.serverMentions(pq)
	for gi, g := range pq.groups {
		r.idfSum += g.idf
		if named := r.byGroup[gi]; named != nil {
			if r.namedMask == nil {
				r.namedMask = make([]uint64, len(named))
			}
			for srv, p := range named {
				if p > 0 {
					r.namedMask[srv] |= 1 << gi
				}
			}
		}
	}
	us := ix.units(pq)
	rest := remainders(us, pq)
	// Servers the query names: once the own term of a group naming one is
	// read, every tool of that server has been seen.
	var mentioned []int32
	var mostMention float64
	for srv, m := range r.mentions {
		if m > 0 {
			mentioned = append(mentioned, int32(srv))
			mostMention = max(mostMention, float64(m))
		}
	}
	seenSrv := map[int32]bool{}
	lb := &boundTop{k: req.MaxResults}
	// A tool whose summed score is at most cheap cannot beat the threshold.
	cheap := func(da *docAcc) float64 {
		return float64(da.acc) * (1 + ix.w.NameCoverage) * (1 + ix.w.ServerMention*mostMention) * boundSlack
	}
	read := len(us)
	for i := range us {
		if i%8 == 7 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		u := &us[i]
		r.scan(u)
		if ix.noPrune {
			s.fresh = s.fresh[:0]
			continue
		}
		theta := lb.threshold()
		for _, d := range s.fresh {
			da := &s.docs[d]
			if cheap(da) <= theta || !pq.satisfied(da.exact) {
				continue
			}
			seg, j := ix.locate(d)
			dc := &seg.docs[j]
			lb.offer(d, r.lower(da, dc), func() bool { return v == nil || v(dc.tool) })
		}
		s.fresh = s.fresh[:0]
		if named := r.byGroup[u.g]; named != nil && u.own {
			for _, srv := range mentioned {
				if named[srv] > 0 {
					seenSrv[srv] = true
				}
			}
		}
		if theta = lb.threshold(); theta < 0 || i == len(us)-1 {
			continue
		}
		// The best score a tool no list has matched so far could reach.
		var most float64
		for _, srv := range mentioned {
			if !seenSrv[srv] {
				most = max(most, float64(r.mentions[srv]))
			}
		}
		unseen := rest[i+1].acc * (1 + ix.w.NameCoverage) * (1 + ix.w.ServerMention*most) * boundSlack
		if r.idfSum > 0 && ix.w.Coordination > 0 {
			unseen *= coordination(math.Min(1, rest[i+1].cov/r.idfSum), ix.w.Coordination)
		}
		if unseen < theta {
			read = i + 1
			break
		}
	}
	cands := s.touched
	if read < len(us) {
		cands = s.selected[:0]
		for _, d := range s.touched {
			if r.hopeful(d, lb.threshold(), &rest[read]) {
				cands = append(cands, d)
			}
		}
		slices.Sort(cands)
		pruned := rest[read].acc
		for i := read; i < len(us); i++ {
			r.probe(&us[i], cands)
			// Drop the candidates that can no longer make it, once what
			// is left to read has shrunk enough to be worth the check.
			if next := rest[i+1].acc; next < 0.75*pruned && i+1 < len(us) {
				pruned = next
				theta := lb.threshold()
				kept := cands[:0]
				for _, d := range cands {
					if r.hopeful(d, theta, &rest[i+1]) {
						kept = append(kept, d)
					}
				}
				cands = kept
			}
		}
		s.selected = cands
	}
	top := &topK{k: req.MaxResults}
	for _, d := range cands {
		da := &s.docs[d]
		if !pq.satisfied(da.exact) {
			continue
		}
		seg, i := ix.locate(d)
		dc := &seg.docs[i]
		if v != nil && !v(dc.tool) {
			continue
		}
		res.Total++
		top.offer(scored{seg: seg, doc: uint32(i), score: r.exact(da, dc)})
	}
	hits := top.sorted()
	if len(hits) > 0 && ix.w.MinRelative > 0 {
		cut := hits[0].score * ix.w.MinRelative
		for i, h := range hits {
			if h.score < cut {
				hits = hits[:i]
				break
			}
		}
	}
	for _, h := range hits {
		t := h.seg.docs[h.doc].tool
		res.Hits = append(res.Hits, Hit{Tool: t, Score: h.score, Why: ix.explain(h.seg, h.doc, pq)})
	}
	if len(res.Hits) == 0 {
		res.NearestServers = ix.nearestServers(q)
	}
	return res, nil
}

// hopeful reports whether a tool seen so far can still enter the top k
// above theta, and meet every +required word, once the rest is read.
func (r *rankState) hopeful(d uint32, theta float64, rest *remaining) bool {
	da := &r.s.docs[d]
	for _, req := range r.pq.required {
		if (da.exact|rest.groups)&req != req {
			return false
		}
	}
	seg, i := r.ix.locate(d)
	dc := &seg.docs[i]
	// A quick bound first: most tools seen matched a common word or two.
	w := &r.ix.w
	quick := (float64(da.acc) + rest.acc) * (1 + w.NameCoverage) * boundSlack
	if r.mentions != nil {
		quick *= 1 + w.ServerMention*float64(r.mentions[dc.srv])
	}
	if r.idfSum > 0 && w.Coordination > 0 && r.namedMask == nil {
		quick *= coordination(min(1, (float64(da.cov)+rest.cov)/r.idfSum), w.Coordination)
	}
	if quick < theta {
		return false
	}
	return r.upper(da, dc, rest) >= theta
}

// serverMentions measures how clearly the query names each server. A query
// term found in a server's key, title or package names that server with the
// probability that a tool containing the term belongs to it: 1 for a word
// only that server's tools use ("datadog"), little for a word that is also
// common elsewhere ("email"). A word in no server's name but concentrated in
// one server's tools names it more weakly (ImplicitMention). The strengths
// of a server add up, to at most 1. Both results are indexed by server
// number; byGroup gives, per query group, the servers its word names.
func (ix *Index) serverMentions(pq parsedQuery) (mentions []float32, byGroup [][]float32) {
	byGroup = make([][]float32, len(pq.groups))
	add := func(idx int32, p float64) {
		if mentions == nil {
			mentions = make([]float32, ix.nextSrv)
		}
		mentions[idx] = float32(math.Min(1, float64(mentions[idx])+p))
	}
	for gi, g := range pq.groups {
		term := g.members[0].term
		keys := ix.serverTerms[term]
		df := ix.df[term]
		if df == 0 {
			continue
		}
		if len(keys) == 0 {
			if ix.w.ImplicitMention > 0 {
				if srv, p := ix.concentration(term, df); p >= 0.5 {
					add(ix.servers[srv].idx, ix.w.ImplicitMention*p)
				}
			}
			continue
		}
		named := make([]float32, ix.nextSrv)
		for _, k := range keys {
			info := ix.servers[k]
			p := math.Min(1, float64(len(info.srv.Tools))/float64(df))
			named[info.idx] = float32(p)
			add(info.idx, p)
		}
		byGroup[gi] = named
	}
	return mentions, byGroup
}

// concentration returns the server with the most live documents containing
// term and their share of the term's documents, when there are at least
// three.
func (ix *Index) concentration(term string, df int32) (string, float64) {
	counts := map[string]int32{}
	for _, seg := range ix.segs {
		if l := seg.post[term]; l != nil && !seg.dead[l.top.server] {
			counts[l.top.server] += l.top.count
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

// explain lists, per field, the query words that matched a document.
func (ix *Index) explain(seg *segment, doc uint32, pq parsedQuery) string {
	var perField [numFields][]string
	for _, g := range pq.groups {
		for mi, m := range g.members {
			l := seg.post[m.term]
			if l == nil {
				continue
			}
			p, ok := findPosting(l.ps, doc)
			if !ok {
				continue
			}
			label := g.word
			if mi > 0 {
				label = g.word + "~" + m.term
			}
			for f := Field(0); f < numFields; f++ {
				if p.fields&(1<<f) != 0 {
					perField[f] = appendUnique(perField[f], label)
				}
			}
			break
		}
	}
	var b strings.Builder
	for f, ws := range perField {
		if len(ws) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(Field(f).String())
		b.WriteString(": ")
		b.WriteString(strings.Join(ws, ", "))
	}
	return b.String()
}

func findPosting(ps []posting, doc uint32) (posting, bool) {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= doc })
	if i < len(ps) && ps[i].doc == doc {
		return ps[i], true
	}
	return posting{}, false
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// topK keeps the k best candidates; ties go to the smaller tool ID so results
// are stable.
type topK struct {
	k int
	h candHeap
}

type candHeap []scored

func (h candHeap) Len() int           { return len(h) }
func (h candHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h candHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *candHeap) Pop() any          { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// full reports whether k candidates are held.
func (t *topK) full() bool { return len(t.h) >= t.k }

// min is the score of the weakest candidate held.
func (t *topK) min() float64 { return t.h[0].score }

func (t *topK) offer(c scored) {
	if len(t.h) < t.k {
		heap.Push(&t.h, c)
		return
	}
	if worse(t.h[0], c) {
		t.h[0] = c
		heap.Fix(&t.h, 0)
	}
}

// worse reports whether a ranks below b.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.seg.docs[a.doc].tool.ID() > b.seg.docs[b.doc].tool.ID()
}

func (t *topK) sorted() []scored {
	out := append([]scored(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out
}
