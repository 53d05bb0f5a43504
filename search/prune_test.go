package search_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
	"github.com/toolsearch/toolsearch/search"
)

// samePruned checks that ranking with pruning returns exactly what reading
// every posting returns: the same tools, in the same order, with the same
// scores and explanations.
func samePruned(t *testing.T, ix *search.Index, reqs []search.Request) {
	t.Helper()
	full := search.WithoutPruning(ix)
	ctx := context.Background()
	for _, req := range reqs {
		got, err := ix.Search(ctx, req)
		if err != nil {
			t.Fatalf("%q: %v", req.Query, err)
		}
		want, err := full.Search(ctx, req)
		if err != nil {
			t.Fatalf("%q without pruning: %v", req.Query, err)
		}
		if got.Total > want.Total {
			t.Errorf("%q: total %d with pruning, more than the %d without", req.Query, got.Total, want.Total)
		}
		if len(got.Hits) != len(want.Hits) {
			t.Errorf("%q (n=%d): %d hits with pruning, %d without:\n got %s\nwant %s", req.Query, req.MaxResults, len(got.Hits), len(want.Hits), hitList(got), hitList(want))
			continue
		}
		for i := range got.Hits {
			g, w := got.Hits[i], want.Hits[i]
			if g.Tool.ID() != w.Tool.ID() || g.Score != w.Score || g.Why != w.Why {
				t.Errorf("%q (n=%d): hit %d differs:\n got %s\nwant %s", req.Query, req.MaxResults, i, hitList(got), hitList(want))
				break
			}
		}
		if strings.Join(got.NearestServers, ",") != strings.Join(want.NearestServers, ",") {
			t.Errorf("%q: nearest servers %v with pruning, %v without", req.Query, got.NearestServers, want.NearestServers)
		}
	}
}

func hitList(r search.Result) string {
	var b strings.Builder
	for _, h := range r.Hits {
		fmt.Fprintf(&b, "%s(%.6g) ", h.Tool.ID(), h.Score)
	}
	return b.String()
}

// variants turns queries into requests: several result counts, a required
// word, a server filter and a visibility predicate.
func variants(queries []string, servers []string) []search.Request {
	var reqs []search.Request
	hideOdd := func(t *catalog.Tool) bool { return len(t.Name)%2 == 0 }
	for i, q := range queries {
		for _, n := range []int{1, 5, 20} {
			reqs = append(reqs, search.Request{Query: q, MaxResults: n})
		}
		if f := strings.Fields(q); len(f) > 1 {
			f[len(f)-1] = "+" + f[len(f)-1]
			reqs = append(reqs, search.Request{Query: strings.Join(f, " "), MaxResults: 5})
		}
		reqs = append(reqs,
			search.Request{Query: q, MaxResults: 5, Visible: hideOdd},
			search.Request{Query: q, MaxResults: 3, Servers: []string{servers[i%len(servers)], servers[(i*7+3)%len(servers)]}},
		)
	}
	return reqs
}

func TestPruningKeepsResultsMadeUp(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	ix := search.Build(snap)
	words := append(append(append([]string{}, benchVerbs...), benchObjects...), benchFiller...)
	rng := rand.New(rand.NewPCG(7, 11))
	var queries []string
	for range 150 {
		var q []string
		for range 1 + rng.IntN(8) {
			q = append(q, words[rng.IntN(len(words))])
		}
		queries = append(queries, strings.Join(q, " "))
	}
	var keys []string
	for _, s := range snap.Servers() {
		keys = append(keys, s.Key)
	}
	// Server names as words, so queries mention servers.
	queries = append(queries, keys[0]+" create issue", strings.ReplaceAll(keys[3], "-", " ")+" list")
	samePruned(t, ix, variants(queries, keys))

	// Several segments with retired documents.
	servers := snap.Servers()
	changed := make([]*catalog.Server, len(servers))
	copy(changed, servers)
	var raws []json.RawMessage
	for _, tl := range servers[4].Tools[:40] {
		raws = append(raws, tl.Raw)
	}
	srv, err := catalog.NewServer(servers[4].Key, raws, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	changed[4] = srv
	next, err := catalog.NewSnapshot(changed...)
	if err != nil {
		t.Fatal(err)
	}
	samePruned(t, ix.Update(next, servers[4].Key), variants(queries[:60], keys))
}

func TestPruningKeepsResultsRealCatalog(t *testing.T) {
	t.Parallel()
	snap := sharedtest.Catalog(t)
	f, err := os.Open(sharedtest.QueriesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var queries []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q struct{ Query string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q.Query)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range snap.Servers() {
		keys = append(keys, s.Key)
	}
	samePruned(t, search.Build(snap), variants(queries, keys))
}
