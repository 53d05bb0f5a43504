package search

import (
	"iter"
	"maps"
	"math/bits"
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

// groupBlocks are the block maxima of a word and its synonyms together: for
// each block with a posting of any of them, the largest contribution any of
// them can give a tool of the block (weight × idf × (k1+1) × saturated term
// frequency, as ranking computes it) and which of them have postings there.
// live is how many of the group's members have postings at all; members are
// numbered in that order, as ranking numbers a query group's lists.
// present is the bitmap of the blocks with an entry: the k-th entry is for
// the block of the k-th bit set.
type groupBlocks struct {
	live    int
	blocks  []groupBlock
	present []uint64
}

// groupBlock is one block's entry of a groupBlocks: the largest
// contribution of a member, the largest share of a tool's name coverage a
// member gives, and the members present.
type groupBlock struct {
	c       float32
	name    float32
	members uint32 // bit i: the i-th live member has postings in the block
}

// maxFoldedMembers bounds the size of a group whose block maxima are
// folded (members are bits of a uint32).
const maxFoldedMembers = 32

// indexGroups folds, for every word with synonyms, the block maxima of the
// word and its synonyms into one list, so that bounding a query's blocks
// reads one list per query word. It needs the index's document frequencies
// and size, seg's block maxima and seg.invName.
func (ix *Index) indexGroups(seg *segment) {
	nb := (len(seg.docs) + blockSize - 1) >> blockShift
	c := make([]float32, nb)
	name := make([]float32, nb)
	mask := make([]uint32, nb)
	seen := make([]uint64, (nb+63)/64) // blocks with an entry, in order
	nw := rankWords(len(seg.docs))
	var presentArena []uint64
	seg.groups = make(map[string]*groupBlocks, len(synonyms))
	for head, syns := range synonyms {
		if len(syns)+1 > maxFoldedMembers {
			continue
		}
		// Folding pays when two members or more are long lists; short
		// lists are cheap to bound one by one.
		long := 0
		for mi := range len(syns) + 1 {
			if l := seg.post[groupMember(head, syns, mi)]; l != nil && l.blocks != nil && ix.live(mi, int32(len(l.ps))) {
				long++
			}
		}
		if long < 2 {
			continue
		}
		live, n := 0, 0
		add := func(i uint32, v float32, bit uint32) {
			if mask[i] == 0 {
				seen[i/64] |= 1 << (i % 64)
				n++
			}
			c[i] = max(c[i], v)
			mask[i] |= bit
		}
		for mi := range len(syns) + 1 {
			l := seg.post[groupMember(head, syns, mi)]
			if l == nil || !ix.live(mi, int32(len(l.ps))) {
				continue
			}
			weight := 1.0
			if mi > 0 {
				weight = ix.w.Synonym
			}
			idf := weight * ix.idf(int32(len(l.ps)))
			w, fidf := float32(idf*(ix.w.K1+1)), float32(idf)
			for _, d := range l.names() {
				name[d>>blockShift] = max(name[d>>blockShift], fidf*seg.invName[d])
			}
			bit := uint32(1) << live
			live++
			if l.blocks != nil {
				k := 0
				for wi, rk := range seg.ranks[l.rankAt : int(l.rankAt)+nw] {
					for t := rk.bits; t != 0; t &= t - 1 {
						add(uint32(wi*64+bits.TrailingZeros64(t)), w*l.blocks[k].sat, bit)
						k++
					}
				}
			} else {
				for _, p := range l.ps {
					add(p.doc()>>blockShift, w*p.sat, bit)
				}
			}
		}
		gb := &groupBlocks{live: live, blocks: make([]groupBlock, 0, n), present: carve(&presentArena, seen, 1<<10)}
		for wi, word := range seen {
			for ; word != 0; word &= word - 1 {
				i := uint32(wi*64 + bits.TrailingZeros64(word))
				gb.blocks = append(gb.blocks, groupBlock{c: c[i] * foldSlack, name: name[i] * foldSlack, members: mask[i]})
				c[i], name[i], mask[i] = 0, 0, 0
			}
			seen[wi] = 0
		}
		seg.groups[head] = gb
	}
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
			w := seg.ranks[int(l.rankAt)+int(b/64)]
			k := int(w.before) + bits.OnesCount64(w.bits&(1<<(b%64)-1))
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

// foldSlack widens a folded maximum for the two ways of rounding the
// saturated frequency of a short list.
const foldSlack = 1.00001
