package search

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// mergedFixture is a catalog whose commonest words have synonyms with long
// lists, so that the index merges their groups; the verbs' synonyms occur
// in names, descriptions and parameters, alone or together.
func mergedFixture(t *testing.T) *catalog.Snapshot {
	t.Helper()
	verbs := []string{"create", "add", "make", "delete", "remove", "get", "fetch", "read", "list", "show", "send", "post"}
	objects := []string{"issue", "file", "message", "channel", "report", "record"}
	var servers []*catalog.Server
	for s := range 30 {
		var tools []fixtureTool
		for i := range 50 {
			v1, v2 := verbs[(s+i)%len(verbs)], verbs[(s*7+i*3)%len(verbs)]
			obj := objects[(s+i*5)%len(objects)]
			tools = append(tools, fixtureTool{
				name:   fmt.Sprintf("%s_%s_%d", v1, obj, i),
				desc:   fmt.Sprintf("%s a %s, then %s it; %s %s.", v2, obj, v1, v2, v2),
				params: map[string]string{obj: "The " + obj + " to " + v2},
			})
		}
		servers = append(servers, fixtureServer(t, fmt.Sprintf("srv%02d", s), tools...))
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestMergedLists checks every merged list of an index against its
// members read one by one, with the weights the word's plan gives them: the
// tools it holds, each one's best score (bit for bit), own-word bit and
// name idf, and each block entry's bounds and postings.
func TestMergedLists(t *testing.T) {
	t.Parallel()
	ix := Build(mergedFixture(t))
	seg := ix.segs[0]
	if len(seg.groups) < 4 {
		t.Fatalf("%d merged groups, want at least 4: the fixture no longer makes long synonym lists", len(seg.groups))
	}
	type want struct {
		best uint32
		own  bool
		name float32
	}
	for head, g := range seg.groups {
		p := ix.plan(head, false)
		if p.merged != g {
			t.Errorf("%q: the plan does not use the merged list", head)
			continue
		}
		if g.live != len(p.members) || g.nameIDF[0] != 0 || slices.ContainsFunc(g.nameIDF[g.live+1:], func(f float32) bool { return f != 0 }) {
			t.Errorf("%q: %d live members and name idfs %v; the plan has %d members", head, g.live, g.nameIDF, len(p.members))
			continue
		}
		wants := map[uint32]*want{}
		for _, m := range p.members {
			for _, ps := range m.l.ps {
				w := wants[ps.doc()]
				if w == nil {
					w = &want{}
					wants[ps.doc()] = w
				}
				w.best = max(w.best, math.Float32bits(m.w*ps.sat))
				w.own = w.own || m.own
				if ps.fields()&(1<<FieldName) != 0 {
					w.name = max(w.name, m.fidf)
				}
			}
		}
		if n := len(g.starts); n != len(g.blocks)+1 || int(g.starts[n-1])*gRecord != len(g.ps) {
			t.Errorf("%q: %d starts ending at %d for %d entries and %d postings", head, n, g.starts[n-1], len(g.blocks), len(g.ps))
			continue
		}
		k, seen := 0, 0
		for wi, rk := range g.ranks {
			if rk.before != uint32(k) {
				t.Errorf("%q: rank word %d counts %d entries before it, want %d", head, wi, rk.before, k)
			}
			for b := rk.bits; b != 0; b &= b - 1 {
				i := uint32(wi*64 + bits.TrailingZeros64(b))
				from, to := g.run(i)
				if from != int(g.starts[k]) || to != int(g.starts[k+1]) || from >= to {
					t.Errorf("%q block %d: run %d-%d, entry %d starts %d-%d", head, i, from, to, k, g.starts[k], g.starts[k+1])
				}
				var c, name float32
				prev := int64(-1)
				for rec := g.ps[g.starts[k]*gRecord : g.starts[k+1]*gRecord]; len(rec) > 0; rec = rec[gRecord:] {
					key, best := gposting((*[gRecord]byte)(rec))
					d := i<<blockShift | key&(blockSize-1)
					w := wants[d]
					if w == nil || d>>blockShift != i || int64(d) <= prev {
						t.Errorf("%q block %d: posting of document %d is out of place or of no member", head, i, d)
						continue
					}
					prev = int64(d)
					code, own := key>>gNameShift, key>>gOwnBit&1 == 1
					if math.Float32bits(best) != w.best || own != w.own || g.nameIDF[code] != w.name {
						t.Errorf("%q document %d: best %v own %v name %v, want %v %v %v", head, d,
							best, own, g.nameIDF[code], math.Float32frombits(w.best), w.own, w.name)
					}
					c = max(c, best)
					name = max(name, w.name*seg.invName[d])
					seen++
				}
				if e := g.blocks[k]; e.c != c || e.name != name {
					t.Errorf("%q block %d: bounds %v, %v; want %v, %v", head, i, e.c, e.name, c, name)
				}
				k++
			}
		}
		if k != len(g.blocks) || seen != len(wants) || seen*gRecord != len(g.ps) {
			t.Errorf("%q: %d entries of %d, %d postings of %d, for %d tools", head, k, len(g.blocks), seen, len(g.ps)/gRecord, len(wants))
		}
		for i := range uint32(len(seg.docs)+blockSize-1) >> blockShift {
			if g.ranks[i/64].bits&(1<<(i%64)) != 0 {
				continue
			}
			if from, to := g.run(i); from != 0 || to != 0 {
				t.Errorf("%q: block %d has no entry but a run %d-%d", head, i, from, to)
			}
		}
	}
}
