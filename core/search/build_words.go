package search

import "math/bits"

// wordTable maps short ASCII words, as written, to their terms. It is the
// build analyser's cache of words: an open-addressing table whose keys are
// the words' bytes packed into two machine words, so that looking a word up
// costs a multiplication and a comparison or two, and no memory outside
// the slot.
type wordTable struct {
	slots []wordSlot // a power of two of them, at most half used
	shift uint       // 64 - log2(len(slots))
	used  int
	refs  []termRef // the terms of every word, each word's back to back
}

// wordSlot holds one word: its bytes, zero-padded (words hold no zero
// byte, and an empty slot has key {0, 0}), and where its terms are in
// wordTable.refs.
type wordSlot struct {
	k0, k1 uint64
	off, n uint32
}

// maxTableWord is the longest word a wordTable holds.
const maxTableWord = 16

func newWordTable(words int) wordTable {
	n, shift := 64, uint(64-6)
	for n < 2*words {
		n, shift = 2*n, shift-1
	}
	return wordTable{slots: make([]wordSlot, n), shift: shift}
}

// packWord returns the bytes of a word of at most maxTableWord bytes as two
// little-endian machine words.
func packWord(w string) (k0, k1 uint64) {
	for i := 0; i < len(w) && i < 8; i++ {
		k0 |= uint64(w[i]) << (8 * i)
	}
	for i := 8; i < len(w); i++ {
		k1 |= uint64(w[i]) << (8 * (i - 8))
	}
	return k0, k1
}

// home is the slot where a search for the word packed as k0, k1 starts:
// the top bits of a multiplicative hash, which depend on every bit of the
// word.
func (t *wordTable) home(k0, k1 uint64) int {
	h := (k0 ^ bits.RotateLeft64(k1*0x9e3779b97f4a7c15, 31)) * 0xbf58476d1ce4e5b9
	return int(h >> t.shift)
}

// lookup returns the terms of the word packed as k0, k1.
func (t *wordTable) lookup(k0, k1 uint64) ([]termRef, bool) {
	mask := len(t.slots) - 1
	for i := t.home(k0, k1); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.k0 == k0 && s.k1 == k1 {
			return t.refs[s.off : s.off+s.n], true
		}
		if s.k0 == 0 {
			return nil, false
		}
	}
}

// add records the terms of the word packed as k0, k1, which is not in the
// table yet.
func (t *wordTable) add(k0, k1 uint64, refs []termRef) {
	if 2*(t.used+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]wordSlot, 2*len(old))
		t.shift--
		for _, s := range old {
			if s.k0 != 0 {
				t.place(s)
			}
		}
	}
	t.place(wordSlot{k0: k0, k1: k1, off: uint32(len(t.refs)), n: uint32(len(refs))})
	t.refs = append(t.refs, refs...)
	t.used++
}

func (t *wordTable) place(s wordSlot) {
	mask := len(t.slots) - 1
	i := t.home(s.k0, s.k1)
	for t.slots[i].k0 != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}
