package search

import (
	"context"
	"math"
	"math/bits"
	"slices"
)

// Ranking block by block. Before reading any posting, a keyword query
// bounds the score of every tool in each block (see blocks.go): the sum of
// each group's largest contribution in the block, scaled by the share of the
// query the groups present in the block cover, by the largest name coverage
// a tool of the block can get and by the strongest mention of a server in
// the block. The name coverage bound sums, per group, the largest share of
// a tool's name a member's term covers in the block (the term's idf over the
// tool's name idf, kept per block at build). It then reads the blocks from
// the best bound down until it holds k hits and the next bound is below the
// k-th best score. A block is read like the whole index is, group by group in
// the same order, so the scores and the order of the hits are exactly those
// of reading everything; only Result.Total becomes a lower bound when blocks
// are skipped.

// prunable reports whether keyword ranking may read block by block: the
// index is one segment with no retired documents, so document numbers are
// positions in that segment.
func (ix *Index) prunable() bool {
	return len(ix.segs) == 1 && ix.segs[0].deadDoc == nil
}

// Compact reports whether the index is in the form a build gives: one
// segment with no retired tools. Keyword queries on a compact index read
// only the blocks of tools that can reach the top results; Update splits an
// index into segments until it compacts it, and the index of a settled
// catalog is best built again with Build.
func (ix *Index) Compact() bool { return ix.prunable() }

// blockScratch is a query's per-block state.
type blockScratch struct {
	st      []blockState // per block
	touched []uint32     // blocks with a posting
	named   []uint32     // blocks without a posting that a server mention reached
	gTouch  []uint32     // blocks the current group touched
	heap    []blockBound
}

// blockState is what a query knows of one block before reading it. The
// fields bounding uses together share a cache line.
type blockState struct {
	mask    uint64  // the groups present
	lists   uint64  // the member lists with a posting in the block (bit i%64: the query's i-th list)
	named   uint64  // groups naming a server of the block
	sum     float32 // summed largest group contributions
	bound   float32 // the bound of the block's tools' scores
	cov     float32 // summed idf of the groups present
	name    float32 // summed largest name coverage shares of the groups present
	mention float32 // strongest server mention
	gmax    uint32  // the current group's largest contribution, as float32 bits
	gname   uint32  // the current group's largest name coverage share, as float32 bits
}

// blockBound is a block and the bound of its tools' scores.
type blockBound struct {
	bound float32
	block uint32
}

func (b *blockScratch) size(blocks int) {
	if len(b.st) < blocks {
		b.st = make([]blockState, blocks)
		// Each block is touched once at most, so the loops that fill
		// these store by index, without append's call; they store
		// before they know whether to keep, hence one more.
		b.touched = make([]uint32, 0, blocks+1)
		b.gTouch = make([]uint32, 0, blocks+1)
	}
}

// reset clears what a query set.
func (b *blockScratch) reset() {
	for _, i := range b.touched {
		b.st[i] = blockState{}
	}
	for _, i := range b.named {
		b.st[i] = blockState{}
	}
	b.touched, b.named, b.gTouch, b.heap = b.touched[:0], b.named[:0], b.gTouch[:0], b.heap[:0]
}

func (r *ranking) pruned(ctx context.Context, s *scratch, res *Result) (*topK, error) {
	ix := r.ix
	seg := ix.segs[0]
	nb := (len(seg.docs) + blockSize - 1) >> blockShift
	b := &s.blk
	b.size(nb)
	defer b.reset()
	r.bounds(seg, b)
	top := s.newTopK(r.req.MaxResults)
	h := b.heap[:0]
	first := 0
	for _, i := range b.touched {
		st := &b.st[i]
		if !(st.bound > 0) {
			// No tool of the block can score, but its tools with a
			// positive sum (that a zero factor cancels) would count.
			if st.sum > 0 && st.mask&r.words != 0 && r.pq.satisfied(st.mask) {
				res.TotalAtLeast = true
			}
			continue
		}
		if len(h) > 0 && st.bound > h[first].bound {
			first = len(h)
		}
		h = append(h, blockBound{st.bound, i})
	}
	if len(h) > 0 {
		// The block with the best bound is read first, found without a
		// heap; the k-th score it gives (when it gives k hits) then keeps
		// most blocks out of the heap.
		bb := h[first]
		h[first] = h[len(h)-1]
		h = h[:len(h)-1]
		r.readBlock(s, seg, bb.block, r.blockMost(&b.st[bb.block]), top, res)
		if top.full() {
			theta := top.min()
			kept := h[:0]
			for _, c := range h {
				if float64(c.bound) >= theta {
					kept = append(kept, c)
				}
			}
			if len(kept) < len(h) {
				res.TotalAtLeast = true
			}
			h = kept
		}
	}
	heapify(h)
	for n := 0; len(h) > 0; n++ {
		var bb blockBound
		bb, h = popBlock(h)
		if top.full() && float64(bb.bound) < top.min() {
			res.TotalAtLeast = true
			break
		}
		if n%64 == 63 && ctx.Err() != nil {
			// A filter that hides most tools can keep this loop going.
			return nil, ctx.Err()
		}
		r.readBlock(s, seg, bb.block, r.blockMost(&b.st[bb.block]), top, res)
	}
	b.heap = h
	return top, nil
}

// bounds computes, for every block with a posting of the query, the bound
// of its tools' scores.
func (r *ranking) bounds(seg *segment, b *blockScratch) {
	nw := rankWords(len(seg.docs))
	st := b.st
	for _, g := range r.groups {
		gidf := float32(g.idf)
		if f := g.merged; f != nil {
			// The word and its synonyms' merged list.
			b.touched = addMerged(st, b.touched, f, g.bit, gidf)
			continue
		}
		if len(g.members) == 1 && g.members[0].l != nil && g.members[0].l.blocks != nil {
			// One long list: its block maxima are the group's.
			m := &g.members[0]
			l := m.l
			b.touched = addLong(st, b.touched, seg.ranks[l.rankAt:int(l.rankAt)+nw], l.blocks, m.w, m.fidf, g.bit, 1<<(g.first&63), gidf)
			continue
		}
		for x, m := range g.members {
			l := m.l
			bit := uint64(1) << ((g.first + x) & 63)
			if l == nil {
				continue
			}
			// A block's first touch by the group is recorded without a
			// branch: it is always stored, and kept when the block had no
			// contribution yet (gmax holds float32 bits, below 1<<32, and
			// is never 0 once touched: see touchBits).
			gt, n := b.gTouch[:cap(b.gTouch)], len(b.gTouch)
			if l.blocks != nil {
				k := 0
				for wi, rk := range seg.ranks[l.rankAt : int(l.rankAt)+nw] {
					for t := rk.bits; t != 0; t &= t - 1 {
						i := uint32(wi*64 + bits.TrailingZeros64(t))
						e := &l.blocks[k]
						k++
						x := &st[i]
						gt[n] = i
						n += int((uint64(x.gmax) - 1) >> 63)
						x.gmax = max(x.gmax, touchBits(m.w*e.sat))
						x.gname = max(x.gname, math.Float32bits(m.fidf*e.name))
						x.lists |= bit
					}
				}
			} else {
				for _, p := range l.ps {
					i := p.doc() >> blockShift
					x := &st[i]
					gt[n] = i
					n += int((uint64(x.gmax) - 1) >> 63)
					x.gmax = max(x.gmax, touchBits(m.w*p.sat))
					x.lists |= bit
				}
				// The tools with the term in their name, among those.
				for _, d := range l.names() {
					x := &st[d>>blockShift]
					x.gname = max(x.gname, math.Float32bits(m.fidf*seg.invName[d]))
				}
			}
			b.gTouch = gt[:n]
		}
		tl, n := b.touched[:cap(b.touched)], len(b.touched)
		for _, i := range b.gTouch {
			x := &st[i]
			tl[n] = i
			n += int((x.mask - 1) >> 63)
			x.sum += math.Float32frombits(x.gmax)
			x.name += math.Float32frombits(x.gname)
			x.cov += gidf
			x.mask |= g.bit
			x.gmax, x.gname = 0, 0
		}
		b.touched = tl[:n]
		b.gTouch = b.gTouch[:0]
	}
	// Servers the query names: their mention and the groups naming them.
	if r.mentions != nil {
		for _, srv := range r.mentioned {
			m := r.mentions[srv]
			var named uint64
			if r.namedBy != nil {
				named = r.namedBy[srv]
			}
			lo, _ := slices.BinarySearch(seg.srv, srv)
			hi, _ := slices.BinarySearch(seg.srv, srv+1)
			if lo == hi {
				continue
			}
			for i := lo >> blockShift; i <= (hi-1)>>blockShift; i++ {
				x := &st[i]
				if x.mask == 0 && x.mention == 0 && x.named == 0 {
					// No posting here: only reset needs to know.
					b.named = append(b.named, uint32(i))
				}
				x.mention = max(x.mention, m)
				x.named |= named
			}
		}
	}
	// Kept in locals: the stores to the blocks' states below would
	// otherwise make the compiler load them again for every block.
	model, groups, required := r.model, r.pq.groups, len(r.pq.required) > 0
	var perIDF float64 // 1 / the query's idf, widened (see coverageSlack)
	if r.idfSum > 0 {
		perIDF = coverageSlack / r.idfSum
	}
	for _, i := range b.touched {
		x := &st[i]
		mask := x.mask
		if required && !r.pq.satisfied(mask) {
			// A required word is in no tool of the block.
			continue
		}
		f := factors{sum: float64(x.sum), coverage: 1, name: float64(x.name), mention: float64(x.mention)}
		if perIDF > 0 {
			cov := float64(x.cov)
			for m := x.named &^ mask; m != 0; m &= m - 1 {
				cov += groups[bits.TrailingZeros64(m)].idf
			}
			// Summed in float32, the idfs may fall short of final's
			// float64 sum by a few units in the last place: widened,
			// the share bounds every tool's whatever the power it is
			// raised to.
			f.coverage = min(1, cov*perIDF)
		}
		if model.coordination == 1 && !model.hinted() && model.learned == 0 {
			// The usual power and no hints, inline: scaled is final
			// without the call.
			x.bound = roundUp32(model.scaled(f, f.coverage) * boundSlack)
		} else {
			x.bound = roundUp32(model.upper(f, r.leadBound(mask)))
		}
	}
}

// addMerged adds to the blocks' states the block entries of the merged
// list f of the group with bit gbit and idf gidf, and returns
// touched with the blocks it touched first appended (its capacity must be
// the number of blocks). It is apart from bounds, and stores by index
// rather than through append, so that its loop keeps its values in
// registers.
func addMerged(st []blockState, touched []uint32, f *groupBlocks, gbit uint64, gidf float32) []uint32 {
	k := 0
	n, all := len(touched), touched[:cap(touched)]
	for wi, rk := range f.ranks {
		for t := rk.bits; t != 0; t &= t - 1 {
			i := uint32(wi*64 + bits.TrailingZeros64(t))
			e := &f.blocks[k]
			k++
			x := &st[i]
			// Recorded without a branch: n moves on when the block
			// had no group yet (masks have at most MaxTerms bits).
			all[n] = i
			n += int((x.mask - 1) >> 63)
			x.sum += e.c
			x.name += e.name
			x.cov += gidf
			x.mask |= gbit
		}
	}
	return all[:n]
}

// addLong adds to the blocks' states the block maxima of a long list with
// the given ranks and entries, weighted by w (and fidf for name coverage),
// as the one member (list bit list) of the group with bit gbit and idf gidf,
// and returns touched with the blocks it touched first appended.
func addLong(st []blockState, touched []uint32, ranks []blockRank, blocks []blockMax, w, fidf float32, gbit, list uint64, gidf float32) []uint32 {
	k := 0
	n, all := len(touched), touched[:cap(touched)]
	for wi, rk := range ranks {
		for t := rk.bits; t != 0; t &= t - 1 {
			i := uint32(wi*64 + bits.TrailingZeros64(t))
			x := &st[i]
			// Recorded without a branch: n moves on when the block
			// had no group yet (masks have at most MaxTerms bits).
			all[n] = i
			n += int((x.mask - 1) >> 63)
			e := &blocks[k]
			k++
			x.sum += w * e.sat
			x.name += fidf * e.name
			x.cov += gidf
			x.mask |= gbit
			x.lists |= list
		}
	}
	return all[:n]
}

// heapify orders h as a max-heap by bound.
func heapify(h []blockBound) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

// popBlock removes and returns the block with the largest bound.
func popBlock(h []blockBound) (blockBound, []blockBound) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	siftDown(h, 0)
	return top, h
}

// siftDown moves h[i] down to its place in the max-heap h.
func siftDown(h []blockBound, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) {
			// The larger child without a branch: bounds are never
			// negative, so their bits order as they do, and the borrow of
			// subtracting them says which is larger.
			c += int((uint64(math.Float32bits(h[c].bound)) - uint64(math.Float32bits(h[r].bound))) >> 63)
		}
		if h[i].bound >= h[c].bound {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// readBlock reads block i of every group's lists, group by group in the
// ranking order, and offers the block's tools to top.
//
// most is the largest factor a tool of the block can get from name
// coverage and server mention.
func (r *ranking) readBlock(s *scratch, seg *segment, i uint32, most float64, top *topK, res *Result) {
	lo := i << blockShift
	acc := &s.block
	var touched uint64 // the block's documents with a posting
	lists, mask := s.blk.st[i].lists, s.blk.st[i].mask
	for gi := range r.groups {
		g := &r.groups[gi]
		named := r.byGroup[g.gi]
		if f := g.merged; f != nil {
			if mask&g.bit != 0 {
				touched |= readMerged(acc, f, i, g.bit, named, seg.srv[lo:])
			}
			continue
		}
		present := r.present(g, lists)
		if present == 0 {
			continue
		}
		var gTouched uint64
		if present&(present-1) == 0 && named == nil {
			// One member has postings here: each tool's group score is
			// its one posting's, added at once, as through the group's
			// best (scores are never negative). This loop is kept apart
			// from the one below: sharing it behind a flag cost 2.7% more
			// instructions per query (cachegrind, 10k).
			m := &g.members[bits.TrailingZeros64(present)]
			from, to := m.l.blockRun(i, seg.ranks)
			var exact uint64
			if m.own {
				exact = g.bit
			}
			w, fidf := m.w, m.fidf
			for _, p := range m.l.ps[from:to] {
				o := p.doc() & (blockSize - 1) // lo is a multiple of blockSize
				da := &acc[o]
				gTouched |= 1 << o
				da.exact |= exact
				da.acc += w * p.sat
				da.nameAcc += inName(p, fidf)
			}
			touched |= gTouched
			for t := gTouched; t != 0; t &= t - 1 {
				acc[bits.TrailingZeros64(t)].matched |= g.bit
			}
			continue
		}
		// Several members, or a word naming servers: a tool's group
		// score is its best member's.
		for t := present; t != 0; t &= t - 1 {
			m := &g.members[bits.TrailingZeros64(t)]
			from, to := m.l.blockRun(i, seg.ranks)
			var exact uint64
			if m.own {
				exact = g.bit
			}
			w, fidf := m.w, m.fidf
			for _, p := range m.l.ps[from:to] {
				o := p.doc() & (blockSize - 1) // lo is a multiple of blockSize
				da := &acc[o]
				gTouched |= 1 << o
				da.exact |= exact
				// Without branches: whether a member beats the best so far,
				// and whether the term is in the tool's name, do not repeat
				// from one query to the next, so a cold query mispredicts
				// them often. Scores are never negative, so their bits
				// order as they do, and an integer max is a compare and a
				// conditional move where a float max is nine instructions.
				da.best = max(da.best, math.Float32bits(w*p.sat))
				da.nameBest = max(da.nameBest, inNameBits(p, fidf))
			}
		}
		touched |= gTouched
		for t := gTouched; t != 0; t &= t - 1 {
			o := bits.TrailingZeros64(t)
			da := &acc[o]
			da.matched |= g.bit
			best := math.Float32frombits(da.best)
			if named != nil {
				// The server boost already counts a word that names the
				// tool's own server, as far as it names it. Scaling the
				// best member's score is scaling each member's: float
				// rounding keeps order.
				best *= 1 - named[seg.srv[lo+uint32(o)]]
			}
			da.acc += best
			da.best = 0
			da.nameAcc += math.Float32frombits(da.nameBest)
			da.nameBest = 0
		}
	}
	// Tools that cannot enter the top k even with the most the block
	// allows are only counted.
	quick := !r.filtered && len(r.pq.required) == 0
	theta := math.Inf(-1)
	if top.full() {
		theta = top.min()
	}
	rest := touched
	if need := top.k - len(top.h); quick && need > 0 && need <= maxFirst && bits.OnesCount64(touched) > need {
		// The top k is not full: the tools with the largest sums go in
		// first, so that the k-th score is high before the others are
		// looked at and most of them are only counted.
		first := largestSums(acc, touched, need)
		for t := first; t != 0; t &= t - 1 {
			o := bits.TrailingZeros64(t)
			r.offer(top, &acc[o], lo+uint32(o), most, res)
			acc[o] = docAcc{}
		}
		if top.full() {
			theta = top.min()
		}
		rest = touched &^ first
	}
	for t := rest; t != 0; t &= t - 1 {
		o := bits.TrailingZeros64(t)
		da := &acc[o]
		if quick && float64(da.acc)*most < theta {
			if r.counts(da) {
				res.Total++
			}
		} else {
			r.offer(top, da, lo+uint32(o), most, res)
			if top.full() {
				theta = top.min()
			}
		}
		*da = docAcc{}
	}
}

// readMerged adds to acc the group scores, name idf and match bits of
// block i's tools from the group's merged list f, the group having bit
// gbit and naming the servers named (nil when none), srv being the servers
// of the block's tools and on. It returns the tools it touched.
func readMerged(acc *[blockSize]docAcc, f *groupBlocks, i uint32, gbit uint64, named []float32, srv []int32) uint64 {
	var touched uint64
	from, to := f.run(i)
	for rec := f.ps[from*gRecord : to*gRecord]; len(rec) >= gRecord; rec = rec[gRecord:] {
		key, best := gposting((*[gRecord]byte)(rec))
		o := key & (blockSize - 1)
		da := &acc[o]
		touched |= 1 << o
		da.matched |= gbit
		da.exact |= gbit & -uint64(key>>gOwnBit&1)
		if named != nil {
			// The server boost already counts a word that names the
			// tool's own server, as far as it names it.
			best *= 1 - named[srv[o]]
		}
		da.acc += best
		da.nameAcc += f.nameIDF[key>>gNameShift&(1<<gNameBits-1)]
	}
	return touched
}

// maxFirst is the most tools a block offers ahead of the others.
const maxFirst = 8

// largestSums returns the n tools of docs (a block's mask) with the
// largest sums, or more on ties; n is at most maxFirst.
func largestSums(acc *[blockSize]docAcc, docs uint64, n int) uint64 {
	// The n largest sums as float32 bits (sums are never negative, so
	// bits order as values), smallest first.
	var top [maxFirst]uint32
	for t := docs; t != 0; t &= t - 1 {
		v := math.Float32bits(acc[bits.TrailingZeros64(t)].acc)
		if v <= top[0] {
			continue
		}
		j := 1
		for ; j < n && top[j] < v; j++ {
			top[j-1] = top[j]
		}
		top[j-1] = v
	}
	var out uint64
	for t := docs; t != 0; t &= t - 1 {
		o := bits.TrailingZeros64(t)
		out |= b2u(math.Float32bits(acc[o].acc) >= top[0]) << o
	}
	return out
}

// b2u is 1 for true and 0 for false, without a branch.
func b2u(b bool) uint64 {
	var u uint64
	if b {
		u = 1
	}
	return u
}

// blockRun returns where the postings of block i of l's segment start and
// end in l, ranks being the segment's block ranks. A long list finds the
// block's entry through its ranks, a short one searches its postings.
func (l *plist) blockRun(i uint32, ranks []blockRank) (from, to int) {
	ps := l.ps
	if l.blocks != nil {
		st := l.starts()
		k, ok := ranks[int(l.rankAt)+int(i/64)].entry(i)
		if !ok {
			return 0, 0
		}
		from, to = int(st[k]), len(ps)
		if k+1 < len(st) {
			to = int(st[k+1])
		}
		return from, to
	}
	from = searchPostings(ps, i<<blockShift)
	to = from
	end := docKey((i + 1) << blockShift)
	for to < len(ps) && ps[to].key < end {
		to++
	}
	return from, to
}

// maxGroupMembers is the most members (a word and its synonyms) a query
// group may have: present keeps them in a 64-bit mask.
const maxGroupMembers = 64

// inName is fidf when p's term is in the tool's name and 0 otherwise,
// chosen without a branch.
func inName(p posting, fidf float32) float32 {
	return math.Float32frombits(inNameBits(p, fidf))
}

// inNameBits is inName as float32 bits.
func inNameBits(p posting, fidf float32) uint32 {
	return math.Float32bits(fidf) & -(p.key >> FieldName & 1)
}

// present returns the members of g with postings in a block whose list
// word (blockScratch.lists) is lists: bit k for the group's k-th member.
// When the query has more than 64 lists they share bits, and a member
// counts as present when its bit is set.
func (r *ranking) present(g *rgroup, lists uint64) uint64 {
	n := len(g.members)
	if r.lists <= 64 {
		return lists >> g.first & (1<<n - 1)
	}
	var m uint64
	for k := range n {
		if g.members[k].l != nil && lists&(1<<((g.first+k)&63)) != 0 {
			m |= 1 << k
		}
	}
	return m
}

// blockMost is the largest factor the name coverage and the server
// mention give a tool of the block whose state is st (scoreModel.scale).
func (r *ranking) blockMost(st *blockState) float64 {
	return r.model.scale(factors{coverage: 1, name: float64(st.name), mention: float64(st.mention)}, r.leadBound(st.mask))
}

// searchPostings returns the first index of ps whose document is at least
// doc. It halves the range without branches (the compare's borrow moves
// the base), so a cold search mispredicts nothing but the loop's end.
func searchPostings(ps []posting, doc uint32) int {
	if len(ps) == 0 {
		return 0
	}
	key := uint64(docKey(doc))
	base, n := 0, len(ps)
	for n > 1 {
		half := n / 2
		base += half * int((uint64(ps[base+half].key)-key)>>63)
		n -= half
	}
	return base + int((uint64(ps[base].key)-key)>>63)
}

// touchBits is c as float32 bits with the lowest bit set: never 0, so that
// a block a group touched is told from one it did not even when the
// contribution is 0 (a zero weight), and never below c's own bits, so a
// bound made from it stays a bound.
func touchBits(c float32) uint32 { return math.Float32bits(c) | 1 }

// roundUp32 is x in float32, rounded up rather than to nearest, so that a
// bound kept in float32 still bounds (a tiny positive bound stays above 0).
func roundUp32(x float64) float32 {
	y := float32(x)
	if float64(y) < x {
		// y is finite and not negative (bounds never are): the next
		// float32 up is one more in its bits.
		y = math.Float32frombits(math.Float32bits(y) + 1)
	}
	return y
}

// coverageSlack widens a block's coverage, summed in float32, past any
// rounding of the sum (at most MaxTerms terms of 2^-24 relative error
// each).
const coverageSlack = 1 + 1.0/(1<<16)
