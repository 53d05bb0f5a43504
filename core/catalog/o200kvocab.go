package catalog

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"strconv"
	"strings"
)

// o200kVocab is the o200k_base vocabulary: the bytes of every token, and
// an open-addressing table from a token's bytes to its rank. Ranks are
// dense (the tokens are numbered 0 to n-1), so the bytes of all tokens are
// one string in rank order, and the table holds ranks only.
//
// For the 199,998 tokens of o200k_base this is about 4.3 MB: 1.4 MB of
// token bytes, 0.8 MB of token ends and a 2 MiB table.
type o200kVocab struct {
	// blob is the bytes of every token, in rank order.
	blob string
	// ends[r] is where token r ends in blob; it starts where token r-1
	// ends (token 0 at 0).
	ends []uint32
	// slots is the table, its length a power of two: 0 for an empty slot,
	// else the rank plus one in the low o200kRankBits bits and a tag of
	// the token's hash above them, so that most probes that miss do not
	// read the token's bytes.
	slots []uint32
	seed  maphash.Seed
	// maxLen is the length of the longest token: no longer text is one.
	maxLen int
}

const (
	// o200kRankBits is how many bits of a slot hold the rank plus one;
	// it bounds the size of a vocabulary the table can hold.
	o200kRankBits = 18
	o200kRankMask = 1<<o200kRankBits - 1
	// noRank is the rank of text that is not a token.
	noRank = ^uint32(0)
)

// parseO200kVocab reads a vocabulary in the tiktoken format: one token a
// line, its bytes in standard base64, a space, and its rank. Ranks must be
// 0, 1, 2, ... in order, and no token may appear twice. size, the size
// of the input if known (else 0), sizes the vocabulary's slices: in the
// o200k_base file a line averages 18 bytes, and a token's bytes are 39% of
// its line.
func parseO200kVocab(r io.Reader, size int64) (*o200kVocab, error) {
	v := &o200kVocab{seed: maphash.MakeSeed()}
	var blob strings.Builder
	if size > 0 && size < 1<<30 {
		v.ends = make([]uint32, 0, size/17)
		blob.Grow(int(size * 2 / 5))
	}
	var tok []byte
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		lineNo := len(v.ends) + 1
		b64, rank, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			return nil, fmt.Errorf("vocabulary line %d: want \"base64 rank\", got %q", lineNo, line)
		}
		n, err := strconv.ParseUint(string(rank), 10, 32)
		if err != nil || n != uint64(len(v.ends)) {
			return nil, fmt.Errorf("vocabulary line %d: rank %q, want %d (ranks must count up from 0)", lineNo, rank, len(v.ends))
		}
		if len(v.ends) >= o200kRankMask-1 {
			return nil, fmt.Errorf("vocabulary line %d: more than %d tokens", lineNo, o200kRankMask-1)
		}
		tok, err = base64.StdEncoding.AppendDecode(tok[:0], b64)
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("vocabulary line %d: token %q is not base64 of at least one byte", lineNo, b64)
		}
		blob.Write(tok)
		v.ends = append(v.ends, uint32(blob.Len()))
		v.maxLen = max(v.maxLen, len(tok))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the vocabulary: %w", err)
	}
	if len(v.ends) == 0 {
		return nil, fmt.Errorf("the vocabulary has no tokens")
	}
	v.blob = blob.String()
	// A table at most half full: a lookup that misses, the most common
	// kind while merging, probes about two slots.
	slots := 1
	for slots < 2*len(v.ends) {
		slots *= 2
	}
	v.slots = make([]uint32, slots)
	mask := uint64(slots - 1)
	for r := range uint32(len(v.ends)) {
		t := v.token(r)
		h := maphash.String(v.seed, t)
		i := h & mask
		for ; v.slots[i] != 0; i = (i + 1) & mask {
			if v.token(v.slots[i]&o200kRankMask-1) == t {
				return nil, fmt.Errorf("vocabulary line %d: token %q already has rank %d", r+1, t, v.slots[i]&o200kRankMask-1)
			}
		}
		v.slots[i] = tagOf(h) | (r + 1)
	}
	return v, nil
}

// tagOf is the part of a token's hash its slot keeps.
func tagOf(h uint64) uint32 {
	return uint32(h>>(64-(32-o200kRankBits))) << o200kRankBits
}

// token returns the bytes of the token of rank r.
func (v *o200kVocab) token(r uint32) string {
	start := uint32(0)
	if r > 0 {
		start = v.ends[r-1]
	}
	return v.blob[start:v.ends[r]]
}

// rank returns the rank of the token s, or noRank if s is not one.
func (v *o200kVocab) rank(s string) uint32 {
	if len(s) > v.maxLen || s == "" {
		return noRank
	}
	h := maphash.String(v.seed, s)
	tag := tagOf(h)
	mask := uint64(len(v.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := v.slots[i]
		if e == 0 {
			return noRank
		}
		if e&^o200kRankMask == tag {
			if r := e&o200kRankMask - 1; v.token(r) == s {
				return r
			}
		}
	}
}

// size is the number of bytes the vocabulary holds on the heap.
func (v *o200kVocab) size() int {
	return len(v.blob) + 4*len(v.ends) + 4*len(v.slots)
}

// merge returns the number of tokens byte-pair merging makes of one
// piece of o200kSplit that is not itself a token. Merging starts from the
// piece's bytes and repeatedly joins the two neighbouring parts whose join
// is the token of lowest rank (the leftmost such pair when the same token
// could be made at several places) until no two neighbours join into a
// token; the parts left are the tokens.
//
// A piece of 2 GiB or more, past the offsets mergeHeap keeps, is not
// merged: it counts a token per four bytes.
func (v *o200kVocab) merge(p string) int {
	switch {
	case len(p) <= maxScanMerge:
		return v.mergeScan(p)
	case len(p) < math.MaxInt32:
		return v.mergeHeap(p)
	default:
		return (len(p) + 3) / 4
	}
}

// maxScanMerge is the longest piece mergeScan is given: it searches all
// the pairs for each merge, which is quadratic but, on short pieces,
// faster than a heap, and it needs no allocation.
const maxScanMerge = 64

// mergeScan counts the parts merging leaves of p, len(p) <= maxScanMerge,
// searching all the pairs for the lowest rank at each merge.
func (v *o200kVocab) mergeScan(p string) int {
	// starts[k] is where part k begins; starts[parts] is len(p).
	// ranks[k] is the rank of parts k and k+1 joined.
	var starts [maxScanMerge + 1]uint8
	var ranks [maxScanMerge]uint32
	parts := len(p)
	for i := range parts + 1 {
		starts[i] = uint8(i)
	}
	pair := func(k int) uint32 {
		if k+2 > parts {
			return noRank
		}
		return v.rank(p[starts[k]:starts[k+2]])
	}
	for k := range parts - 1 {
		ranks[k] = pair(k)
	}
	for parts > 1 {
		best, at := noRank, -1
		for k, r := range ranks[:parts-1] {
			if r < best {
				best, at = r, k
			}
		}
		if at < 0 {
			break
		}
		// Part at+1 joins part at.
		copy(starts[at+1:], starts[at+2:parts+1])
		if at+2 < parts {
			copy(ranks[at+1:], ranks[at+2:parts-1])
		}
		parts--
		if at < parts-1 {
			ranks[at] = pair(at)
		}
		if at > 0 {
			ranks[at-1] = pair(at - 1)
		}
	}
	return parts
}

// mergeHeap counts the parts merging leaves of p in O(n log n) for n
// bytes: the parts are a linked list over the byte offsets where they
// begin, and the pairs that join into a token wait in a min-heap ordered
// by rank, then offset (the leftmost first). A pair whose rank has
// changed since it was pushed (its right part grew, or its left part
// joined the one before) is dropped when it comes up. It uses about
// 20 bytes a byte of p, for as long as it runs.
func (v *o200kVocab) mergeHeap(p string) int {
	n := len(p)
	// next[i] is where the part that begins at i ends (-1 once the part
	// has joined the one before it), prev[i] where the part before it
	// begins; rank[i] is the rank of the part at i joined with the one
	// after it. Offset n closes the list.
	next := make([]int32, n+1)
	prev := make([]int32, n+1)
	rank := make([]uint32, n+1)
	for i := range next {
		next[i], prev[i], rank[i] = int32(i+1), int32(i-1), noRank
	}
	pair := func(i int32) uint32 {
		j := next[i]
		if j >= int32(n) {
			return noRank // the part at i is the last
		}
		return v.rank(p[i:next[j]])
	}
	h := make(mergeQueue, 0, n)
	for i := range int32(n - 1) {
		if r := pair(i); r != noRank {
			rank[i] = r
			h = append(h, uint64(r)<<32|uint64(i))
		}
	}
	h.init()
	parts := n
	for len(h) > 0 {
		top := h.pop()
		i, r := int32(uint32(top)), uint32(top>>32)
		if rank[i] != r {
			continue // stale: the part at i has changed or joined another
		}
		j := next[i]
		k := next[j]
		next[i], next[j], rank[j] = k, -1, noRank
		prev[k] = i
		parts--
		for _, b := range [2]int32{i, prev[i]} {
			if b < 0 {
				continue
			}
			rank[b] = pair(b)
			if rank[b] != noRank {
				h.push(uint64(rank[b])<<32 | uint64(b))
			}
		}
	}
	return parts
}

// mergeQueue is a binary min-heap of pairs, each its rank in the high 32
// bits and its offset in the low 32, so that comparing two numbers orders
// them by rank, then offset.
type mergeQueue []uint64

func (q mergeQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *mergeQueue) push(x uint64) {
	*q = append(*q, x)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (q *mergeQueue) pop() uint64 {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	*q = h[:last]
	q.down(0)
	return top
}

func (q mergeQueue) down(i int) {
	for {
		small := i
		if l := 2*i + 1; l < len(q) && q[l] < q[small] {
			small = l
		}
		if r := 2*i + 2; r < len(q) && q[r] < q[small] {
			small = r
		}
		if small == i {
			return
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
}
