package search

import (
	"fmt"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// TestBuildListsMatchIndexBlocks checks that a build gives every posting
// list the block maxima, name postings, largest wtf and top server that
// indexBlocks, indexBlockNames and topServer, which a loaded index uses,
// give it, and that each block entry's name is the largest invName of the
// block's tools with the term in their name.
func TestBuildListsMatchIndexBlocks(t *testing.T) {
	t.Parallel()
	words := []string{"create", "issue", "list", "file", "message", "deploy", "report", "channel"}
	var servers []*catalog.Server
	for s := range 40 {
		var tools []fixtureTool
		for i := range 60 {
			w1, w2 := words[(s+i)%len(words)], words[(s*3+i*5)%len(words)]
			tools = append(tools, fixtureTool{
				name:   fmt.Sprintf("%s_%s_%d", w1, w2, i),
				desc:   fmt.Sprintf("The %s of the %s, %s again.", w2, words[i%len(words)], w1),
				params: map[string]string{w2: "Which " + w1},
			})
		}
		servers = append(servers, fixtureServer(t, fmt.Sprintf("srv%02d", s), tools...))
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	ix := Build(snap)
	seg := ix.segs[0]
	want := &segment{docs: seg.docs, srv: seg.srv, post: map[string]*plist{}}
	for term, l := range seg.post {
		want.post[term] = &plist{ps: l.ps}
	}
	indexBlocks(want)
	want.invName = seg.invName
	indexBlockNames(want)
	long, named := 0, 0
	for term, l := range seg.post {
		w := want.post[term]
		var mx float32
		for _, p := range l.ps {
			mx = max(mx, p.sat)
		}
		top := topServer(seg, l.ps)
		if l.max != mx || l.top.count != top.count || seg.server(l.top) != seg.server(top) {
			t.Errorf("%q: max %v, top %s×%d; want %v, %s×%d", term, l.max, seg.server(l.top), l.top.count, mx, seg.server(top), top.count)
		}
		if !slices.Equal(l.blocks, w.blocks) || (l.blocks == nil) != (w.blocks == nil) {
			t.Errorf("%q: blocks %v, want %v", term, l.blocks, w.blocks)
		}
		if !slices.Equal(l.starts(), w.starts()) || len(l.aux) < len(l.blocks) {
			t.Errorf("%q: starts %v, want %v (%d blocks)", term, l.starts(), w.starts(), len(l.blocks))
		}
		if !slices.Equal(l.names(), w.names()) {
			t.Errorf("%q: names %v, want %v", term, l.names(), w.names())
		}
		if l.blocks != nil {
			long++
			// Each entry's name from the postings' fields.
			names := make([]float32, len(l.blocks))
			k, last := -1, ^uint32(0)
			for _, p := range l.ps {
				if b := p.doc() >> blockShift; b != last {
					k, last = k+1, b
				}
				if p.fields()&(1<<FieldName) != 0 {
					names[k] = max(names[k], seg.invName[p.doc()])
				}
			}
			for k, e := range l.blocks {
				if e.name != names[k] {
					t.Errorf("%q: entry %d name %v, want %v", term, k, e.name, names[k])
				}
				if e.name > 0 {
					named++
				}
			}
			n := rankWords(len(seg.docs))
			got, exp := seg.ranks[l.rankAt:int(l.rankAt)+n], want.ranks[w.rankAt:int(w.rankAt)+n]
			if !slices.Equal(got, exp) {
				t.Errorf("%q: block ranks %v, want %v", term, got, exp)
			}
		}
	}
	if long < 5 || named < 5 {
		t.Errorf("only %d lists have block maxima, %d entries a name bound; the test means to check them", long, named)
	}
}
