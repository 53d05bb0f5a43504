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
	touched  []uint32 // docs with a group matched
	gTouched []uint32 // docs the current group matched
}

// docAcc is one document's accumulators, kept together so a posting
// touches one cache line.
type docAcc struct {
	acc      float32 // summed group scores
	best     float32 // this group's best member score
	nameAcc  float32 // summed name idf matched
	nameBest float32 // this group's best member idf in the name
	matched  uint64  // groups matched by the term itself or a synonym
	exact    uint64  // groups matched by the term itself
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
	s.gTouched = s.gTouched[:0]
	scratchPool.Put(s)
}

// scored is a candidate hit.
type scored struct {
	seg   *segment
	doc   uint32
	score float64
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
	s := getScratch(ix.total)
	defer putScratch(s)
	k1 := ix.w.K1
	mentions, byGroup := ix.serverMentions(pq)
	for gi, g := range pq.groups {
		if gi%8 == 7 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		bit := uint64(1) << gi
		live := 0
		for mi, m := range g.members {
			if ix.liveMember(mi, m.term) {
				live++
			}
		}
		for mi, m := range g.members {
			if !ix.liveMember(mi, m.term) {
				continue
			}
			df := ix.df[m.term]
			idf := m.weight * ix.idf(df)
			w := float32(idf * (k1 + 1))
			for _, seg := range ix.segs {
				l := seg.post[m.term]
				if l == nil {
					continue
				}
				base := uint32(seg.base)
				named := byGroup[gi]
				own := mi == 0
				kf := float32(k1)
				fidf := float32(idf)
				if live == 1 {
					// One list: each tool's group score is its one
					// posting's, added at once.
					ix.addOnly(s, seg, l, bit, w, kf, fidf, named, own)
					continue
				}
				for _, p := range l.ps {
					if seg.deadDoc != nil && seg.deadDoc[p.doc] {
						continue
					}
					da := &s.docs[base+p.doc]
					c := w * p.wtf / (p.wtf + kf)
					// The server boost already counts a word that names
					// the tool's own server, as far as it names it.
					if named != nil {
						c *= 1 - named[seg.srv[p.doc]]
					}
					if da.matched&bit == 0 {
						// First posting of this group for d.
						if da.matched == 0 {
							s.touched = append(s.touched, base+p.doc)
						}
						da.matched |= bit
						s.gTouched = append(s.gTouched, base+p.doc)
					}
					if c > da.best {
						da.best = c
					}
					if own {
						da.exact |= bit
					}
					if p.fields&(1<<FieldName) != 0 && fidf > da.nameBest {
						da.nameBest = fidf
					}
				}
			}
		}
		for _, d := range s.gTouched {
			da := &s.docs[d]
			da.acc += da.best
			da.best = 0
			da.nameAcc += da.nameBest
			da.nameBest = 0
		}
		s.gTouched = s.gTouched[:0]
	}
	var idfSum float64
	for _, g := range pq.groups {
		idfSum += g.idf
	}
	top := &topK{k: req.MaxResults}
	filtered := req.Visible != nil || len(req.Servers) > 0
	// The largest factor any tool's score can get, for skipping the tools
	// that cannot enter the top k before reading their documents.
	most := 1 + ix.w.NameCoverage
	if mentions != nil {
		most *= 1 + ix.w.ServerMention*float64(slices.Max(mentions))
	}
	for _, d := range s.touched {
		if !pq.satisfied(s.docs[d].exact) {
			continue
		}
		score := float64(s.docs[d].acc)
		if !filtered {
			res.Total++
			if top.full() && score*most < top.min() {
				continue
			}
		}
		seg, i := ix.locate(d)
		dc := &seg.docs[i]
		if filtered {
			if !v(dc.tool) {
				continue
			}
			res.Total++
		}
		var mention float64
		if mentions != nil {
			mention = float64(mentions[dc.srv])
		}
		// Coverage factors are at most 1 and name coverage at most
		// 1+NameCoverage: skip a tool that cannot enter the top k.
		if top.full() && score*(1+ix.w.NameCoverage)*(1+ix.w.ServerMention*mention) < top.min() {
			continue
		}
		// Coverage of the query, each group weighted by its idf. A word
		// naming the tool's server covers its part.
		matched := s.docs[d].matched
		for gi, named := range byGroup {
			if named != nil && named[dc.srv] > 0 {
				matched |= 1 << gi
			}
		}
		var cov float64
		for m := matched; m != 0; m &= m - 1 {
			cov += pq.groups[bits.TrailingZeros64(m)].idf
		}
		if idfSum > 0 && ix.w.Coordination > 0 {
			if ix.w.Coordination == 1 {
				score *= cov / idfSum
			} else {
				score *= math.Pow(cov/idfSum, ix.w.Coordination)
			}
		}
		// Coverage of the tool's name.
		if dc.nameIDF > 0 {
			nc := math.Min(1, float64(s.docs[d].nameAcc/dc.nameIDF))
			score *= 1 + ix.w.NameCoverage*nc
		}
		score *= 1 + ix.w.ServerMention*mention
		top.offer(scored{seg: seg, doc: uint32(i), score: score})
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

// liveMember reports whether member mi of a group, term, has postings to
// read: it is used by some tool, and a synonym is not too common.
func (ix *Index) liveMember(mi int, term string) bool {
	df := ix.df[term]
	return df > 0 && (mi == 0 || ix.w.SynonymMaxDF <= 0 || float64(df) <= ix.w.SynonymMaxDF*float64(ix.n))
}

// addOnly reads the postings of a group that has a single list: a tool's
// group score is its one posting's, so it goes straight into the sums (the
// same sums, in the same order, as through the group's best).
func (ix *Index) addOnly(s *scratch, seg *segment, l *plist, bit uint64, w, kf, fidf float32, named []float32, own bool) {
	base := uint32(seg.base)
	for _, p := range l.ps {
		if seg.deadDoc != nil && seg.deadDoc[p.doc] {
			continue
		}
		da := &s.docs[base+p.doc]
		c := w * p.wtf / (p.wtf + kf)
		if named != nil {
			c *= 1 - named[seg.srv[p.doc]]
		}
		if da.matched == 0 {
			s.touched = append(s.touched, base+p.doc)
		}
		da.matched |= bit
		da.acc += c
		if own {
			da.exact |= bit
		}
		if p.fields&(1<<FieldName) != 0 {
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
