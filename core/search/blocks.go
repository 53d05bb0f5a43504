package search

import (
	"encoding/binary"
	"iter"
	"maps"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
)

// Block bounds. A one-segment index divides its documents into blocks of
// blockSize consecutive documents (a server's tools are consecutive, so a
// block holds the tools of one or a few servers). A long posting list keeps,
// per block it touches, its largest weighted term frequency; every list
// keeps the documents that have the term in their name. From these a
// keyword query bounds the score of every tool in a block without reading
// the block's postings, and reads only the blocks whose bound can reach the
// k-th best score found.

// blockShift is log2 of the number of documents in a block.
const blockShift = 6

// blockSize is the number of documents in a block. Ranking keeps a block's
// documents in a 64-bit mask, so it must not exceed 64.
const blockSize = 1 << blockShift

var _ [64 - blockSize]struct{} // blockSize is at most 64

// minBlockList is the length from which a posting list keeps its block
// maxima; a shorter list is read whole to bound its blocks.
const minBlockList = 2 * blockSize

// blockMax is, for the documents of one block, a posting list's largest
// saturated term frequency and the largest invName of
// the block's tools with the term in their name (0 when none has it). The
// list's block ranks say which block each entry is for: the k-th entry is
// for the block of the k-th bit set, and the list's k-th start says where
// the block's postings start (they end where the next block's start).
type blockMax struct {
	sat  float32
	name float32
}

// blockRank is one word of a long list's block bitmap: bit j is set when
// the list has an entry for block 64w+j (w being the word's place), and
// before is the number of the list's entries for earlier blocks. A block's
// entry is then found, or known absent, with one load and a popcount.
type blockRank struct {
	bits   uint64
	before uint32
}

// entry returns the place, among a long list's block entries, of the entry
// for block i, w being the list's rank word for i, and whether the list has
// one.
func (w blockRank) entry(i uint32) (int, bool) {
	bit := uint64(1) << (i % 64)
	return int(w.before) + bits.OnesCount64(w.bits&(bit-1)), w.bits&bit != 0
}

// rankWords is the number of blockRank words of a long list in a segment
// of n documents.
func rankWords(n int) int {
	nb := (n + blockSize - 1) >> blockShift
	return (nb + 63) / 64
}

// appendBlocks appends to blocks and starts the block entries of the long
// list ps, and sets its ranks.
func appendBlocks(blocks []blockMax, starts []uint32, ranks []blockRank, ps []posting) ([]blockMax, []uint32) {
	last := ^uint32(0)
	for j, p := range ps {
		sat := p.sat
		if b := p.doc() >> blockShift; b != last {
			blocks = append(blocks, blockMax{sat: sat})
			starts = append(starts, uint32(j))
			ranks[b/64].bits |= 1 << (b % 64)
			last = b
		} else if e := &blocks[len(blocks)-1]; sat > e.sat {
			e.sat = sat
		}
	}
	before := uint32(0)
	for w := range ranks {
		ranks[w].before = before
		before += uint32(bits.OnesCount64(ranks[w].bits))
	}
	return blocks, starts
}

// assignRanks gives every long list of lists its place in a new ranks
// array for a segment of n documents, and returns the array.
func assignRanks(n int, lists iter.Seq[*plist]) []blockRank {
	w := rankWords(n)
	at := 0
	for l := range lists {
		if len(l.ps) >= minBlockList {
			l.rankAt = uint32(at)
			at += w
		}
	}
	return make([]blockRank, at)
}

// indexBlocks computes, for every posting list of seg, the block maxima of
// a long list (saturated with k1) with their ranks, and the documents with
// the term in their name.
func indexBlocks(seg *segment) {
	var nBlocks, nNames int
	seg.ranks = assignRanks(len(seg.docs), maps.Values(seg.post))
	w := rankWords(len(seg.docs))
	for _, l := range seg.post {
		if len(l.ps) >= minBlockList {
			nBlocks += blockCount(l.ps)
		}
		for _, p := range l.ps {
			if p.fields()&(1<<FieldName) != 0 {
				nNames++
			}
		}
	}
	// One backing array each, carved into the lists.
	blocks := make([]blockMax, 0, nBlocks)
	aux := make([]uint32, 0, nBlocks+nNames)
	for _, l := range seg.post {
		start := len(aux)
		if len(l.ps) >= minBlockList {
			b := len(blocks)
			blocks, aux = appendBlocks(blocks, aux, seg.ranks[l.rankAt:int(l.rankAt)+w], l.ps)
			l.blocks = blocks[b:len(blocks):len(blocks)]
		}
		for _, p := range l.ps {
			if p.fields()&(1<<FieldName) != 0 {
				aux = append(aux, p.doc())
			}
		}
		l.aux = aux[start:len(aux):len(aux)]
	}
}

// blockCount is the number of blocks ps touches.
func blockCount(ps []posting) int {
	n := 0
	last := ^uint32(0)
	for _, p := range ps {
		if b := p.doc() >> blockShift; b != last {
			n++
			last = b
		}
	}
	return n
}

// groupBlocks are a word and its synonyms (its group's members) read as
// one list. For each tool with a posting of any member, its merged posting
// keeps what ranking takes from the group: the best member's score, whether
// the word itself is there and the best member in the tool's name. For each
// block with such a tool, its entry keeps the largest score and the largest
// share of a tool's name coverage the group can give there. live is how
// many of the group's members have postings at all; members are numbered
// in that order, as ranking numbers a query group's members. ranks say
// which block each entry is for (as a long list's do), and starts where
// each entry's postings start in ps, the last start being len(ps).
type groupBlocks struct {
	live   int
	blocks []groupBlock
	ranks  []blockRank
	starts []uint32
	ps     []byte // gRecord bytes a posting
	// nameIDF is, per name code of a merged posting, the idf it adds to
	// the tool's name coverage: 0 for none, then each live member's.
	nameIDF [1 << gNameBits]float32
}

// groupBlock is one block's entry of a groupBlocks: the largest
// contribution of a member and the largest share of a tool's name coverage
// a member gives.
type groupBlock struct {
	c    float32
	name float32
}

// A merged posting takes gRecord bytes, little-endian: 2 for its key, the
// tool's place in its block (the low blockShift bits), whether the word
// itself has a posting (bit gOwnBit) and the name code (from bit
// gNameShift: 0 when no member is in the tool's name, else 1 + the live
// member in it with the largest idf); then 4 for best, the largest weight
// × idf × (k1+1) × saturated term frequency of the group's members,
// computed as ranking computes it, as float32 bits. The block is known
// from the entry, so a tool's number takes no more.
const (
	gRecord    = 6
	gOwnBit    = blockShift
	gNameShift = blockShift + 1
	gNameBits  = 5
)

var _ [16 - gNameShift - gNameBits]struct{} // a key fits 16 bits

// gposting decodes the merged posting rec.
func gposting(rec *[gRecord]byte) (key uint32, best float32) {
	return uint32(binary.LittleEndian.Uint16(rec[:2])), math.Float32frombits(binary.LittleEndian.Uint32(rec[2:]))
}

// maxMergedMembers bounds the size of a group read as one list: its name
// codes count live members from 1 in gNameBits bits.
const maxMergedMembers = 1<<gNameBits - 1

// run returns where the merged postings of block i start and end in ps.
func (g *groupBlocks) run(i uint32) (from, to int) {
	k, ok := g.ranks[i/64].entry(i)
	if !ok {
		return 0, 0
	}
	return int(g.starts[k]), int(g.starts[k+1])
}

// groupMerge is the per-document state of merging a group's members.
type groupMerge struct {
	best  []uint32 // float32 bits of the best member score
	name  []uint32 // float32 bits of the largest idf of a member in the name
	code  []uint8  // that member's name code
	own   []uint64 // bit d: the word itself has a posting for document d
	seen  []uint64 // bit d: some member has
	arena []byte
}

// indexGroups makes, for every word with synonyms two or more of which are
// long lists, the merged list of the word and its synonyms (see
// groupBlocks), so that bounding and reading a query word's blocks read one
// list. It needs the index's document frequencies and size, and
// seg.invName.
func (ix *Index) indexGroups(seg *segment) {
	var heads []string
	for head, syns := range synonyms {
		if len(syns)+1 > maxMergedMembers {
			continue
		}
		// Merging pays when two members or more are long lists; short
		// lists are cheap to read one by one.
		long := 0
		for mi := range len(syns) + 1 {
			if l := seg.post[groupMember(head, syns, mi)]; l != nil && l.blocks != nil && ix.live(mi, int32(len(l.ps))) {
				long++
			}
		}
		if long >= 2 {
			heads = append(heads, head)
		}
	}
	seg.groups = make(map[string]*groupBlocks, len(heads))
	if len(heads) == 0 {
		return
	}
	out := make([]*groupBlocks, len(heads))
	n := len(seg.docs)
	var next atomic.Int64
	each(min(runtime.GOMAXPROCS(0), len(heads)), func(int) {
		m := &groupMerge{best: make([]uint32, n), name: make([]uint32, n), code: make([]uint8, n),
			own: make([]uint64, (n+63)/64), seen: make([]uint64, (n+63)/64)}
		for {
			h := int(next.Add(1) - 1)
			if h >= len(heads) {
				return
			}
			out[h] = ix.mergeGroup(seg, m, heads[h])
		}
	})
	for h, head := range heads {
		seg.groups[head] = out[h]
	}
}

var _ [blockSize - 64]struct{} // mergeGroup takes a bitmap word for a block

// mergeGroup returns the merged list of head and its synonyms, using (and
// leaving clear) m's per-document state.
func (ix *Index) mergeGroup(seg *segment, m *groupMerge, head string) *groupBlocks {
	syns := synonyms[head]
	g := &groupBlocks{}
	for mi := range len(syns) + 1 {
		l := seg.post[groupMember(head, syns, mi)]
		if l == nil || !ix.live(mi, int32(len(l.ps))) {
			continue
		}
		weight := 1.0
		if mi > 0 {
			weight = ix.w.Synonym
		}
		w, fidf := ix.memberWeights(weight, int32(len(l.ps)))
		g.live++
		g.nameIDF[g.live] = fidf
		code, fbits := uint8(g.live), math.Float32bits(fidf)
		for _, p := range l.ps {
			d := p.doc()
			m.seen[d/64] |= 1 << (d % 64)
			m.best[d] = max(m.best[d], math.Float32bits(w*p.sat))
		}
		// The tools with the member in their name.
		for _, d := range l.names() {
			if fbits > m.name[d] {
				m.name[d], m.code[d] = fbits, code
			}
		}
		if mi == 0 {
			for _, p := range l.ps {
				d := p.doc()
				m.own[d/64] |= 1 << (d % 64)
			}
		}
	}
	// A word of the bitmaps is a block's tools (blockSize is 64).
	count, blocks := 0, 0
	for _, word := range m.seen {
		count += bits.OnesCount64(word)
		blocks += int(b2u(word != 0))
	}
	if len(m.arena)+gRecord*count > cap(m.arena) {
		m.arena = make([]byte, 0, gRecord*max(count, 1<<14))
	}
	at := len(m.arena)
	out := m.arena[at : at+gRecord*count]
	g.ranks = make([]blockRank, rankWords(len(seg.docs)))
	g.blocks = make([]groupBlock, 0, blocks)
	g.starts = make([]uint32, 0, blocks+1)
	j := 0
	for b, word := range m.seen {
		if word == 0 {
			continue
		}
		g.ranks[b/64].bits |= 1 << (b % 64)
		g.starts = append(g.starts, uint32(j))
		var c, name uint32 // float32 bits: neither is ever negative
		own := m.own[b]
		for t := word; t != 0; t &= t - 1 {
			o := bits.TrailingZeros64(t)
			d := b<<blockShift | o
			c = max(c, m.best[d])
			code := m.code[d]
			if code != 0 {
				name = max(name, math.Float32bits(g.nameIDF[code]*seg.invName[d]))
				m.name[d], m.code[d] = 0, 0
			}
			rec := (*[gRecord]byte)(out[j*gRecord:])
			binary.LittleEndian.PutUint16(rec[:2], uint16(uint64(o)|own>>o&1<<gOwnBit|uint64(code)<<gNameShift))
			binary.LittleEndian.PutUint32(rec[2:], m.best[d])
			j++
			m.best[d] = 0
		}
		g.blocks = append(g.blocks, groupBlock{c: math.Float32frombits(c), name: math.Float32frombits(name)})
		m.seen[b], m.own[b] = 0, 0
	}
	m.arena = m.arena[:at+gRecord*count]
	g.starts = append(g.starts, uint32(j))
	g.ps = m.arena[at:len(m.arena):len(m.arena)]
	var before uint32
	for wi := range g.ranks {
		g.ranks[wi].before = before
		before += uint32(bits.OnesCount64(g.ranks[wi].bits))
	}
	return g
}

// indexBlockNames sets the name of every long list's block entries from
// seg.invName.
func indexBlockNames(seg *segment) {
	for _, l := range seg.post {
		if l.blocks == nil {
			continue
		}
		for _, d := range l.names() {
			b := d >> blockShift
			k, _ := seg.ranks[int(l.rankAt)+int(b/64)].entry(b)
			l.blocks[k].name = max(l.blocks[k].name, seg.invName[d])
		}
	}
}

// groupMember is the mi-th member of the group of head: head itself, then its
// synonyms.
func groupMember(head string, syns []string, mi int) string {
	if mi == 0 {
		return head
	}
	return syns[mi-1]
}
