package search

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
// saturated term frequency (wtf / (wtf + k1)) and where the block's
// postings start in the list (they end where the next entry's start).
type blockMax struct {
	block uint32
	sat   float32
	start uint32
}

// indexBlocks computes, for every posting list of seg, the block maxima of
// a long list (saturated with k1) and the documents with the term in their
// name.
func indexBlocks(seg *segment, k1 float64) {
	kf := float32(k1)
	var nBlocks, nNames int
	for _, l := range seg.post {
		if len(l.ps) >= minBlockList {
			nBlocks += blockCount(l.ps)
		}
		for _, p := range l.ps {
			if p.fields&(1<<FieldName) != 0 {
				nNames++
			}
		}
	}
	// One backing array each, carved into the lists.
	blocks := make([]blockMax, 0, nBlocks)
	names := make([]uint32, 0, nNames)
	for _, l := range seg.post {
		start := len(names)
		for _, p := range l.ps {
			if p.fields&(1<<FieldName) != 0 {
				names = append(names, p.doc)
			}
		}
		l.names = names[start:len(names):len(names)]
		if len(l.ps) < minBlockList {
			continue
		}
		start = len(blocks)
		for j, p := range l.ps {
			b := p.doc >> blockShift
			sat := p.wtf / (p.wtf + kf)
			if n := len(blocks); n > start && blocks[n-1].block == b {
				blocks[n-1].sat = max(blocks[n-1].sat, sat)
			} else {
				blocks = append(blocks, blockMax{block: b, sat: sat, start: uint32(j)})
			}
		}
		l.blocks = blocks[start:len(blocks):len(blocks)]
	}
}

// blockCount is the number of blocks ps touches.
func blockCount(ps []posting) int {
	n := 0
	last := ^uint32(0)
	for _, p := range ps {
		if b := p.doc >> blockShift; b != last {
			n++
			last = b
		}
	}
	return n
}
