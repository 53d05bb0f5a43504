package search

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Field identifies the parts of a tool that are indexed.
type Field uint8

// Indexed fields, from the most telling to the least.
const (
	FieldName        Field = iota // the tool's name
	FieldServer                   // the server's key, title and package
	FieldExtra                    // title, searchHint and operator keywords
	FieldHints                    // search hints written ahead of time (catalog.Tool.Hints)
	FieldDescription              // the description
	FieldParams                   // parameter names and descriptions
	numFields
)

var fieldNames = [numFields]string{"name", "server", "title/hint/keywords", "hints", "description", "parameters"}

// String names the field.
func (f Field) String() string {
	if f < numFields {
		return fieldNames[f]
	}
	return "field?"
}

// Weights are the ranking parameters. The zero value is not useful; start
// from DefaultWeights. An index uses any weights safely: a negative or
// not-a-number value counts as 0, a length normalisation or share above 1
// as 1, a weight above a million as a million, and a K1 that is not
// positive as DefaultWeights.K1.
type Weights struct {
	// Field is the BM25F weight of each field.
	Field [numFields]float64
	// B is the BM25F length normalisation of each field.
	B [numFields]float64
	// K1 is the BM25 term-frequency saturation.
	K1 float64
	// Synonym is the weight of a synonym relative to the query's own term.
	Synonym float64
	// Action is the weight, relative to the query's own term, of a tool
	// name's verb of the same action class as a query verb (see
	// actions.go).
	Action float64
	// NameCoverage is added, times the best group score, for the share of a
	// tool's name words that the query covers.
	NameCoverage float64
	// Coordination scales a score by (matched groups / query groups)^Coordination.
	Coordination float64
	// MinRelative drops hits scoring below this share of the best hit.
	MinRelative float64
	// ImplicitMention is the weight of a server mention made by a word that
	// is not in the server's name but is concentrated in its tools (at
	// least half of the tools containing it, and three or more).
	ImplicitMention float64
	// SynonymMaxDF skips a synonym found in more than this share of the
	// tools: so common a word says little, and its postings dominate the
	// cost of a query. 0 keeps every synonym.
	SynonymMaxDF float64
	// ServerMention multiplies the score of a tool whose server the query
	// names by (1 + ServerMention × strength), strength being 1 for the
	// server named most clearly.
	ServerMention float64
	// LongQuery is the most distinct terms a query may have and still be
	// read as a short one. A longer query (an instruction and a request, a
	// pasted task) reads no synonyms, weighs a term it repeats more, and
	// needs less of its words covered (see score.go). 0 reads every query
	// as a short one.
	LongQuery int
	// HintView is the weight of a tool's hint view against its
	// definition, for a tool with written search hints (catalog.Tool.Hints):
	// the hint view is the definition with the hints in place of its
	// description. Such a tool's term frequencies and query coverage are
	// the means of both views', the hint view's at this weight and the
	// definition's at 1 − HintView; a tool without written hints is scored
	// by its definition alone, which is its hint view too (see score.go).
	// 0 scores every tool by its definition.
	HintView float64
	// HintRest is how much a term's hints other than its best one add to
	// the hints field, relative to the best: 0 counts a term by its
	// best-matching hint alone, 1 adds every hint it occurs in, each
	// normalised by its own length (B[FieldHints] against the average
	// hint's length).
	HintRest float64
	// HintCoverage multiplies the score of a tool with search hints by
	// (1 + HintCoverage × H²), H being the largest share of the query's
	// idf that one of its hints covers (see score.go).
	HintCoverage float64
	// HintLead multiplies the score of a tool one of whose search hints
	// starts with the query's first term by (1 + HintLead × L), L being
	// that term's weight (1 for the term itself, Synonym for a synonym;
	// see score.go).
	HintLead float64
	// Learned multiplies the score of a tool by (1 + Learned × U), U
	// being its learned share for the query (Request.Learned; see
	// score.go), so a tool gains at most that factor from learning. It
	// plays no part in the index itself, only in queries that learn.
	Learned float64
}

// DefaultWeights are the ranking parameters toolsearch ships with.
var DefaultWeights = Weights{
	Field:           [numFields]float64{3.0, 1.5, 2.0, 1.0, 1.0, 0.3},
	B:               [numFields]float64{0.3, 0.3, 0.5, 1.0, 0.75, 0.75},
	K1:              1.2,
	Synonym:         synonymWeight,
	Action:          0.2,
	NameCoverage:    1.0,
	Coordination:    1.0,
	MinRelative:     0,
	ServerMention:   2.0,
	ImplicitMention: 0.25,
	SynonymMaxDF:    0,
	LongQuery:       16,
	HintView:        0.5,
	HintRest:        1,
	HintCoverage:    1.5,
	HintLead:        0.5,
	Learned:         1,
}

// posting records one document's use of a term in 8 bytes: the
// document's number in its segment and the fields the term occurs in
// share one word, the document in the high bits, so postings in document
// order are also in key order.
type posting struct {
	key uint32  // doc<<fieldBits | fields
	sat float32 // saturated term frequency: wtf / (wtf + k1), see newPosting
}

// fieldBits is the number of low bits of a posting's key that hold its
// fields (bit f set when the term occurs in field f).
const fieldBits = 6

var _ [fieldBits - numFields]struct{} // every field has its bit

// MaxSegmentTools is the most tools one index segment can number: a
// posting keeps a tool's number in the bits its fields leave.
const MaxSegmentTools = 1 << (32 - fieldBits)

var _ [MaxSegmentTools - catalog.MaxTools]struct{} // a catalog fits a segment

// newPosting returns the posting of document doc (below MaxSegmentTools)
// with saturated term frequency sat. A term's BM25F weighted,
// length-normalised frequency wtf saturates as wtf / (wtf + k1), k1 being
// the index's; it is worked out once, at build, so that scoring a posting
// is one multiplication by the term's weight.
func newPosting(doc uint32, sat float32, fields uint8) posting {
	return posting{key: doc<<fieldBits | uint32(fields), sat: sat}
}

// saturate returns wtf / (wtf + k1) in float32, as postings keep it.
func saturate(wtf float64, k1 float32) float32 {
	w := float32(wtf)
	return w / (w + k1)
}

// doc is the posting's document number in its segment.
func (p posting) doc() uint32 { return p.key >> fieldBits }

// fields is the set of fields the term occurs in, bit f for field f.
func (p posting) fields() uint8 { return uint8(p.key & (1<<fieldBits - 1)) }

// docKey is the smallest key of a posting of document doc: comparing keys
// with it compares documents.
func docKey(doc uint32) uint32 { return doc << fieldBits }

// doc is one indexed tool.
type doc struct {
	tool *catalog.Tool
	srv  int32 // the server's number
	// nameTerms are the distinct terms of the tool's name (its parts, not
	// the joined form), for name coverage (segment.nameIDF).
	nameTerms []string
	// extra are the name terms decompound added, so that retiring the
	// document later takes back exactly what indexing it added.
	extra []string
	// hints are the terms of the tool's phrasings, each with the
	// phrasings it occurs in and those it starts, for hint coverage and
	// the hint lead (see ranking.hintShare and ranking.hintLead): its
	// written search hints (bits below maxCoverageHints) and its definition's
	// own phrasings (ownName and ownSummary).
	hints []hintTerms
	// leads is how many of hints start a phrasing: those come first,
	// sorted, and the others after them, sorted too, so that the hint
	// lead walks only the first.
	leads uint8
	// written is set when the tool has written search hints with terms:
	// it is then scored by its hint view as well as its definition.
	written bool
}

// hintTerms is a term of a tool's phrasings, the phrasings it occurs in
// and those it is the first term of: bit i for the tool's i-th written
// hint with terms (the first maxCoverageHints), bit ownName for its name
// and bit ownSummary for the first sentence of its description.
type hintTerms struct {
	term string
	in   uint64
	lead uint64 // a subset of in
}

// A tool's own phrasings of what it does, which every tool has: its name
// and the first sentence of its description. They take part in hint
// coverage and the hint lead as its written hints do (but not in the
// hints field), so that a tool is never without them; they keep the top
// bits of hintTerms.in and lead.
const (
	ownName    = 62
	ownSummary = 63
	// ownMask has the bits of the own phrasings.
	ownMask = uint64(1)<<ownName | uint64(1)<<ownSummary
)

// ownHintBase is the hintTerm.hint of the tool's own phrasings, plus their
// bit; written hints have smaller numbers.
const ownHintBase = math.MaxUint16 - 63

// maxCoverageHints is the most written hints of one tool that hint
// coverage looks at; later ones still count in the hints field.
const maxCoverageHints = ownName

// segment is an immutable group of indexed tools. dead marks servers whose
// tools in this segment were replaced by a later segment.
type segment struct {
	base int // global number of docs[0]
	docs []doc
	srv  []int32 // docs[i].srv, kept apart so postings loops read 4 bytes a tool
	// nameIDF is, per document, the summed idf of its nameTerms, kept
	// apart for the same reason.
	nameIDF []float32
	// invName is, per document, 1/nameIDF rounded up, or 0 when nameIDF
	// is 0: a name posting's largest share of its tool's name coverage,
	// per unit of idf, for bounding blocks.
	invName []float32
	post    map[string]*plist
	dead    map[string]bool
	// deadDoc marks, per document, a retired server's tool; nil when the
	// segment has no dead documents.
	deadDoc []bool
	// groups are, per word with synonyms two or more of which are long
	// lists, the merged list of the word and its synonyms (see
	// indexGroups).
	groups map[string]*groupBlocks
	// ranks are the long lists' block ranks: rankWords(len(docs)) words
	// per list, starting at its plist.rankAt (see blockRank).
	ranks []blockRank
	// hinted is set when a document of the segment has written hints.
	hinted bool
}

// plist is one term's postings in a segment.
type plist struct {
	ps  []posting // in document order
	max float32   // the largest sat, for bounds
	// rankAt is where a long list's block ranks start in its segment's
	// ranks.
	rankAt uint32
	// top is the server with the most documents containing the term in
	// this segment (one of their documents), and how many.
	top serverRun
	// blocks are the list's block maxima (long lists of a one-segment
	// index only; see indexBlocks). aux holds, one after the other, where
	// each block's postings start in ps (one per entry of blocks, apart
	// from them because bounding reads blocks alone) and the documents
	// with the term in their name: one slice for both keeps the list
	// header small.
	blocks []blockMax
	aux    []uint32
}

// starts returns where each of the list's blocks starts in ps, one per
// entry of blocks.
func (l *plist) starts() []uint32 { return l.aux[:len(l.blocks)] }

// names returns the documents with the term in their name.
func (l *plist) names() []uint32 { return l.aux[len(l.blocks):] }

// serverCount is a number of documents of one server.
type serverCount struct {
	server string
	count  int32
}

// serverRun is a number of documents of one server in a segment, with one
// of them (doc) to name the server: 8 bytes where a serverCount, kept in
// every posting list, takes 24.
type serverRun struct {
	doc   uint32
	count int32
}

// server returns the key of run's server in seg.
func (seg *segment) server(run serverRun) string { return seg.docs[run.doc].tool.Server }

// Index is an immutable search index over a set of tools. Its methods are
// safe for concurrent use.
type Index struct {
	w       Weights
	segs    []*segment
	df      map[string]int32 // live documents containing each term
	n       int              // live documents
	total   int              // documents in all segments, live or not
	avgLen  [numFields]float64
	servers map[string]*serverInfo
	names   *nameIndex // tools by exact name
	// serverTerms maps a term of a server's key, title or package to the
	// servers it names.
	serverTerms map[string][]string
	// serverFold maps a lower-cased server key to the key (the first in
	// order when several differ only in case).
	serverFold map[string]string
	nextSrv    int32 // the number the next new server gets
	version    uint64
	saved      []byte // the catalog's fingerprint, for an index made by Load
	plans      plans  // query terms' ranking plans, filled as queries use them
	// phrased is set when the index's documents carry their tools' own
	// phrasings, which only an index with written hints uses: Build sets
	// it when a tool of the catalog has written hints, and Update builds
	// the whole index anew when an update brings the first of them.
	phrased bool
}

// serverInfo is what the index knows of a server.
type serverInfo struct {
	srv   *catalog.Server
	seg   *segment
	idx   int32           // the server's number, unique within the index
	terms []string        // analysed terms of the server's key, title and package
	grams map[string]bool // character trigrams of its names, for nearestServers
}

// newServerInfo numbers a server for this index.
func (ix *Index) newServerInfo(srv *catalog.Server, terms []string) *serverInfo {
	info := &serverInfo{srv: srv, idx: ix.nextSrv, terms: terms, grams: serverGrams(srv)}
	ix.nextSrv++
	return info
}

// serverGrams are the character trigrams of a server's names.
func serverGrams(srv *catalog.Server) map[string]bool {
	return trigrams(strings.ToLower(serverText(srv)))
}

// Build indexes every tool of the snapshot with DefaultWeights.
func Build(snap *catalog.Snapshot) *Index { return BuildWith(snap, DefaultWeights) }

// BuildWith indexes every tool of the snapshot with the given weights.
// Any weights are safe: one that is negative, not a number or out of its
// range is made safe as Weights documents.
func BuildWith(snap *catalog.Snapshot, w Weights) *Index {
	ix := &Index{w: w.sanitized(), version: snap.Version()}
	ix.rebuild(snap.Servers())
	return ix
}

// Len returns the number of tools in the index.
func (ix *Index) Len() int { return ix.n }

// Version is the version of the catalog snapshot the index reflects.
func (ix *Index) Version() uint64 { return ix.version }

// analysed is a document analysed into per-field term counts.
type analysed struct {
	tool      *catalog.Tool
	terms     []termFreq // each distinct term once
	lens      [numFields]int
	nameTerms []string
	extra     []string // terms added by decompound
	// hints are, per search hint that has terms, its length in terms,
	// and hintTerms how often each term occurs in each hint: the hints
	// field is weighed hint by hint (see hintFrequencies).
	hints     []uint16
	hintTerms []hintTerm
}

// hintTerm is how often a term of a document occurs in one of its hints:
// the term's place in the document's terms, the hint's number and the
// count. The number of a written hint is its place in analysed.hints; an
// own phrasing's is ownHintBase plus its bit (ownName, ownSummary).
type hintTerm struct {
	at   int32
	hint uint16
	n    uint16
}

// termFreq is how often a term, by its number in the build's termDict,
// occurs in each field of a document.
type termFreq struct {
	id int32
	tf [numFields]uint16
}

// inDefinition reports whether the term occurs in a field of the tool's
// definition: any field but its written hints.
func (t *termFreq) inDefinition() bool {
	for f, n := range t.tf {
		if n > 0 && Field(f) != FieldHints {
			return true
		}
	}
	return false
}

// maxMemoText is the longest text whose analysis is remembered.
const maxMemoText = 4096

func serverText(srv *catalog.Server) string {
	var b strings.Builder
	b.WriteString(srv.Key)
	b.WriteByte(' ')
	b.WriteString(srv.Title)
	b.WriteByte(' ')
	// A package's scope and name say who makes the server
	// ("@apify/actors-mcp-server"); drop the generic words.
	b.WriteString(srv.Package)
	return b.String()
}

// genericServerWords are words of package names that say nothing about what
// a server does.
var genericServerWords = toSet("mcp server modelcontextprotocol model context protocol npm node")

func analyseServer(srv *catalog.Server) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range analyze(serverText(srv), nil) {
		if genericServerWords[t.term] || seen[t.term] {
			continue
		}
		seen[t.term] = true
		out = append(out, t.term)
	}
	return out
}

// minCompoundDF is how many tools must use a word before it counts as a
// word when splitting compounds.
const minCompoundDF = 3

// maxCompoundDF is how many tools may use a name part before it counts as a
// word of its own rather than a compound.
const maxCompoundDF = 30

// definitionDF is how many live tools have term in their definitions (a
// field other than their written hints), counted up to maxCompoundDF:
// the words decompound knows. An index without written hints counts
// every field.
func (ix *Index) definitionDF(term string) int32 {
	if !ix.hinted() {
		return ix.df[term]
	}
	var n int32
	for _, seg := range ix.segs {
		l := seg.post[term]
		if l == nil {
			continue
		}
		for _, p := range l.ps {
			if seg.deadDoc != nil && seg.deadDoc[p.doc()] {
				continue
			}
			if p.fields()&^(1<<FieldHints) != 0 {
				if n++; n >= maxCompoundDF {
					return n
				}
			}
		}
	}
	return n
}

// decompound splits name parts that are two known words run together
// ("worklog", "webhook", "screenshot") and adds both words to the name field,
// so "work log" finds create_worklog. The compound itself stays. A word is
// known when at least minCompoundDF tools use it in their definitions (a
// word only hints use would let one tool's hints change how another's name
// is read: "maintenance" into "main" and "ten"); a name part that is itself
// a common word ("network", "performance") is left whole, and the first word
// must have four letters or more, so stems do not split into fragments.
//
// df gives the number of tools using a word in their definitions, and
// number the number of a word added.
func decompound(a *analysed, df func(string) int32, number func(string) int32) {
	for _, term := range a.nameTerms {
		if len(term) < 6 || !isAlpha(term) || df(term) >= maxCompoundDF {
			continue
		}
		for cut := 4; cut <= len(term)-3; cut++ {
			left, right := term[:cut], term[cut:]
			if df(left) < minCompoundDF {
				continue
			}
			rs := stem(right)
			if df(rs) < minCompoundDF {
				continue
			}
			for _, part := range []string{left, rs} {
				id := number(part)
				i := slices.IndexFunc(a.terms, func(x termFreq) bool { return x.id == id })
				if i < 0 {
					i = len(a.terms)
					a.terms = append(a.terms, termFreq{id: id})
				}
				a.terms[i].tf[FieldName]++
				a.lens[FieldName]++
				a.extra = append(a.extra, part)
				// The parts are words of the name, its own phrasing.
				a.hintTerms = append(a.hintTerms, hintTerm{at: int32(i), hint: ownHintBase + ownName, n: 1})
			}
			break
		}
	}
}

// indexServerTerms rebuilds the map from server terms to servers.
func (ix *Index) indexServerTerms() {
	ix.serverTerms = map[string][]string{}
	ix.serverFold = make(map[string]string, len(ix.servers))
	for _, key := range sortedKeys(ix.servers) {
		if _, ok := ix.serverFold[strings.ToLower(key)]; !ok {
			ix.serverFold[strings.ToLower(key)] = key
		}
		for _, t := range ix.servers[key].terms {
			ix.serverTerms[t] = append(ix.serverTerms[t], key)
		}
	}
}

// setNameIDF computes each document's name idf with the index's current
// document frequencies.
func (ix *Index) setNameIDF(seg *segment) {
	seg.nameIDF = make([]float32, len(seg.docs))
	seg.invName = make([]float32, len(seg.docs))
	par := min(runtime.GOMAXPROCS(0), max(1, len(seg.docs)/4096))
	each(par, func(w int) {
		for i := w * len(seg.docs) / par; i < (w+1)*len(seg.docs)/par; i++ {
			var sum float64
			for _, t := range seg.docs[i].nameTerms {
				sum += ix.idf(ix.df[t])
			}
			seg.nameIDF[i] = float32(sum)
			if n := seg.nameIDF[i]; n > 0 {
				seg.invName[i] = math.Nextafter32(1/n, float32(math.Inf(1)))
			}
		}
	})
}

// Update returns an index that reflects snap for the named servers: their
// tools are re-indexed, or removed when snap no longer has the server. Other
// servers' postings are shared with ix, not rebuilt, except when the update
// brings the index's first written hints: every tool then needs its own
// phrasings (see Index.phrased), and the index is built anew. ix is
// unchanged.
func (ix *Index) Update(snap *catalog.Snapshot, servers ...string) *Index {
	if !ix.phrased {
		var brought []*catalog.Server
		for _, key := range servers {
			if srv, ok := snap.Server(key); ok {
				brought = append(brought, srv)
			}
		}
		if anyWritten(brought) {
			// Every tool needs its own phrasings now.
			return BuildWith(snap, ix.w)
		}
	}
	next := &Index{
		w: ix.w, segs: append([]*segment(nil), ix.segs...), n: ix.n, total: ix.total, nextSrv: ix.nextSrv,
		avgLen: ix.avgLen, version: snap.Version(), phrased: ix.phrased,
		df:      make(map[string]int32, len(ix.df)),
		servers: make(map[string]*serverInfo, len(ix.servers)),
		names:   newNameIndex(len(ix.names.tools)),
	}
	for k, v := range ix.df {
		next.df[k] = v
	}
	for k, v := range ix.servers {
		next.servers[k] = v
	}
	an := newBuildAnalyser(0)
	an.phrasings = next.phrased
	touched := map[string]bool{}
	for _, key := range servers {
		touched[key] = true
	}
	// Retire the old documents of each touched server.
	deadIn := map[*segment]map[string]bool{}
	for key := range touched {
		info, ok := next.servers[key]
		if !ok {
			continue
		}
		if deadIn[info.seg] == nil {
			deadIn[info.seg] = map[string]bool{}
		}
		deadIn[info.seg][key] = true
		extra := map[*catalog.Tool][]string{}
		for i := range info.seg.docs {
			if d := &info.seg.docs[i]; d.tool.Server == key && len(d.extra) > 0 {
				extra[d.tool] = d.extra
			}
		}
		for _, t := range info.srv.Tools {
			a := an.tool(t, info.terms)
			for _, part := range extra[t] {
				id := an.dict.intern(part)
				if !slices.ContainsFunc(a.terms, func(x termFreq) bool { return x.id == id }) {
					a.terms = append(a.terms, termFreq{id: id})
				}
			}
			for _, tf := range a.terms {
				term := an.dict.terms[tf.id]
				if next.df[term]--; next.df[term] <= 0 {
					delete(next.df, term)
				}
			}
			next.n--
		}
		delete(next.servers, key)
	}
	for i, seg := range next.segs {
		if d := deadIn[seg]; d != nil {
			ns := *seg
			ns.dead = make(map[string]bool, len(seg.dead)+len(d))
			for k := range seg.dead {
				ns.dead[k] = true
			}
			for k := range d {
				ns.dead[k] = true
			}
			ns.deadDoc = make([]bool, len(ns.docs))
			for j, dd := range ns.docs {
				ns.deadDoc[j] = ns.dead[dd.tool.Server]
			}
			next.segs[i] = &ns
			for key, info := range next.servers {
				if info.seg == seg {
					ni := *info
					ni.seg = &ns
					next.servers[key] = &ni
				}
			}
		}
	}
	// Index the new documents of each touched server still in snap.
	var docs []analysed
	var newServers []*serverInfo
	for _, key := range sortedKeys(touched) {
		srv, ok := snap.Server(key)
		if !ok {
			continue
		}
		info := next.newServerInfo(srv, analyseServer(srv))
		next.servers[key] = info
		newServers = append(newServers, info)
		for _, t := range srv.Tools {
			docs = append(docs, an.tool(t, info.terms))
		}
	}
	df := func(term string) int32 { return next.definitionDF(term) }
	for i := range docs {
		decompound(&docs[i], df, an.dict.intern)
	}
	if len(docs) > 0 {
		seg := next.newSegment(docs, an.dict.terms, next.total, next.df, false)
		next.segs = append(next.segs, seg)
		next.n += len(docs)
		next.setNameIDF(seg)
		next.total += len(docs)
		for _, info := range newServers {
			info.seg = seg
		}
	}
	// Too many segments or too many dead documents: compact.
	if len(next.segs) > maxSegments || next.total > 2*next.n+64 {
		all := make([]*catalog.Server, 0, len(next.servers))
		for _, k := range sortedKeys(next.servers) {
			all = append(all, next.servers[k].srv)
		}
		next.rebuild(all)
		return next
	}
	// In key order, as a build adds them: tools sharing a name are
	// returned in this order.
	for _, key := range sortedKeys(next.servers) {
		for _, t := range next.servers[key].srv.Tools {
			next.names.add(t)
		}
	}
	next.indexServerTerms()
	return next
}

// maxSegments bounds how many segments a query visits before Update compacts
// the index into one.
const maxSegments = 8

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// idf is the BM25 inverse document frequency of a term found in df documents.
func (ix *Index) idf(df int32) float64 {
	n := float64(ix.n)
	d := float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}
