package search

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Index builds analyse documents with the same rules as analyze, but number
// each distinct term as they meet it, so that counting a document's terms
// and laying out postings index arrays instead of hashing strings. Each
// build goroutine has its own buildAnalyser and so its own numbering; a
// build merges them once at the end (see mergeDicts).

// termDict numbers distinct terms.
type termDict struct {
	ids   map[string]int32 // term → number
	terms []string         // number → term
}

// intern returns the number of term, numbering it if it is new.
func (d *termDict) intern(term string) int32 {
	id, ok := d.ids[term]
	if !ok {
		id = int32(len(d.terms))
		d.ids[term] = id
		d.terms = append(d.terms, term)
	}
	return id
}

// lookup returns the number of term, or -1 when it has none.
func (d *termDict) lookup(term string) int32 {
	if id, ok := d.ids[term]; ok {
		return id
	}
	return -1
}

// termRef is one analysed word as a term number: the build-time token.
type termRef struct {
	id     int32
	joined bool
}

// partInfo is what one lower-cased identifier part turns into: no term
// (id -1, a stop word), one term (id ≥ 0) or, for an abbreviation, the
// terms in buildAnalyser.abbr[-2-id]. stop records whether the part is a
// stop word, which decides how a word made only of stop words is read.
type partInfo struct {
	id   int32
	stop bool
}

// buildAnalyser is one build goroutine's analysis state: its term numbers,
// what each word part it has met turns into, remembered analyses of short
// texts, and the document being counted.
type buildAnalyser struct {
	dict  termDict
	short wordTable            // an ASCII word as written → its terms
	words map[string][]termRef // the same for words too long for short
	parts map[string]partInfo  // word part, or '#' and a joined word → terms
	abbr  [][]int32            // the terms of abbreviations, see partInfo
	memo  map[string][]termRef
	// Scratch space for one word or text.
	toks  []termRef
	weak  []termRef // the current name's weak parts (weakNamePart)
	buf   []byte
	ends  []int
	split []string
	gen   []token
	// The document being counted: seen[id] says whether term id occurs in
	// it, and where in cur.
	doc  uint32
	seen []seenTerm
	cur  []termFreq
	// Documents' term lists and name terms are carved out of these, so a
	// document costs no allocation of its own.
	tfArena   []termFreq
	strArena  []string
	hintArena []hintTerm
	lenArena  []uint16
	// The current document's hints: their lengths and terms.
	hintLens  []uint16
	hintTerms []hintTerm
	memoArena []termRef
	// The server terms of the last server met, numbered.
	srvTerms []string
	srvIDs   []int32
	// phrasings is set when documents carry their tools' own phrasings
	// (an index with written hints: see Index.phrased).
	phrasings bool
}

// newBuildAnalyser returns an analyser for about docs documents. Its maps
// start at the size they commonly reach, sparing their growth: the words of
// tool descriptions number in the thousands, and each tool's name adds a
// term or two of its own.
func newBuildAnalyser(docs int) *buildAnalyser {
	vocab := min(2*docs, 12000)
	return &buildAnalyser{
		dict:  termDict{ids: make(map[string]int32, vocab+docs)},
		short: newWordTable(vocab),
		words: make(map[string][]termRef, vocab/8),
		parts: make(map[string]partInfo, vocab),
		memo:  make(map[string][]termRef, vocab*3/4),
	}
}

// maxCachedWord is the longest word whose terms are remembered.
const maxCachedWord = 64

// analyse appends the terms of text to out: the terms analyze gives, in
// the same order, as numbers. Words are remembered when remember is set.
//
// It finds words as wordStart and wordEnd do, but reads an ASCII word once:
// the word's bytes are shifted into a 16-byte register as they are
// scanned, which gives the wordTable key of a short word without reading
// it again.
func (b *buildAnalyser) analyse(text string, out []termRef, remember bool) []termRef {
	n := len(text)
	for i := 0; i < n; {
		if c := text[i]; c < utf8.RuneSelf {
			if asciiClass[c] != classWord {
				i++
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !isWordRune(r) {
				i += size
				continue
			}
			j := wordEnd(text, i)
			out = b.otherWord(text[i:j], out)
			i = j
			continue
		}
		// An ASCII letter or digit starts a word.
		start := i
		j, lo, hi := scanASCIIWord(text, i)
		if j < n && (text[j] >= utf8.RuneSelf || j+1 < n && text[j+1] >= utf8.RuneSelf) {
			// A byte past ASCII, or a joiner before one: the word may go
			// on with letters that are past ASCII.
			if end := wordEnd(text, start); end > j {
				out = b.otherWord(text[start:end], out)
				i = end
				continue
			}
		}
		word := text[start:j]
		i = j
		if !remember || len(word) > maxCachedWord {
			out = b.asciiWord(word, out, remember)
			continue
		}
		if len(word) <= maxTableWord {
			k0, k1 := unshift(lo, hi, len(word))
			if refs, ok := b.short.lookup(k0, k1); ok {
				out = append(out, refs...)
				continue
			}
			at := len(out)
			out = b.asciiWord(word, out, true)
			b.short.add(k0, k1, out[at:])
			continue
		}
		if refs, ok := b.words[word]; ok {
			out = append(out, refs...)
			continue
		}
		at := len(out)
		out = b.asciiWord(word, out, true)
		b.words[strings.Clone(word)] = carve(&b.memoArena, out[at:], arenaChunk)
	}
	return out
}

// scanASCIIWord returns the end of the word of ASCII letters, digits and
// inner joiners that starts at i, and the word's last 16 bytes shifted
// into lo and hi (the last byte at the top of hi). It stops before a byte
// past ASCII, and before a joiner followed by one.
func scanASCIIWord(text string, i int) (j int, lo, hi uint64) {
	for j = i; j < len(text); j++ {
		c := text[j]
		if byteClass[c] != classWord {
			if byteClass[c] != classJoiner || j+1 >= len(text) || byteClass[text[j+1]] != classWord {
				break
			}
		}
		lo = lo>>8 | hi<<56
		hi = hi>>8 | uint64(c)<<56
	}
	return j, lo, hi
}

// byteClass is asciiClass for every byte: one past ASCII is neither a
// letter or digit nor a joiner, as far as it tells.
var byteClass = func() (c [256]uint8) {
	copy(c[:], asciiClass[:])
	return c
}()

// unshift turns the register analyse shifts a word of n ≤ maxTableWord
// bytes into (lo, hi, the last byte at the top) into the word packed as
// packWord packs it.
func unshift(lo, hi uint64, n int) (k0, k1 uint64) {
	s := uint(128 - 8*n)
	if n <= 8 {
		return hi >> (s - 64), 0
	}
	return lo>>s | hi<<(64-s), hi >> s
}

// otherWord appends the terms of a word that is not all ASCII.
func (b *buildAnalyser) otherWord(word string, out []termRef) []termRef {
	parts := splitIdentifier(word, b.split[:0])
	b.split = parts
	whole := ""
	if len(parts) > 1 {
		whole = strings.Join(parts, "")
	}
	b.gen = analyzeParts(nil, parts, whole, b.gen[:0])
	for _, tk := range b.gen {
		out = append(out, termRef{id: b.dict.intern(tk.term), joined: tk.joined})
	}
	return out
}

// asciiWord is analyzeASCII with term numbers: it splits the word into
// b.buf ('#', then the lower-cased parts back to back) and looks each part
// up once. The joined word is remembered when remember is set.
func (b *buildAnalyser) asciiWord(word string, out []termRef, remember bool) []termRef {
	buf, ends := splitASCIIInto(word, append(b.buf[:0], '#'), b.ends[:0])
	b.buf, b.ends = buf, ends
	n := len(ends)
	if n == 0 {
		return out
	}
	part := func(i int) []byte {
		start := 1
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	if n == 1 {
		return b.appendPart(b.part(part(0)), out)
	}
	allStop := true
	for i := 0; i < n && allStop; i++ {
		allStop = b.part(part(i)).stop
	}
	if allStop {
		// "to-do", "how-to": the joined word is the word.
		return b.appendPart(b.part(buf[1:ends[n-1]]), out)
	}
	for i := range n {
		out = b.appendPart(b.part(part(i)), out)
	}
	if len(buf)-1 <= 64 {
		key := buf[:ends[n-1]]
		if !remember {
			// A tool's name: its joined form is seldom another's.
			return append(out, termRef{id: b.dict.intern(string(key[1:])), joined: true})
		}
		p, ok := b.parts[string(key)]
		if !ok {
			k := string(key)
			p = partInfo{id: b.dict.intern(k[1:])}
			b.parts[k] = p
		}
		out = append(out, termRef{id: p.id, joined: true})
	}
	return out
}

// part returns what a lower-cased word part turns into.
func (b *buildAnalyser) part(p []byte) partInfo {
	if info, ok := b.parts[string(p)]; ok {
		return info
	}
	w := string(p)
	info := partInfo{id: -1, stop: stopWords[w]}
	if exp, ok := abbreviations[w]; ok {
		ids := make([]int32, len(exp))
		for i, e := range exp {
			ids[i] = b.dict.intern(stem(e))
		}
		info.id = int32(-2 - len(b.abbr))
		b.abbr = append(b.abbr, ids)
	} else if !info.stop {
		info.id = b.dict.intern(buildStem(w))
	}
	b.parts[w] = info
	return info
}

// buildStem is stem, without the stem cache for the words stem keeps as
// they are: those of two bytes or fewer and those not all letters.
func buildStem(w string) string {
	if len(w) <= 2 || !isAlpha(w) {
		return w
	}
	return stem(w)
}

func (b *buildAnalyser) appendPart(p partInfo, out []termRef) []termRef {
	switch {
	case p.id >= 0:
		return append(out, termRef{id: p.id})
	case p.id == -1:
		return out
	}
	for _, id := range b.abbr[-2-p.id] {
		out = append(out, termRef{id: id})
	}
	return out
}

// analyseText returns the terms of text. Short texts are remembered when
// memo is set: parameter names and descriptions repeat across tools, tool
// descriptions seldom do.
func (b *buildAnalyser) analyseText(text string, memo bool) []termRef {
	if !memo || len(text) > maxMemoText {
		b.toks = b.analyse(text, b.toks[:0], true)
		return b.toks
	}
	if toks, ok := b.memo[text]; ok {
		return toks
	}
	b.toks = b.analyse(text, b.toks[:0], true)
	toks := carve(&b.memoArena, b.toks, arenaChunk)
	b.memo[strings.Clone(text)] = toks
	return toks
}

// arenaChunk is how many elements the arenas that documents' lists are
// carved from get at a time.
const arenaChunk = 1 << 14

// carve copies src into the arena, starting a new one of chunk elements
// (or of src's length, if longer) when it is full, and returns the copy,
// capped so that appending to it cannot reach into the arena.
func carve[T any](arena *[]T, src []T, chunk int) []T {
	if len(*arena)+len(src) > cap(*arena) {
		*arena = make([]T, 0, max(chunk, len(src)))
	}
	start := len(*arena)
	*arena = append(*arena, src...)
	return (*arena)[start:len(*arena):len(*arena)]
}

// seenTerm is the last document a term occurred in, by the analyser's
// count, and where in that document's terms it is; and the number of
// documents the analyser found the term in.
type seenTerm struct {
	doc uint32
	at  int32
	df  int32
}

// addDF adds to df the number of documents the analyser found each term
// in, its terms numbered in df as remap says (as they are when remap is
// nil).
func (b *buildAnalyser) addDF(df, remap []int32) {
	for id := range min(len(b.seen), len(b.dict.terms)) {
		to := int32(id)
		if remap != nil {
			to = remap[id]
		}
		df[to] += b.seen[id].df
	}
}

// bump counts one more occurrence of term id in field f of the current
// document.
func (b *buildAnalyser) bump(a *analysed, id int32, f Field) {
	b.bumpRefs(a, []termRef{{id: id}}, f)
}

// bumpRefs counts one more occurrence of each term of refs in field f of
// the current document.
func (b *buildAnalyser) bumpRefs(a *analysed, refs []termRef, f Field) {
	a.lens[f] += len(refs)
	seen, cur, doc := b.seen, b.cur, b.doc
	for _, r := range refs {
		if int(r.id) >= len(seen) {
			n := max(2*len(seen), len(b.dict.terms), 1024)
			seen = append(seen, make([]seenTerm, n-len(seen))...)
			b.seen = seen
		}
		s := &seen[r.id]
		if s.doc != doc {
			s.doc, s.at = doc, int32(len(cur))
			s.df++
			cur = append(cur, termFreq{id: r.id})
		}
		if c := &cur[s.at].tf[f]; *c < math.MaxUint16 {
			*c++
		}
	}
	b.cur = cur
}

// serverIDs numbers a server's terms, remembering the last server: a
// build goroutine meets the tools of one server one after another.
func (b *buildAnalyser) serverIDs(terms []string) []int32 {
	same := len(terms) == len(b.srvTerms) && (len(terms) == 0 || &terms[0] == &b.srvTerms[0])
	if !same {
		b.srvTerms = terms
		b.srvIDs = b.srvIDs[:0]
		for _, t := range terms {
			b.srvIDs = append(b.srvIDs, b.dict.intern(t))
		}
	}
	return b.srvIDs
}

// tool analyses one tool into term counts per field, its terms numbered in
// b.dict.
func (b *buildAnalyser) tool(t *catalog.Tool, serverTerms []string) analysed {
	a := analysed{tool: t}
	b.doc++
	b.cur = b.cur[:0]
	addText := func(f Field, text string) {
		if text == "" {
			return
		}
		b.bumpRefs(&a, b.analyseText(text, f != FieldDescription), f)
	}
	// Name: parts and the joined form. Names are all different, so they
	// are not remembered.
	var nameIDs [16]int32
	nameTerms := nameIDs[:0]
	b.toks = b.analyse(t.Name, b.toks[:0], false)
	// A number or a single character says little about what a tool
	// does: it goes with the description. A verb adds its action class
	// (see actions.go), which does not count towards the name's length.
	name, weak := b.toks[:0], b.weak[:0]
	var actions [4]int32
	acts := actions[:0]
	for _, tk := range b.toks {
		term := b.dict.terms[tk.id]
		if !tk.joined && weakNamePart(term) {
			weak = append(weak, tk)
			continue
		}
		name = append(name, tk)
		if tk.joined || slices.Contains(nameTerms, tk.id) {
			continue
		}
		nameTerms = append(nameTerms, tk.id)
		if class, ok := actionOf[term]; ok && len(acts) < cap(acts) {
			if id := b.dict.intern(class); !slices.Contains(acts, id) {
				acts = append(acts, id)
			}
		}
	}
	b.bumpRefs(&a, name, FieldName)
	// The name is the tool's first own phrasing, noted once every field is
	// counted: keep its terms, as later analysis reuses b.toks.
	var own [16]termRef
	var nameRefs []termRef
	if b.phrasings {
		nameRefs = append(own[:0], name...)
	}
	for _, id := range acts {
		b.bump(&a, id, FieldName)
		a.lens[FieldName]--
	}
	b.weak = weak
	for _, id := range b.serverIDs(serverTerms) {
		b.bump(&a, id, FieldServer)
	}
	addText(FieldExtra, t.Title)
	addText(FieldExtra, t.SearchHint)
	for _, k := range t.Keywords {
		addText(FieldExtra, k)
	}
	b.hintLens, b.hintTerms = b.hintLens[:0], b.hintTerms[:0]
	for _, h := range t.Hints {
		b.addHint(&a, h)
	}
	addText(FieldDescription, t.Description)
	b.bumpRefs(&a, b.weak, FieldDescription)
	for _, p := range t.Params() {
		addText(FieldParams, p.Name)
		addText(FieldParams, p.Description)
	}
	// The tool's own phrasings, once all its fields are counted: their
	// terms are terms of the name and the description.
	if b.phrasings {
		b.addOwn(nameRefs, ownName)
		b.addOwn(b.analyseText(summary(t.Description), false), ownSummary)
	}
	a.terms = carve(&b.tfArena, b.cur, arenaChunk)
	if len(b.hintLens) > 0 {
		a.hints = carve(&b.lenArena, b.hintLens, arenaChunk/4)
	}
	if len(b.hintTerms) > 0 {
		a.hintTerms = carve(&b.hintArena, b.hintTerms, arenaChunk/4)
	}
	var names [16]string
	ns := names[:0]
	for _, id := range nameTerms {
		ns = append(ns, b.dict.terms[id])
	}
	if len(ns) > 0 {
		a.nameTerms = carve(&b.strArena, ns, arenaChunk/4)
	}
	return a
}

// addHint counts the terms of one search hint of the current document in
// the hints field, and notes the hint's length and how often each of its
// terms occurs in it, for weighing the field hint by hint.
func (b *buildAnalyser) addHint(a *analysed, text string) {
	if text == "" || len(b.hintLens) == ownHintBase {
		return
	}
	refs := b.analyseText(text, true)
	if len(refs) == 0 {
		return
	}
	b.bumpRefs(a, refs, FieldHints)
	hint := uint16(len(b.hintLens))
	b.hintLens = append(b.hintLens, uint16(min(len(refs), math.MaxUint16)))
	b.addHintTerms(refs, hint)
}

// addOwn notes the terms of one of the current document's own phrasings
// (bit ownName or ownSummary), for hint coverage and the hint lead. It
// counts nothing in any field: its terms are counted where they come
// from, and one that is not (a stop word the field analysis dropped) is
// left out.
func (b *buildAnalyser) addOwn(refs []termRef, bit uint16) {
	var arr [32]termRef
	in := arr[:0]
	for _, r := range refs {
		if int(r.id) < len(b.seen) && b.seen[r.id].doc == b.doc {
			in = append(in, r)
		}
	}
	b.addHintTerms(in, ownHintBase+bit)
}

// addHintTerms notes how often each of refs, terms of the current
// document, occurs in its phrasing number hint.
func (b *buildAnalyser) addHintTerms(refs []termRef, hint uint16) {
	start := len(b.hintTerms)
next:
	for _, r := range refs {
		at := b.seen[r.id].at
		// A hint has a few terms: looking back through them is cheaper
		// than a map.
		for k := start; k < len(b.hintTerms); k++ {
			if e := &b.hintTerms[k]; e.at == at {
				if e.n < math.MaxUint16 {
					e.n++
				}
				continue next
			}
		}
		b.hintTerms = append(b.hintTerms, hintTerm{at: at, hint: hint, n: 1})
	}
}

// summary returns the first sentence of a description: up to the first
// full stop that ends a sentence, or the first line break, at most
// maxSummary bytes (cut at a word).
func summary(desc string) string {
	desc = strings.TrimSpace(desc)
	end := len(desc)
	if i := strings.IndexAny(desc, "\n\r"); i >= 0 {
		end = i
	}
	for i := 0; i+1 < end; i++ {
		if c := desc[i]; (c == '.' || c == '!' || c == '?') && (desc[i+1] == ' ' || desc[i+1] == '\t') {
			end = i
			break
		}
	}
	if end > maxSummary {
		end = maxSummary
		if i := strings.LastIndexByte(desc[:end], ' '); i > 0 {
			end = i
		}
	}
	return desc[:end]
}

// maxSummary bounds a tool's summary phrasing, in bytes.
const maxSummary = 240
