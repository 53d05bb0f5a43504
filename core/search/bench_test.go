package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// The benchmarks here run on a made-up catalog, so they need nothing outside
// the repository: benchServers servers of benchToolsPerServer tools, names,
// descriptions and parameters drawn from a small fixed vocabulary by a
// seeded generator. The comparison with bleve on the real catalog lives in
// the separate bench module.

const (
	benchServers        = 50
	benchToolsPerServer = 100 // 5,000 tools in all
)

var (
	benchVerbs = strings.Fields(`create list get update delete search send read write archive
		upload download export import assign close merge schedule cancel approve`)
	benchObjects = strings.Fields(`issue repository file message channel user ticket invoice event
		calendar comment branch commit deployment dashboard report contact order payment
		document folder project task label webhook`)
	benchFiller = strings.Fields(`the a of for to in with from by new existing remote local given
		workspace account team status details metadata content record item entry page query
		filter results optional required default limit cursor identifier name title summary`)
	benchParams = strings.Fields(`id name title body query limit cursor owner repo channel user
		path content status labels assignee due_date page_size format`)
)

// benchCatalog returns the made-up catalog: the same for every call, made
// once and shared by the tests (a snapshot is not changed once made).
func benchCatalog(tb testing.TB) *catalog.Snapshot {
	tb.Helper()
	snap, err := sharedMadeUp()
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

var sharedMadeUp = sync.OnceValues(makeBenchCatalog)

// makeBenchCatalog makes the made-up catalog afresh.
func makeBenchCatalog() (*catalog.Snapshot, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(ws []string) string { return ws[rng.IntN(len(ws))] }
	servers := make([]*catalog.Server, 0, benchServers)
	for s := range benchServers {
		key := fmt.Sprintf("%s-%s-%02d", pick(benchObjects), pick(benchFiller), s)
		var raws []json.RawMessage
		seen := map[string]bool{}
		for len(raws) < benchToolsPerServer {
			verb, obj := pick(benchVerbs), pick(benchObjects)
			name := verb + "_" + obj
			if seen[name] {
				name = fmt.Sprintf("%s_%s_%s", verb, pick(benchObjects), obj)
				if seen[name] {
					continue
				}
			}
			seen[name] = true
			desc := []string{strings.ToUpper(verb[:1]) + verb[1:], "a", obj}
			for range 10 + rng.IntN(20) {
				switch rng.IntN(4) {
				case 0:
					desc = append(desc, pick(benchObjects))
				case 1:
					desc = append(desc, pick(benchVerbs))
				default:
					desc = append(desc, pick(benchFiller))
				}
			}
			props := map[string]any{}
			for range 1 + rng.IntN(4) {
				props[pick(benchParams)] = map[string]any{"type": "string",
					"description": "The " + pick(benchFiller) + " " + pick(benchObjects) + " " + pick(benchFiller)}
			}
			raw, err := json.Marshal(map[string]any{
				"name": name, "description": strings.Join(desc, " ") + ".",
				"inputSchema": map[string]any{"type": "object", "properties": props},
			})
			if err != nil {
				return nil, fmt.Errorf("the made-up catalog: %w", err)
			}
			raws = append(raws, raw)
		}
		srv, err := catalog.NewServer(key, raws, nil, false)
		if err != nil {
			return nil, fmt.Errorf("the made-up catalog: %w", err)
		}
		servers = append(servers, srv)
	}
	return catalog.NewSnapshot(servers...)
}

// BenchmarkBuild indexes the 5,000 made-up tools.
func BenchmarkBuild(b *testing.B) {
	snap := benchCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		search.Build(snap)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(snap.Tools())), "ns/tool")
}

// BenchmarkUpdate re-indexes one server (100 tools, one description
// changed) of the 5,000-tool index. Update leaves its receiver unchanged, so
// every iteration does the same work.
func BenchmarkUpdate(b *testing.B) {
	snap := benchCatalog(b)
	ix := search.Build(snap)
	old := snap.Servers()[benchServers/2]
	var raws []json.RawMessage
	for i, t := range old.Tools {
		raw := t.Raw
		if i == 0 {
			raw = json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"Changed: archive every comment of a repository."}`, t.Name))
		}
		raws = append(raws, raw)
	}
	srv, err := catalog.NewServer(old.Key, raws, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	next, _, err := snap.Apply(catalog.Put(srv))
	if err != nil {
		b.Fatal(err)
	}
	if got := ix.Update(next, old.Key).Len(); got != len(snap.Tools()) {
		b.Fatalf("updated index has %d tools, want %d", got, len(snap.Tools()))
	}
	b.ReportAllocs()
	for b.Loop() {
		ix.Update(next, old.Key)
	}
}

// benchKeywords are keyword queries over the made-up catalog's words.
var benchKeywords = []string{
	"create an issue in the repository",
	"send a message to a channel",
	"list calendar events for a user",
	"download the invoice report as a file",
	"schedule deployment of a branch",
	"who can approve this payment order",
	"archive old tickets and comments of the project",
	"+merge branch commit",
}

// BenchmarkSearch runs each query form against the 5,000-tool index, one
// query per iteration, cycling over a few queries of that form.
func BenchmarkSearch(b *testing.B) {
	snap := benchCatalog(b)
	ix := search.Build(snap)
	tools := snap.Tools()
	id := func(i int) string { return tools[i*97%len(tools)].ID() }
	name := func(i int) string { return tools[i*131%len(tools)].Name }
	forms := []struct {
		name    string
		mode    search.Mode
		form    search.Form
		queries []string
	}{
		{"keyword", search.ModeAuto, search.FormKeyword, benchKeywords},
		{"select", search.ModeAuto, search.FormSelect, []string{
			"select:" + id(1),
			"select:" + id(2) + "," + id(3),
			"select:" + id(4) + "," + id(5) + "," + id(6) + "," + name(7),
		}},
		{"exact", search.ModeAuto, search.FormExact, []string{
			id(8), name(9), strings.ReplaceAll(id(10), "/", "__"),
		}},
		{"regex", search.ModeRegex, search.FormRegex, []string{
			`^create_.*issue`,
			`(upload|download)_file`,
			`webhook|dashboard`,
			`ticket$`,
		}},
	}
	ctx := context.Background()
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) {
			for _, q := range f.queries {
				res, err := ix.Search(ctx, search.Request{Query: q, Mode: f.mode})
				if err != nil {
					b.Fatalf("%q: %v", q, err)
				}
				if res.Form != f.form || len(res.Hits) == 0 {
					b.Fatalf("%q: form %s with %d hits, want form %s with hits", q, res.Form, len(res.Hits), f.form)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(ctx, search.Request{Query: f.queries[i%len(f.queries)], Mode: f.mode}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// hintedCatalog is the made-up catalog with search hints on every second
// tool: one to four short hints each, drawn from the same vocabulary by
// a seeded generator. The same for every call, made once and shared.
func hintedCatalog(tb testing.TB) *catalog.Snapshot {
	tb.Helper()
	snap, err := sharedHinted()
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

var sharedHinted = sync.OnceValues(makeHintedCatalog)

// makeHintedCatalog makes the hinted catalog afresh, on a made-up catalog
// of its own, whose tools it writes the hints into.
func makeHintedCatalog() (*catalog.Snapshot, error) {
	rng := rand.New(rand.NewPCG(3, 5))
	pick := func(ws []string) string { return ws[rng.IntN(len(ws))] }
	plain, err := makeBenchCatalog()
	if err != nil {
		return nil, err
	}
	servers := plain.Servers()
	for _, srv := range servers {
		for i, tl := range srv.Tools {
			if i%2 == 1 {
				continue
			}
			var hs []string
			for range 1 + rng.IntN(4) {
				h := []string{pick(benchVerbs), pick(benchObjects)}
				for range rng.IntN(5) {
					h = append(h, pick(slices.Concat(benchFiller, benchObjects)))
				}
				hs = append(hs, strings.Join(h, " "))
			}
			tl.Hints = hs
		}
	}
	return catalog.NewSnapshot(servers...)
}

// BenchmarkSearchHinted runs keyword queries against the 5,000-tool index
// whose every second tool has search hints, one query per iteration: the
// cost of the two views and of every tool's phrasings.
func BenchmarkSearchHinted(b *testing.B) {
	ix := search.Build(hintedCatalog(b))
	queries := benchKeywords
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := ix.Search(ctx, search.Request{Query: queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
