// Package search is toolsearch's engine: an in-memory index over a catalog
// snapshot, and every query form a model or a user types to find a tool —
// select:a,b, an exact name, a server prefix, ranked keywords and natural
// language with +required terms, and Python-style regular expressions.
//
// The package does no I/O and imports no transport or SDK. An Index is
// immutable: Update returns a new Index that shares the unchanged parts, so
// searches never wait for indexing and never see half an update.
package search

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/catalog"
)

// Field identifies the parts of a tool that are indexed.
type Field uint8

// Indexed fields, from the most telling to the least.
const (
	FieldName        Field = iota // the tool's name
	FieldServer                   // the server's key, title and package
	FieldExtra                    // title, searchHint and operator keywords
	FieldDescription              // the description
	FieldParams                   // parameter names and descriptions
	numFields
)

var fieldNames = [numFields]string{"name", "server", "title/hint/keywords", "description", "parameters"}

// String names the field.
func (f Field) String() string {
	if f < numFields {
		return fieldNames[f]
	}
	return "field?"
}

// Weights are the ranking parameters. The zero value is not useful; start
// from DefaultWeights.
type Weights struct {
	// Field is the BM25F weight of each field.
	Field [numFields]float64
	// B is the BM25F length normalisation of each field.
	B [numFields]float64
	// K1 is the BM25 term-frequency saturation.
	K1 float64
	// Synonym is the weight of a synonym relative to the query's own term.
	Synonym float64
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
}

// DefaultWeights are the ranking parameters toolsearch ships with.
var DefaultWeights = Weights{
	Field:           [numFields]float64{3.0, 1.5, 2.0, 1.0, 0.3},
	B:               [numFields]float64{0.3, 0.3, 0.5, 0.75, 0.75},
	K1:              1.2,
	Synonym:         synonymWeight,
	NameCoverage:    1.0,
	Coordination:    1.0,
	MinRelative:     0.25,
	ServerMention:   2.0,
	ImplicitMention: 0.25,
	SynonymMaxDF:    0,
}

// posting records one document's use of a term.
type posting struct {
	doc    uint32  // index into the segment's docs
	wtf    float32 // BM25F weighted, length-normalised term frequency
	fields uint8   // bit f set when the term occurs in field f
}

// doc is one indexed tool.
type doc struct {
	tool *catalog.Tool
	srv  int32 // the server's number
	// nameTerms are the distinct terms of the tool's name (its parts, not
	// the joined form) and nameIDF the sum of their idf, for name coverage.
	nameTerms []string
	nameIDF   float32
	// extra are the name terms decompound added, so that retiring the
	// document later takes back exactly what indexing it added.
	extra []string
}

// segment is an immutable group of indexed tools. dead marks servers whose
// tools in this segment were replaced by a later segment.
type segment struct {
	base int // global number of docs[0]
	docs []doc
	srv  []int32 // docs[i].srv, kept apart so postings loops read 4 bytes a tool
	post map[string]*plist
	dead map[string]bool
	// deadDoc marks, per document, a retired server's tool; nil when the
	// segment has no dead documents.
	deadDoc []bool
}

// plist is one term's postings in a segment.
type plist struct {
	ps  []posting // in document order
	max float32   // the largest wtf, for bounds
	// top is the server with the most documents containing the term in
	// this segment, and how many.
	top serverCount
	// blocks are the list's block maxima (long lists of a one-segment
	// index only) and names the documents with the term in their name;
	// see indexBlocks.
	blocks []blockMax
	names  []uint32
}

// serverCount is a number of documents of one server.
type serverCount struct {
	server string
	count  int32
}

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
	names   map[string][]*catalog.Tool // lower-cased name forms → tools
	// serverTerms maps a term of a server's key, title or package to the
	// servers it names.
	serverTerms map[string][]string
	nextSrv     int32 // the number the next new server gets
	version     uint64
	saved       []byte // the catalog's fingerprint, for an index made by Load
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
	info := &serverInfo{srv: srv, idx: ix.nextSrv, terms: terms, grams: trigrams(strings.ToLower(serverText(srv)))}
	ix.nextSrv++
	return info
}

// Build indexes every tool of the snapshot with DefaultWeights.
func Build(snap *catalog.Snapshot) *Index { return BuildWith(snap, DefaultWeights) }

// BuildWith indexes every tool of the snapshot with the given weights.
func BuildWith(snap *catalog.Snapshot, w Weights) *Index {
	ix := &Index{w: w, version: snap.Version()}
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
}

// termFreq is how often a term occurs in each field of a document.
type termFreq struct {
	term string
	tf   [numFields]uint16
}

// bump counts one more occurrence of term in field f.
func (a *analysed) bump(term string, f Field, at map[string]int32) {
	i, ok := at[term]
	if !ok {
		i = int32(len(a.terms))
		at[term] = i
		a.terms = append(a.terms, termFreq{term: term})
	}
	if c := &a.terms[i].tf[f]; *c < math.MaxUint16 {
		*c++
	}
	a.lens[f]++
}

// analyser holds one goroutine's scratch space for analysing documents.
type analyser struct {
	cache map[string]string  // stems
	memo  map[string][]token // analysed texts: parameter names and descriptions repeat across tools
	buf   []token
	at    map[string]int32 // term → index in the current document's terms
}

func newAnalyser() *analyser {
	return &analyser{cache: map[string]string{}, memo: map[string][]token{}, at: map[string]int32{}}
}

// maxMemoText is the longest text whose analysis is remembered.
const maxMemoText = 256

// analyse returns the terms of text, remembering short texts.
func (w *analyser) analyse(text string) []token {
	if len(text) > maxMemoText {
		w.buf = analyzeWith(w.cache, text, w.buf[:0])
		return w.buf
	}
	if toks, ok := w.memo[text]; ok {
		return toks
	}
	toks := slices.Clone(analyzeWith(w.cache, text, nil))
	w.memo[text] = toks
	return toks
}

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

func analyseTool(w *analyser, t *catalog.Tool, serverTerms []string) analysed {
	a := analysed{tool: t}
	clear(w.at)
	addText := func(f Field, text string) {
		if text == "" {
			return
		}
		for _, tk := range w.analyse(text) {
			a.bump(tk.term, f, w.at)
		}
	}
	// Name: parts and the joined form.
	for _, tk := range w.analyse(t.Name) {
		a.bump(tk.term, FieldName, w.at)
		if !tk.joined && !slices.Contains(a.nameTerms, tk.term) {
			a.nameTerms = append(a.nameTerms, tk.term)
		}
	}
	for _, st := range serverTerms {
		a.bump(st, FieldServer, w.at)
	}
	addText(FieldExtra, t.Title)
	addText(FieldExtra, t.SearchHint)
	for _, k := range t.Keywords {
		addText(FieldExtra, k)
	}
	addText(FieldDescription, t.Description)
	for _, p := range t.Params() {
		addText(FieldParams, p.Name)
		addText(FieldParams, p.Description)
	}
	a.terms = slices.Clip(a.terms)
	return a
}

// minCompoundDF is how many tools must use a word before it counts as a
// word when splitting compounds.
const minCompoundDF = 3

// maxCompoundDF is how many tools may use a name part before it counts as a
// word of its own rather than a compound.
const maxCompoundDF = 30

// decompound splits name parts that are two known words run together
// ("worklog", "webhook", "screenshot") and adds both words to the name field,
// so "work log" finds create_worklog. The compound itself stays. A word is
// known when at least minCompoundDF tools use it; a name part that is itself
// a common word ("network", "performance") is left whole, and the first word
// must have four letters or more, so stems do not split into fragments.
func decompound(a *analysed, df map[string]int32, cache map[string]string) {
	for _, term := range a.nameTerms {
		if len(term) < 6 || !isAlpha(term) || df[term] >= maxCompoundDF {
			continue
		}
		for cut := 4; cut <= len(term)-3; cut++ {
			left, right := term[:cut], term[cut:]
			if df[left] < minCompoundDF {
				continue
			}
			rs := right
			if cache != nil {
				if v, ok := cache[right]; ok {
					rs = v
				} else {
					rs = stem(right)
					cache[right] = rs
				}
			}
			if df[rs] < minCompoundDF {
				continue
			}
			for _, part := range []string{left, rs} {
				i := slices.IndexFunc(a.terms, func(x termFreq) bool { return x.term == part })
				if i < 0 {
					i = len(a.terms)
					a.terms = append(a.terms, termFreq{term: part})
				}
				a.terms[i].tf[FieldName]++
				a.lens[FieldName]++
				a.extra = append(a.extra, part)
			}
			break
		}
	}
}

// rebuild indexes servers from scratch into a single segment.
func (ix *Index) rebuild(servers []*catalog.Server) {
	ix.segs = nil
	ix.df = map[string]int32{}
	ix.n, ix.total = 0, 0
	ix.servers = make(map[string]*serverInfo, len(servers))
	ix.names = map[string][]*catalog.Tool{}
	ix.nextSrv = 0
	type job struct {
		tool  *catalog.Tool
		terms []string
	}
	var jobs []job
	for _, srv := range servers {
		st := analyseServer(srv)
		ix.servers[srv.Key] = ix.newServerInfo(srv, st)
		for _, t := range srv.Tools {
			jobs = append(jobs, job{t, st})
		}
	}
	// Analysis dominates a build and each tool is analysed on its own:
	// spread it over the processors, each worker with its own stem cache.
	docs := make([]analysed, len(jobs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(jobs)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			an := newAnalyser()
			for i := w; i < len(jobs); i += workers {
				docs[i] = analyseTool(an, jobs[i].tool, jobs[i].terms)
			}
		}()
	}
	wg.Wait()
	var lens [numFields]float64
	for _, a := range docs {
		for f := range lens {
			lens[f] += float64(a.lens[f])
		}
	}
	cache := map[string]string{}
	counts := map[string]int32{}
	for _, a := range docs {
		for _, tf := range a.terms {
			counts[tf.term]++
		}
	}
	for i := range docs {
		decompound(&docs[i], counts, cache)
	}
	for f := range lens {
		ix.avgLen[f] = lens[f] / math.Max(1, float64(len(docs)))
	}
	seg := ix.newSegment(docs, 0)
	indexBlocks(seg)
	for _, srv := range servers {
		ix.servers[srv.Key].seg = seg
	}
	ix.segs = []*segment{seg}
	for term, l := range seg.post {
		ix.df[term] = int32(len(l.ps))
	}
	ix.n = len(docs)
	ix.setNameIDF(seg)
	ix.total = len(docs)
	for _, a := range docs {
		ix.addNames(a.tool)
	}
	ix.indexServerTerms()
}

// indexServerTerms rebuilds the map from server terms to servers.
func (ix *Index) indexServerTerms() {
	ix.serverTerms = map[string][]string{}
	for _, key := range sortedKeys(ix.servers) {
		for _, t := range ix.servers[key].terms {
			ix.serverTerms[t] = append(ix.serverTerms[t], key)
		}
	}
}

// newSegment turns analysed documents into postings, normalising with the
// index's current average field lengths.
func (ix *Index) newSegment(docs []analysed, base int) *segment {
	seg := &segment{base: base, docs: make([]doc, len(docs)), srv: make([]int32, len(docs))}
	// Number the terms and count their documents, then lay every posting
	// list out in one array, each list in document order.
	ids := map[string]int32{}
	var terms []string
	var counts []int32
	flat := make([]int32, 0, len(docs)*48)
	for _, a := range docs {
		for _, tfr := range a.terms {
			id, ok := ids[tfr.term]
			if !ok {
				id = int32(len(terms))
				ids[tfr.term] = id
				terms = append(terms, tfr.term)
				counts = append(counts, 0)
			}
			counts[id]++
			flat = append(flat, id)
		}
	}
	backing := make([]posting, len(flat))
	lists := make([]plist, len(terms))
	off := 0
	for id, n := range counts {
		lists[id].ps = backing[off : off : off+int(n)]
		off += int(n)
	}
	k := 0
	for i, a := range docs {
		seg.docs[i] = doc{tool: a.tool, srv: ix.servers[a.tool.Server].idx, nameTerms: a.nameTerms, extra: a.extra}
		seg.srv[i] = seg.docs[i].srv
		var norm [numFields]float64
		for f := range norm {
			avg := ix.avgLen[f]
			if avg <= 0 {
				avg = 1
			}
			norm[f] = ix.w.Field[f] / (1 - ix.w.B[f] + ix.w.B[f]*float64(a.lens[f])/avg)
		}
		for _, tfr := range a.terms {
			var wtf float64
			var fields uint8
			for f, n := range tfr.tf {
				if n > 0 {
					wtf += float64(n) * norm[f]
					fields |= 1 << f
				}
			}
			l := &lists[flat[k]]
			k++
			l.ps = append(l.ps, posting{doc: uint32(i), wtf: float32(wtf), fields: fields})
			l.max = max(l.max, float32(wtf))
		}
	}
	seg.post = make(map[string]*plist, len(terms))
	for id, term := range terms {
		l := &lists[id]
		// Documents come grouped by server, so a term's postings are runs
		// of one server at a time.
		var run serverCount
		for _, p := range l.ps {
			srv := seg.docs[p.doc].tool.Server
			if srv != run.server {
				run = serverCount{server: srv}
			}
			run.count++
			if run.count > l.top.count {
				l.top = run
			}
		}
		seg.post[term] = l
	}
	return seg
}

// setNameIDF computes each document's name idf with the index's current
// document frequencies.
func (ix *Index) setNameIDF(seg *segment) {
	for i := range seg.docs {
		var sum float64
		for _, t := range seg.docs[i].nameTerms {
			sum += ix.idf(ix.df[t])
		}
		seg.docs[i].nameIDF = float32(sum)
	}
}

// nameForms are the lower-cased spellings under which a tool can be named
// exactly: its name, "server/name", "server__name" and "mcp__server__name".
func nameForms(t *catalog.Tool) []string {
	n := strings.ToLower(t.Name)
	s := strings.ToLower(t.Server)
	return []string{n, s + catalog.IDSeparator + n, s + catalog.WireSeparator + n, "mcp__" + s + "__" + n}
}

func (ix *Index) addNames(t *catalog.Tool) {
	for _, f := range nameForms(t) {
		ix.names[f] = append(ix.names[f], t)
	}
}

// Update returns an index that reflects snap for the named servers: their
// tools are re-indexed, or removed when snap no longer has the server. Other
// servers' postings are shared with ix, not rebuilt. ix is unchanged.
func (ix *Index) Update(snap *catalog.Snapshot, servers ...string) *Index {
	next := &Index{
		w: ix.w, segs: append([]*segment(nil), ix.segs...), n: ix.n, total: ix.total, nextSrv: ix.nextSrv,
		avgLen: ix.avgLen, version: snap.Version(),
		df:      make(map[string]int32, len(ix.df)),
		servers: make(map[string]*serverInfo, len(ix.servers)),
		names:   make(map[string][]*catalog.Tool, len(ix.names)),
	}
	for k, v := range ix.df {
		next.df[k] = v
	}
	for k, v := range ix.servers {
		next.servers[k] = v
	}
	an := newAnalyser()
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
			a := analyseTool(an, t, info.terms)
			for _, part := range extra[t] {
				if !slices.ContainsFunc(a.terms, func(x termFreq) bool { return x.term == part }) {
					a.terms = append(a.terms, termFreq{term: part})
				}
			}
			for _, tf := range a.terms {
				if next.df[tf.term]--; next.df[tf.term] <= 0 {
					delete(next.df, tf.term)
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
			docs = append(docs, analyseTool(an, t, info.terms))
		}
	}
	for i := range docs {
		decompound(&docs[i], next.df, an.cache)
	}
	if len(docs) > 0 {
		seg := next.newSegment(docs, next.total)
		next.segs = append(next.segs, seg)
		for term, l := range seg.post {
			next.df[term] += int32(len(l.ps))
		}
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
			next.addNames(t)
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
