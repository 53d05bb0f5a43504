package files

import (
	"bytes"
	"math"
	"math/bits"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file derives a prefilter from a parsed regular expression: a few
// sequences of byte classes of which every match must contain at least one
// (for [A-Z]{3}[0-9]{2}, the five classes themselves; a class may repeat,
// as in [a-z]+[0-9]). A scan finds them fast where Go's regexp package is
// slow on a pattern with no literal to search for: with bytes.IndexByte
// on a rare byte that each sequence holds, else bit-parallel (shift-and),
// a few cycles a byte. The prefilter only nominates lines; the real regexp
// decides, so results are those of the regexp alone.
//
// The analysis is conservative: when it cannot tell what a piece of the
// pattern matches (a class with many runes outside ASCII, ".", a
// repetition of something longer than one byte) it knows nothing of that
// piece, and a pattern it knows nothing of gets no prefilter.

const (
	// maxAlts bounds how many sequences one set holds.
	maxAlts = 16
	// maxSeqLen bounds one sequence, and all sequences of the final
	// prefilter together: one bit of a uint64 each.
	maxSeqLen = 64
)

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) remove(c byte)   { s[c>>6] &^= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// class is one position of a sequence: the bytes it accepts and the log of
// the share of typical text they make up. A position with plus takes one
// or more bytes of the set, one without exactly one.
type class struct {
	set  byteSet
	logp float64
	plus bool
}

func newClass(set byteSet) class {
	p := 0.0
	for w, x := range set {
		for x != 0 {
			b := bits.TrailingZeros64(x)
			x &= x - 1
			p += byteFreq(byte(w*64 + b))
		}
	}
	if p > 1 {
		p = 1
	}
	if p <= 0 {
		return class{set: set, logp: math.Inf(-1)}
	}
	return class{set: set, logp: math.Log(p)}
}

func byteClass(bs ...byte) class {
	var s byteSet
	for _, b := range bs {
		s.add(b)
	}
	return newClass(s)
}

// byteFreq is a rough share of byte c in source code and prose (measured
// on Go's own source, rounded), used only to prefer rare classes over
// common ones.
func byteFreq(c byte) float64 {
	switch {
	case c == ' ':
		return 0.11
	case c == '\t':
		return 0.05
	case c == '\n':
		return 0.035
	case strings.IndexByte("etrnosia", c) >= 0:
		return 0.05
	case strings.IndexByte("ldcufphmg", c) >= 0:
		return 0.018
	case 'a' <= c && c <= 'z':
		return 0.004
	case 'A' <= c && c <= 'Z':
		return 0.003
	case '0' <= c && c <= '9':
		return 0.002
	case strings.IndexByte(`.,"/()`, c) >= 0:
		return 0.015
	case strings.IndexByte("=:{}", c) >= 0:
		return 0.009
	case strings.IndexByte(`_-*![]%&\;'+<|>`, c) >= 0:
		return 0.0015
	case c == '\r':
		return 0.002
	case c < 0x20 || c == 0x7f:
		return 0.00001
	case c < 0x80:
		return 0.0002
	}
	return 0.0005
}

// classSeq is a sequence of classes that matches a string of as many bytes
// (more, with plus positions).
type classSeq []class

func (q classSeq) logp() float64 {
	s := 0.0
	for _, c := range q {
		s += c.logp
	}
	return s
}

// seqSet is a set of sequences; nil means nothing is known.
type seqSet []classSeq

// prob is the chance that one of the sequences starts at a given position.
func (s seqSet) prob() float64 {
	if s == nil {
		return 1
	}
	p := 0.0
	for _, q := range s {
		p += math.Exp(q.logp())
	}
	return p
}

func (s seqSet) maxLen() int {
	n := 0
	for _, q := range s {
		n = max(n, len(q))
	}
	return n
}

// known returns s, or nil when s tells nothing: it holds the empty
// sequence, or nothing at all.
func known(s seqSet) seqSet {
	if len(s) == 0 {
		return nil
	}
	for _, q := range s {
		if len(q) == 0 {
			return nil
		}
	}
	return s
}

// cross returns every sequence of a followed by one of b, or false when
// there would be too many.
func cross(a, b seqSet) (seqSet, bool) {
	if len(a)*len(b) > maxAlts {
		return nil, false
	}
	out := make(seqSet, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			q := make(classSeq, 0, len(x)+len(y))
			q = append(append(q, x...), y...)
			out = append(out, q)
		}
	}
	return out, true
}

// trim shortens each sequence of s to at most n classes: its first n
// (where 'p'), its last n ('s') or its most selective n ('i').
func trim(s seqSet, n int, where byte) seqSet {
	if s == nil || s.maxLen() <= n {
		return s
	}
	out := make(seqSet, len(s))
	for i, q := range s {
		switch {
		case len(q) <= n:
			out[i] = q
		case where == 'p':
			out[i] = q[:n]
		case where == 's':
			out[i] = q[len(q)-n:]
		default:
			best, bestP := 0, math.Inf(1)
			for j := 0; j+n <= len(q); j++ {
				if p := q[j : j+n].logp(); p < bestP {
					best, bestP = j, p
				}
			}
			out[i] = q[best : best+n]
		}
	}
	return out
}

// union returns the sequences of all sets, or nil when one of them is
// unknown or there would be too many.
func union(sets ...seqSet) seqSet {
	var out seqSet
	for _, s := range sets {
		if s == nil || len(out)+len(s) > maxAlts {
			return nil
		}
		out = append(out, s...)
	}
	return out
}

// prune drops the sequences of s that contain another one: a text holds
// one of the set as well without them. It is for sets that every match
// contains one of, not for exact, prefix or suffix sets.
func prune(s seqSet) seqSet {
	out := s[:0:0]
	for i, a := range s {
		redundant := false
		for j, b := range s {
			// Of two equal sequences, the first stays.
			if i != j && contains(a, b) && !(j > i && contains(b, a)) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, a)
		}
	}
	return out
}

// contains reports whether every string a matches holds one that b
// matches.
func contains(a, b classSeq) bool {
	for k := 0; k+len(b) <= len(a); k++ {
		ok := true
		for j, cb := range b {
			ca := a[k+j]
			inner := j > 0 && j < len(b)-1
			if (ca.plus && inner && !cb.plus) || !subset(ca.set, cb.set) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func subset(a, b byteSet) bool {
	for i := range a {
		if a[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}

// bestOf returns the most selective of the known sets, as a set that
// every match contains one of.
func bestOf(sets ...seqSet) seqSet {
	var best seqSet
	bestP := 2.0
	for _, s := range sets {
		if s = known(s); s == nil {
			continue
		}
		s = prune(s)
		if p := s.prob(); p < bestP {
			best, bestP = s, p
		}
	}
	return best
}

// facts is what the analysis knows of the strings a (sub)expression
// matches.
type facts struct {
	// exact, when exactOK, holds every string matched (as classes, so
	// it may hold more). It may hold the empty sequence.
	exact   seqSet
	exactOK bool
	// Every match starts with one of prefix, ends with one of suffix and
	// contains one of inner; nil sets are unknown.
	prefix, suffix, inner seqSet
}

func exactly(s ...classSeq) facts { return facts{exact: s, exactOK: true} }

// empty is what a zero-width expression matches.
var empty = exactly(classSeq{})

func (f facts) prefixes() seqSet {
	if f.exactOK {
		return known(f.exact)
	}
	return f.prefix
}

func (f facts) suffixes() seqSet {
	if f.exactOK {
		return known(f.exact)
	}
	return f.suffix
}

// best is the most selective set every match contains one of.
func (f facts) best() seqSet {
	return bestOf(f.prefixes(), f.suffixes(), f.inner)
}

// concat is what a match of a followed by a match of b is known to be.
func concat(a, b facts) facts {
	if a.exactOK && b.exactOK {
		if e, ok := cross(a.exact, b.exact); ok && e.maxLen() <= maxSeqLen {
			return exactly(e...)
		}
	}
	var r facts
	if a.exactOK {
		r.prefix = known(trim(a.exact, maxSeqLen, 'p'))
		if bp := b.prefixes(); bp != nil {
			if j, ok := cross(a.exact, bp); ok {
				r.prefix = known(trim(j, maxSeqLen, 'p'))
			}
		}
	} else {
		r.prefix = a.prefix
	}
	if b.exactOK {
		r.suffix = known(trim(b.exact, maxSeqLen, 's'))
		if as := a.suffixes(); as != nil {
			if j, ok := cross(as, b.exact); ok {
				r.suffix = known(trim(j, maxSeqLen, 's'))
			}
		}
	} else {
		r.suffix = b.suffix
	}
	var joint seqSet
	if as, bp := a.suffixes(), b.prefixes(); as != nil && bp != nil {
		if j, ok := cross(as, bp); ok {
			joint = trim(j, maxSeqLen, 'i')
		}
	}
	r.inner = bestOf(a.best(), b.best(), r.prefix, r.suffix, joint)
	return r
}

// alternate is what a match of one of fs is known to be.
func alternate(fs []facts) facts {
	all := true
	var ex seqSet
	for _, f := range fs {
		if !f.exactOK {
			all = false
			break
		}
		ex = append(ex, f.exact...)
	}
	if all && len(ex) <= maxAlts {
		return exactly(ex...)
	}
	var r facts
	pre, suf, in := make([]seqSet, len(fs)), make([]seqSet, len(fs)), make([]seqSet, len(fs))
	for i, f := range fs {
		pre[i], suf[i], in[i] = f.prefixes(), f.suffixes(), f.best()
	}
	r.prefix, r.suffix, r.inner = union(pre...), union(suf...), union(in...)
	return r
}

// analyzer derives facts from a regexp. With assume, it takes the few
// runes outside ASCII that a class or a case variant adds to ASCII bytes
// (the Kelvin sign K that (?i)k also matches, say) to be absent from the
// text, and collects them in absent: its facts then hold only for texts
// without them.
type analyzer struct {
	assume bool
	absent []rune
}

// maxAbsent bounds the runes an analyzer assumes absent.
const maxAbsent = 4

// assumeAbsent adds rs to the runes assumed absent, or reports false.
func (a *analyzer) assumeAbsent(rs []rune) bool {
	if !a.assume {
		return false
	}
	n := len(a.absent)
	for _, r := range rs {
		if r == utf8.RuneError || !utf8.ValidRune(r) {
			// U+FFFD also matches any invalid byte.
			return false
		}
		if !slices.Contains(a.absent, r) {
			n++
		}
	}
	if n > maxAbsent {
		return false
	}
	for _, r := range rs {
		if !slices.Contains(a.absent, r) {
			a.absent = append(a.absent, r)
		}
	}
	return true
}

// analyze returns what re's matches are known to be.
func (a *analyzer) analyze(re *syntax.Regexp) facts {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return empty
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		f := empty
		for _, r := range re.Rune {
			f = concat(f, a.runeFacts(r, fold))
		}
		return f
	case syntax.OpCharClass:
		var s byteSet
		var wide []rune // the members outside ASCII
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for c := lo; c <= hi; c++ {
				if c < utf8.RuneSelf {
					s.add(byte(c))
					continue
				}
				if len(wide) == maxAbsent {
					return facts{}
				}
				wide = append(wide, c)
			}
		}
		if len(wide) > 0 && (s == byteSet{} || !a.assumeAbsent(wide)) {
			// Runes of several bytes, or an invalid byte.
			return facts{}
		}
		return exactly(classSeq{newClass(s)})
	case syntax.OpCapture:
		return a.analyze(re.Sub[0])
	case syntax.OpConcat:
		f := empty
		for _, sub := range re.Sub {
			f = concat(f, a.analyze(sub))
		}
		return f
	case syntax.OpAlternate:
		fs := make([]facts, len(re.Sub))
		for i, sub := range re.Sub {
			fs[i] = a.analyze(sub)
		}
		return alternate(fs)
	case syntax.OpQuest:
		return alternate([]facts{empty, a.analyze(re.Sub[0])})
	case syntax.OpPlus:
		return repeated(a.analyze(re.Sub[0]))
	case syntax.OpStar:
		if f := repeated(a.analyze(re.Sub[0])); f.exactOK {
			return alternate([]facts{empty, f})
		}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return repeated(a.analyze(re.Sub[0]))
		}
	}
	// OpStar, OpAnyChar, OpAnyCharNotNL, OpNoMatch and what else may come.
	return facts{}
}

// repeated is what one or more matches of f in a row are known to be.
func repeated(f facts) facts {
	if f.exactOK && len(f.exact) == 1 && len(f.exact[0]) == 1 {
		c := f.exact[0][0]
		c.plus = true
		return exactly(classSeq{c})
	}
	return facts{prefix: f.prefixes(), suffix: f.suffixes(), inner: f.best()}
}

// runeFacts is what a literal rune matches: its UTF-8 bytes, or with fold
// the bytes of any of its case variants, when they are all ASCII or the
// others may be assumed absent.
func (a *analyzer) runeFacts(r rune, fold bool) facts {
	if r == utf8.RuneError || !utf8.ValidRune(r) {
		// U+FFFD also matches any invalid byte.
		return facts{}
	}
	if fold && r < utf8.RuneSelf {
		var s byteSet
		var wide []rune
		for f := r; ; {
			if f < utf8.RuneSelf {
				s.add(byte(f))
			} else {
				wide = append(wide, f)
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
		if len(wide) > 0 && !a.assumeAbsent(wide) {
			return facts{}
		}
		return exactly(classSeq{newClass(s)})
	}
	if fold && unicode.SimpleFold(r) != r {
		return facts{}
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	q := make(classSeq, n)
	for i := range n {
		q[i] = byteClass(buf[i])
	}
	return exactly(q)
}

// maxRare bounds the bytes a rare-byte search looks for, and maxRareClass
// the bytes one class may have to be used for it.
const (
	maxRare      = 4
	maxRareClass = 3
	// maxRareProb is the largest share of text the rare bytes may make
	// up together: above it, stopping at each costs more than shift-and.
	maxRareProb = 0.04
)

// classScan finds the sequences of a prefilter. When every sequence has a
// position that only a few rare bytes can take, it looks for those bytes
// with bytes.IndexByte, which is fast, and checks the sequences around
// them; otherwise it reads every byte, with shift-and: bit i of the state
// is set when the bytes just read match the sequence position that bit
// stands for, up to it.
type classScan struct {
	masks  [256]uint64 // the positions each byte may take
	init   uint64      // first positions of the sequences
	accept uint64      // last positions
	prob   float64     // the chance of a candidate at one position
	// repeats holds the plus positions each byte may stay in; plus says
	// there are some.
	repeats [256]uint64
	plus    bool
	// single: there is one sequence, searched with shift-or, one
	// operation less a byte: nots holds the complements of masks.
	single bool
	nots   [256]uint64
	// rare are the bytes a rare-byte search looks for, and at[i] the
	// sequences that may hold rare[i], where.
	rare []byte
	at   [][]seqAt
}

// seqAt is a window of fixed length of a sequence of a classScan: the bit
// of its first position, its length and where in it a rare byte is.
type seqAt struct{ bit, n, off int }

// scanState carries a rare-byte search from one call of find to the next:
// where each rare byte is next (len(buf) for nowhere), or -1 when unknown.
type scanState struct{ next [maxRare]int }

func newScanState() scanState {
	var st scanState
	for i := range st.next {
		st.next[i] = -1
	}
	return st
}

// newClassScan returns a scan for what every match of re contains, or nil
// when too little is known to make one. noNewline drops '\n' from every
// class, for regexps run one line at a time. With assume, the scan holds
// only for texts without the runes it returns (see analyzer).
func newClassScan(re *syntax.Regexp, noNewline, assume bool) (*classScan, []rune) {
	a := &analyzer{assume: assume}
	set := a.analyze(re).best()
	if set == nil {
		return nil, nil
	}
	total := 0
	for _, q := range set {
		total += len(q)
	}
	if total > maxSeqLen {
		set = trim(set, maxSeqLen/len(set), 'i')
	}
	if noNewline {
		for _, q := range set {
			for i := range q {
				if q[i].set.has('\n') {
					s := q[i].set
					s.remove('\n')
					plus := q[i].plus
					q[i] = newClass(s)
					q[i].plus = plus
				}
			}
		}
	}
	sc := &classScan{prob: set.prob()}
	bit := 0
	var seqs []seqAt
	for _, q := range set {
		sc.init |= 1 << bit
		seqs = append(seqs, seqAt{bit: bit, n: len(q)})
		for _, c := range q {
			for b := range 256 {
				if c.set.has(byte(b)) {
					sc.masks[b] |= 1 << bit
					if c.plus {
						sc.repeats[b] |= 1 << bit
						sc.plus = true
					}
				}
			}
			bit++
		}
		sc.accept |= 1 << (bit - 1)
	}
	if sc.single = len(set) == 1 && !sc.plus; sc.single {
		for b := range sc.masks {
			sc.nots[b] = ^sc.masks[b]
		}
	}
	sc.planRare(set, seqs)
	return sc, a.absent
}

// planRare sets up a rare-byte search when it pays: in each sequence, the
// position with the rarest class of at most maxRareClass bytes.
func (sc *classScan) planRare(set seqSet, seqs []seqAt) {
	var rare []byte
	var at [][]seqAt
	for k, q := range set {
		best, bestP := -1, maxRareProb
		for j, c := range q {
			n, p := 0, 0.0
			for b := range 256 {
				if c.set.has(byte(b)) {
					n++
					p += byteFreq(byte(b))
				}
			}
			if n <= maxRareClass && p < bestP {
				best, bestP = j, p
			}
		}
		if best < 0 {
			return
		}
		// The window checked around the rare byte: no plus position
		// inside, where the length would vary; one at an edge matches
		// one byte there.
		a, b := best, best+1
		if !q[best].plus {
			for a > 0 && !q[a-1].plus {
				a--
			}
			if a > 0 {
				a--
			}
			for b < len(q) && !q[b].plus {
				b++
			}
			if b < len(q) {
				b++
			}
		}
		sa := seqAt{bit: seqs[k].bit + a, n: b - a, off: best - a}
		for b := range 256 {
			if !q[best].set.has(byte(b)) {
				continue
			}
			i := bytes.IndexByte(rare, byte(b))
			if i < 0 {
				if len(rare) == maxRare {
					return
				}
				rare, at = append(rare, byte(b)), append(at, nil)
				i = len(rare) - 1
			}
			at[i] = append(at[i], sa)
		}
	}
	p := 0.0
	for _, b := range rare {
		p += byteFreq(b)
	}
	if p <= maxRareProb {
		sc.rare, sc.at = rare, at
	}
}

// find returns the index of a byte of the first place in buf[from:] where
// one of the sequences is, or -1. With a rare-byte search, st carries what
// it learnt to the next call, which must not have a smaller from.
func (sc *classScan) find(buf []byte, from int, st *scanState) int {
	if sc.rare != nil {
		return sc.findRare(buf, from, st)
	}
	buf = buf[from:]
	if sc.single {
		// Bit i is clear when the bytes just read match the first i+1
		// positions.
		nots, accept := &sc.nots, sc.accept
		d := ^uint64(0)
		for i, c := range buf {
			d = d<<1 | nots[c]
			if d&accept == 0 {
				return from + i
			}
		}
		return -1
	}
	masks := &sc.masks
	init, accept := sc.init, sc.accept
	var d uint64
	if sc.plus {
		repeats := &sc.repeats
		for i, c := range buf {
			d = (d<<1|init)&masks[c] | d&repeats[c]
			if d&accept != 0 {
				return from + i
			}
		}
		return -1
	}
	for i, c := range buf {
		d = (d<<1 | init) & masks[c]
		if d&accept != 0 {
			return from + i
		}
	}
	return -1
}

func (sc *classScan) findRare(buf []byte, from int, st *scanState) int {
	next := st.next[:len(sc.rare)]
	for k, n := range next {
		if n < from {
			next[k] = indexByteFrom(buf, from, sc.rare[k])
		}
	}
	for {
		k := 0
		for j := 1; j < len(next); j++ {
			if next[j] < next[k] {
				k = j
			}
		}
		i := next[k]
		if i >= len(buf) {
			return -1
		}
		for _, sa := range sc.at[k] {
			if start := i - sa.off; start >= 0 && start+sa.n <= len(buf) && sc.seqAt(buf[start:start+sa.n], sa.bit) {
				return i
			}
		}
		next[k] = indexByteFrom(buf, i+1, sc.rare[k])
	}
}

// seqAt reports whether b matches the sequence whose first bit is bit.
func (sc *classScan) seqAt(b []byte, bit int) bool {
	for j, c := range b {
		if sc.masks[c]&(1<<(bit+j)) == 0 {
			return false
		}
	}
	return true
}

// indexByteFrom returns the index of the first c in buf[from:], or
// len(buf).
func indexByteFrom(buf []byte, from int, c byte) int {
	if i := bytes.IndexByte(buf[from:], c); i >= 0 {
		return from + i
	}
	return len(buf)
}
