package search

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// An index can be saved and loaded again, so a program that starts with a
// catalog it has seen before (a gateway with cached manifests) searches at
// once instead of analysing every tool anew. What is saved is what analysis
// produces: the posting lists, the average field lengths and each tool's
// name terms and hint terms; everything else is derived again when loading. A saved index
// records a fingerprint of the catalog it was built from, the weights and
// the version of the analysis; Load refuses one that does not match the
// snapshot it is given, and the caller builds the index instead.

// analysisVersion changes whenever analysis (tokens, stemming, synonyms,
// compounds) or the saved layout changes, so an index saved by an older
// program is rebuilt rather than trusted.
const analysisVersion = 7

const savedMagic = "toolsearch index\n"

// ErrStale is returned by Load for a saved index made from another catalog,
// other weights or another version of the analysis.
var ErrStale = errors.New("saved index does not match")

// MarshalBinary encodes the index for Load. Only an index as Build makes it
// can be saved (one segment, no retired tools); for one changed by Update,
// Build a fresh index from the same snapshot first.
func (ix *Index) MarshalBinary() ([]byte, error) {
	if len(ix.segs) != 1 || ix.segs[0].deadDoc != nil || ix.total != ix.n {
		return nil, errors.New("search: only an index made by Build can be saved")
	}
	seg := ix.segs[0]
	b := []byte(savedMagic)
	b = append(b, fingerprint(ix.w, ix.sortedServers())...)
	for _, f := range ix.avgLen {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	// The terms, most used first, then per tool its name terms,
	// compound parts and hint terms with their hints, then the postings
	// of each term.
	terms := make([]string, 0, len(seg.post))
	for t := range seg.post {
		terms = append(terms, t)
	}
	slices.SortFunc(terms, func(a, b string) int {
		if d := len(seg.post[b].ps) - len(seg.post[a].ps); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	ids := make(map[string]uint64, len(terms))
	b = binary.AppendUvarint(b, uint64(len(terms)))
	for i, t := range terms {
		ids[t] = uint64(i)
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	b = binary.AppendUvarint(b, uint64(len(seg.docs)))
	for _, d := range seg.docs {
		for _, list := range [][]string{d.nameTerms, d.extra} {
			b = binary.AppendUvarint(b, uint64(len(list)))
			for _, t := range list {
				id, ok := ids[t]
				if !ok {
					return nil, fmt.Errorf("search: name term %q of %s has no postings", t, d.tool.ID())
				}
				b = binary.AppendUvarint(b, id)
			}
		}
		b = binary.AppendUvarint(b, uint64(len(d.hints)))
		for _, h := range d.hints {
			id, ok := ids[h.term]
			if !ok {
				return nil, fmt.Errorf("search: hint term %q of %s has no postings", h.term, d.tool.ID())
			}
			b = binary.AppendUvarint(b, id)
			b = binary.AppendUvarint(b, h.in)
			b = binary.AppendUvarint(b, h.lead)
		}
	}
	for _, t := range terms {
		ps := seg.post[t].ps
		b = binary.AppendUvarint(b, uint64(len(ps)))
		prev := uint32(0)
		for _, p := range ps {
			b = binary.AppendUvarint(b, uint64(p.doc()-prev))
			prev = p.doc()
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.sat))
			b = append(b, p.fields())
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Load returns the index saved by MarshalBinary for snap, with DefaultWeights.
// It returns an error wrapping ErrStale when data was saved from another
// catalog, other weights or another version of the analysis, and another
// error when data is damaged; either way the caller should Build instead.
func Load(snap *catalog.Snapshot, data []byte) (*Index, error) {
	return LoadWith(snap, data, DefaultWeights)
}

// LoadWith is Load for an index built with the given weights.
func LoadWith(snap *catalog.Snapshot, data []byte, w Weights) (*Index, error) {
	ix := &Index{w: w.sanitized(), version: snap.Version()}
	servers := snap.Servers()
	var docs []doc
	ix.servers = make(map[string]*serverInfo, len(servers))
	for _, srv := range servers {
		info := ix.newServerInfo(srv, analyseServer(srv))
		ix.servers[srv.Key] = info
		for _, t := range srv.Tools {
			docs = append(docs, doc{tool: t, srv: info.idx})
		}
	}
	seg := &segment{docs: docs, srv: make([]int32, len(docs))}
	for i := range docs {
		seg.srv[i] = docs[i].srv
	}
	if n := len(data) - 4; n < len(savedMagic) || string(data[:len(savedMagic)]) != savedMagic {
		return nil, fmt.Errorf("search: loading a saved index: %w (not a saved index)", ErrStale)
	} else if crc32.Checksum(data[:n], castagnoli) != binary.LittleEndian.Uint32(data[n:]) {
		return nil, errors.New("search: loading a saved index: damaged (checksum)")
	} else {
		data = data[:n]
	}
	r := reader{b: data}
	if string(r.bytes(len(savedMagic))) != savedMagic {
		return nil, fmt.Errorf("search: loading a saved index: %w (not a saved index)", ErrStale)
	}
	fp := fingerprint(ix.w, ix.sortedServers())
	if string(r.bytes(len(fp))) != string(fp) {
		return nil, fmt.Errorf("search: loading a saved index: %w (other catalog, weights or analysis)", ErrStale)
	}
	ix.saved = fp
	for f := range ix.avgLen {
		ix.avgLen[f] = math.Float64frombits(r.u64())
	}
	nterms := r.count(1)
	terms := make([]string, 0, nterms)
	for range nterms {
		terms = append(terms, string(r.bytes(r.count(1))))
	}
	if n := r.count(2); r.err == nil && n != len(docs) {
		r.fail("the catalog has %d tools, the saved index %d", len(docs), n)
	}
	for i := 0; i < len(docs) && r.err == nil; i++ {
		d := &docs[i]
		for _, list := range []*[]string{&d.nameTerms, &d.extra} {
			n := r.count(1)
			for range n {
				if id := r.uvarint(); id < uint64(len(terms)) {
					*list = append(*list, terms[id])
				} else {
					r.fail("term %d of %d", id, len(terms))
				}
			}
		}
		n := r.count(2)
		for k := 0; k < n && r.err == nil; k++ {
			id, in, lead := r.uvarint(), r.uvarint(), r.uvarint()
			switch {
			case id >= uint64(len(terms)):
				r.fail("hint term %d of %d", id, len(terms))
			case in == 0:
				r.fail("hint term %q of tool %d is in no hint", terms[id], i)
			case lead&^in != 0:
				r.fail("hint term %q of tool %d starts a hint it is not in", terms[id], i)
			case lead != 0 && d.leads == 64:
				r.fail("tool %d has more phrasings than it can", i)
			case k > 0 && (lead != 0 && d.hints[k-1].lead == 0 ||
				(lead == 0) == (d.hints[k-1].lead == 0) && terms[id] <= d.hints[k-1].term):
				r.fail("hint terms of tool %d out of order", i)
			default:
				d.hints = append(d.hints, hintTerms{term: terms[id], in: in, lead: lead})
				d.written = d.written || in&^ownMask != 0
				ix.phrased = ix.phrased || in&ownMask != 0
				if lead != 0 {
					d.leads++
				}
			}
		}
		seg.hinted = seg.hinted || d.written
	}
	seg.post = make(map[string]*plist, len(terms))
	lists := make([]plist, len(terms))
	ix.df = make(map[string]int32, len(terms))
	for i := 0; i < len(terms) && r.err == nil; i++ {
		n := r.count(6)
		ps := make([]posting, n)
		doc := uint32(0)
		for j := range ps {
			delta := r.uvarint()
			if delta > uint64(len(docs)) || (j > 0 && delta == 0) {
				r.fail("posting out of order")
				break
			}
			doc += uint32(delta)
			if int(doc) >= len(docs) {
				r.fail("posting for tool %d of %d", doc, len(docs))
				break
			}
			sat, fields := math.Float32frombits(r.u32()), r.byte()
			if fields >= 1<<fieldBits {
				r.fail("posting for tool %d names fields %#x", doc, fields)
				break
			}
			if !(sat >= 0 && sat <= 1) {
				r.fail("posting for tool %d has saturated term frequency %v, outside [0, 1]", doc, sat)
				break
			}
			ps[j] = newPosting(doc, sat, fields)
		}
		l := &lists[i]
		l.ps = ps
		for _, p := range ps {
			l.max = max(l.max, p.sat)
		}
		l.top = topServer(seg, ps)
		seg.post[terms[i]] = l
		ix.df[terms[i]] = int32(len(ps))
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes left over", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("search: loading a saved index: %w", r.err)
	}
	indexBlocks(seg)
	ix.segs = []*segment{seg}
	for _, info := range ix.servers {
		info.seg = seg
	}
	ix.n, ix.total = len(docs), len(docs)
	ix.setNameIDF(seg)
	ix.indexGroups(seg)
	indexBlockNames(seg)
	ix.names = newNameIndex(len(docs))
	for _, d := range docs {
		ix.names.add(d.tool)
	}
	ix.indexServerTerms()
	return ix, nil
}

// topServer is the server with the most documents among ps, which come
// grouped by server.
func topServer(seg *segment, ps []posting) serverRun {
	var top, run serverCount
	var doc uint32
	for _, p := range ps {
		srv := seg.docs[p.doc()].tool.Server
		if srv != run.server {
			run = serverCount{server: srv}
		}
		run.count++
		if run.count > top.count {
			top, doc = run, p.doc()
		}
	}
	return serverRun{doc: doc, count: top.count}
}

// SavedFingerprint is, for an index made by Load, the Fingerprint of the
// catalog it was saved for; nil for an index made otherwise.
func (ix *Index) SavedFingerprint() []byte { return ix.saved }

// Fingerprint identifies what an index saved for snap with DefaultWeights
// depends on: two snapshots with equal fingerprints load the same saved
// index. A program can compare it with the fingerprint of what it saved
// last to tell whether saving again is worth it.
func Fingerprint(snap *catalog.Snapshot) []byte {
	return fingerprint(DefaultWeights, snap.Servers())
}

func (ix *Index) sortedServers() []*catalog.Server {
	out := make([]*catalog.Server, 0, len(ix.servers))
	for _, key := range sortedKeys(ix.servers) {
		out = append(out, ix.servers[key].srv)
	}
	return out
}

// fingerprint hashes what a saved index depends on: the analysis version,
// the weights, and every server (in key order) and tool as the index sees
// them.
func fingerprint(w Weights, servers []*catalog.Server) []byte {
	h := sha256.New()
	var buf []byte
	raw := func(b []byte) {
		buf = binary.AppendUvarint(buf[:0], uint64(len(b)))
		h.Write(buf)
		h.Write(b)
	}
	str := func(s string) {
		buf = binary.AppendUvarint(buf[:0], uint64(len(s)))
		h.Write(buf)
		h.Write([]byte(s))
	}
	str(savedMagic)
	str(fmt.Sprint(analysisVersion, " ", buildRevision()))
	for _, f := range [][]float64{w.Field[:], w.B[:], {w.K1, w.Synonym, w.NameCoverage, w.Coordination,
		w.MinRelative, w.ImplicitMention, w.SynonymMaxDF, w.ServerMention, float64(w.LongQuery), w.Action, w.HintRest, w.HintCoverage, w.HintLead}} {
		for _, x := range f {
			buf = binary.LittleEndian.AppendUint64(buf[:0], math.Float64bits(x))
			h.Write(buf)
		}
	}
	for _, srv := range servers {
		str("server")
		str(serverText(srv))
		for _, t := range srv.Tools {
			raw(t.Raw)
			str(strings.Join(t.Keywords, "\x00"))
			str(strings.Join(t.Hints, "\x00"))
		}
	}
	return h.Sum(nil)
}

// buildRevision is the version control revision the program was built
// from, when the build recorded one: a program built from other sources
// may analyse differently.
var buildRevision = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	return rev + modified
})

// reader decodes a saved index; the first problem sticks and every later
// read returns zeros.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("damaged: "+format, args...)
	}
	r.b = nil
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail("truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a number of items each at least min bytes long, refusing
// one the remaining data cannot hold.
func (r *reader) count(min int) int {
	v := r.uvarint()
	if v > uint64(len(r.b)/min) {
		r.fail("a count of %d does not fit in %d bytes", v, len(r.b))
		return 0
	}
	return int(v)
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) byte() byte {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}
