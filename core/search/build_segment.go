package search

import (
	"runtime"
	"slices"
	"strings"
	"sync"
)

// minParallelDocs is the fewest documents worth spreading the layout of a
// segment's postings over several goroutines.
const minParallelDocs = 2048

// newSegment turns analysed documents into postings, normalising with the
// index's current average field lengths. The documents' terms are numbered
// in terms; numbers no document uses are skipped. Each term's number of
// postings is added to df.
//
// The documents are cut into ranges, one per goroutine. Each range counts
// its postings of every term, so that it knows where in each list its
// postings go, then writes them: every list ends up in document order, as
// if written by one loop.
//
// With blocks set, the lists get their block maxima and name postings as
// indexBlocks gives them, in the same pass over each list that finds its
// largest sat.
func (ix *Index) newSegment(docs []analysed, terms []string, base int, df map[string]int32, blocks bool) *segment {
	seg := &segment{base: base, docs: make([]doc, len(docs)), srv: make([]int32, len(docs))}
	n := parallelism(len(docs))
	ranges := make([]int, n+1)
	for r := range ranges {
		ranges[r] = r * len(docs) / n
	}
	parts := make([]*segmentPart, n)
	each(len(parts), func(r int) {
		parts[r] = ix.countRange(seg, docs, ranges[r], ranges[r+1], terms)
	})
	// Lay every posting list out in one array, each range's postings of a
	// term after the previous range's.
	total := 0
	for _, p := range parts {
		total += p.postings
		seg.hinted = seg.hinted || p.hinted
	}
	backing := make([]posting, total)
	lists := make([]plist, len(terms))
	off := int32(0)
	for id := range lists {
		start := off
		for _, p := range parts {
			n := p.at[id]
			p.at[id] = off
			off += n
		}
		lists[id].ps = backing[start:off:off]
	}
	each(len(parts), func(r int) {
		ix.fillRange(parts[r], docs, ranges[r], ranges[r+1], backing)
	})
	if blocks {
		seg.ranks = assignRanks(len(docs), func(yield func(*plist) bool) {
			for i := range lists {
				if !yield(&lists[i]) {
					return
				}
			}
		})
	}
	// Each list's largest sat and top server, lists spread over the
	// goroutines.
	each(len(parts), func(r int) {
		lo, hi := r*len(lists)/len(parts), (r+1)*len(lists)/len(parts)
		if blocks {
			indexListBlocks(seg, lists[lo:hi])
			return
		}
		for id := lo; id < hi; id++ {
			l := &lists[id]
			for _, p := range l.ps {
				l.max = max(l.max, p.sat)
			}
			l.top = topRun(seg, l.ps)
		}
	})
	each(2, func(i int) {
		if i == 0 {
			seg.post = make(map[string]*plist, len(terms))
		}
		for id, term := range terms {
			switch l := &lists[id]; {
			case len(l.ps) == 0:
			case i == 0:
				seg.post[term] = l
			default:
				df[term] += int32(len(l.ps))
			}
		}
	})
	return seg
}

// segmentPart is one range of documents' share of newSegment's work.
type segmentPart struct {
	// at is per term the number of postings in the range, then where the
	// next one goes in the backing array.
	at       []int32
	postings int
	hinted   bool // a document of the range has written hints
}

// parallelism is how many goroutines newSegment uses for n documents.
func parallelism(n int) int {
	if n < minParallelDocs {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), n/(minParallelDocs/2))
}

// each runs f(0) … f(n-1), each on its own goroutine but the last.
func each(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	if n > 0 {
		f(n - 1)
	}
	wg.Wait()
}

// countRange fills in the documents lo to hi of seg and counts their
// postings of each term, the documents' terms being numbered in terms.
func (ix *Index) countRange(seg *segment, docs []analysed, lo, hi int, terms []string) *segmentPart {
	p := &segmentPart{at: make([]int32, len(terms))}
	last := ""
	var lastIdx int32
	for i := lo; i < hi; i++ {
		a := &docs[i]
		if key := a.tool.Server; i == lo || key != last {
			last, lastIdx = key, ix.servers[key].idx
		}
		hints, leads := docHints(a, terms)
		seg.docs[i] = doc{tool: a.tool, srv: lastIdx, nameTerms: a.nameTerms, extra: a.extra, hints: hints, leads: leads, written: len(a.hints) > 0}
		seg.srv[i] = lastIdx
		if seg.docs[i].written {
			p.hinted = true
		}
		for _, tf := range a.terms {
			p.at[tf.id]++
		}
		p.postings += len(a.terms)
	}
	return p
}

// fillRange writes the postings of the documents lo to hi into backing,
// each where p.at says, and notes per term the largest sat and the longest
// run of one server.
func (ix *Index) fillRange(p *segmentPart, docs []analysed, lo, hi int, backing []posting) {
	k1 := float32(ix.w.K1)
	var hw []float64 // per term of a document with hints, their part of wtf
	for i := lo; i < hi; i++ {
		a := &docs[i]
		var norm [numFields]float64
		for f := range norm {
			avg := ix.avgLen[f]
			if avg <= 0 {
				avg = 1
			}
			norm[f] = ix.w.Field[f] / (1 - ix.w.B[f] + ix.w.B[f]*float64(a.lens[f])/avg)
		}
		hints := len(a.hints) > 0
		if hints {
			// The hints field counts hint by hint, not as one text.
			norm[FieldHints] = 0
			hw = ix.hintFrequencies(a, hw)
		}
		view := float32(ix.w.HintView)
		for t, tfr := range a.terms {
			var wtf float64
			var fields uint8
			for f, n := range tfr.tf {
				if n > 0 {
					wtf += float64(n) * norm[f]
					fields |= 1 << f
				}
			}
			sat := saturate(wtf, k1)
			if hints {
				// Both views of a tool with written hints: its
				// definition, and the same with its hints in place of
				// its description.
				desc := float64(tfr.tf[FieldDescription]) * norm[FieldDescription]
				sat = (1-view)*sat + view*saturate(wtf-desc+hw[t], k1)
			}
			backing[p.at[tfr.id]] = newPosting(uint32(i), sat, fields)
			p.at[tfr.id]++
		}
	}
}

// topRun is the server with the most documents in a row among ps: a
// segment's documents come grouped by server, so this is the server with
// the most documents, the first of them on a tie.
func topRun(seg *segment, ps []posting) serverRun {
	var best, run int32
	var bestDoc uint32
	runSrv := int32(-1)
	for _, p := range ps {
		if srv := seg.srv[p.doc()]; srv != runSrv {
			run, runSrv = 0, srv
		}
		run++
		if run > best {
			best, bestDoc = run, p.doc()
		}
	}
	return serverRun{doc: bestDoc, count: best}
}

// listArenaChunk is how many entries the arenas of indexListBlocks get at a
// time.
const listArenaChunk = 1 << 12

// indexListBlocks sets, for each list, its largest sat, its top server, and
// its block maxima and name postings as indexBlocks does, reading each
// list's postings once. The block maxima and name postings are gathered in
// scratch space, then carved out of arenas.
func indexListBlocks(seg *segment, lists []plist) {
	var blockArena, blocks []blockMax
	var auxArena, aux, names []uint32
	srvs := seg.srv
	w := rankWords(len(seg.docs))
	for i := range lists {
		l := &lists[i]
		ps := l.ps
		names = names[:0]
		var mx float32
		var best, run int32
		var bestDoc uint32
		runSrv := int32(-1)
		for _, p := range ps {
			mx = max(mx, p.sat)
			if srv := srvs[p.doc()]; srv != runSrv {
				run, runSrv = 0, srv
			}
			run++
			if run > best {
				best, bestDoc = run, p.doc()
			}
			if p.fields()&(1<<FieldName) != 0 {
				names = append(names, p.doc())
			}
		}
		l.max = mx
		l.top = serverRun{doc: bestDoc, count: best}
		aux = aux[:0]
		if len(ps) >= minBlockList {
			blocks, aux = appendBlocks(blocks[:0], aux, seg.ranks[l.rankAt:int(l.rankAt)+w], ps)
			l.blocks = carve(&blockArena, blocks, listArenaChunk)
		}
		aux = append(aux, names...)
		l.aux = carve(&auxArena, aux, listArenaChunk)
	}
}

// hintFrequencies returns, in buf, the hints field's part of the weighted,
// length-normalised frequency of each term of document a. Each hint is a
// short text of its own, normalised by its own length against the average
// hint's: a term counts by its best hint, and the other hints it occurs in
// add Weights.HintRest of theirs. So four hints of a tool are four ways of
// asking for it, not one long document that dilutes each word.
func (ix *Index) hintFrequencies(a *analysed, buf []float64) []float64 {
	n := 2 * len(a.terms)
	if cap(buf) < n {
		buf = make([]float64, n)
	}
	best, sum := buf[:len(a.terms)], buf[len(a.terms):n]
	clear(best)
	clear(sum)
	w, b := ix.w.Field[FieldHints], ix.w.B[FieldHints]
	avg := ix.avgLen[FieldHints]
	if avg <= 0 {
		avg = 1
	}
	norm, last := 0.0, -1
	for _, e := range a.hintTerms {
		if e.hint >= ownHintBase {
			continue // an own phrasing: its terms count in their own fields
		}
		if int(e.hint) != last {
			last = int(e.hint)
			norm = w / (1 - b + b*float64(a.hints[e.hint])/avg)
		}
		x := float64(e.n) * norm
		best[e.at] = max(best[e.at], x)
		sum[e.at] += x
	}
	rest := ix.w.HintRest
	for t := range best {
		best[t] += rest * (sum[t] - best[t])
	}
	return buf
}

// docHints returns the terms of document a's phrasings (its written hints
// and its own), each with the phrasings it occurs in and those it is the
// first term of, nil when a has none: first those that start a phrasing,
// sorted, then the others, sorted; and how many start one (doc.leads).
func docHints(a *analysed, terms []string) ([]hintTerms, uint8) {
	if len(a.hintTerms) == 0 {
		return nil, 0
	}
	var out []hintTerms
	var started uint64 // the phrasings whose first term was met
	for _, e := range a.hintTerms {
		bit := uint(e.hint)
		switch {
		case e.hint >= ownHintBase:
			bit = uint(e.hint - ownHintBase)
		case bit >= maxCoverageHints:
			continue
		}
		term := terms[a.terms[e.at].id]
		i, found := slices.BinarySearchFunc(out, term, func(h hintTerms, t string) int { return strings.Compare(h.term, t) })
		if !found {
			out = slices.Insert(out, i, hintTerms{term: term})
		}
		out[i].in |= 1 << bit
		// A phrasing's terms are listed in the order they first occur
		// in it (addHintTerms; decompound adds parts of a name after
		// them), so its first entry is its first term.
		if started&(1<<bit) == 0 {
			started |= 1 << bit
			out[i].lead |= 1 << bit
		}
	}
	// Stable: each part stays sorted. A tool has at most 64 phrasings
	// with bits, so at most 64 leading terms.
	slices.SortStableFunc(out, func(a, b hintTerms) int {
		return boolOrder(a.lead == 0) - boolOrder(b.lead == 0)
	})
	leads := 0
	for leads < len(out) && out[leads].lead != 0 {
		leads++
	}
	return slices.Clip(out), uint8(leads)
}

// boolOrder is 1 for true and 0 for false.
func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}
