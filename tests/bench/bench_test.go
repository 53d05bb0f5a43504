package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Corpora are loaded once per test binary and kept: growing the catalog is
// not what is measured.
var (
	corporaMu sync.Mutex
	corpora   = map[string]*Corpus{}
)

// corpus returns the corpus of size sz, skipping tb when the shared data
// are not there.
func corpus(tb testing.TB, sz Size) *Corpus {
	tb.Helper()
	corporaMu.Lock()
	defer corporaMu.Unlock()
	if c, ok := corpora[sz.Name]; ok {
		return c
	}
	c, err := Load(sz)
	if errors.Is(err, ErrNoData) {
		tb.Skipf("skipping: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	corpora[sz.Name] = c
	return c
}

// heapAlloc returns the bytes of live heap objects after a full collection.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkBuild measures indexing every tool of a corpus, from the catalog
// snapshot to a searchable index (for bleve that includes making its
// documents). Besides ns/op it reports ns/tool and B/tool: the growth of
// the live heap (after a full GC) from before the build to after it, with
// the index alive, per tool. The corpus itself is allocated beforehand and
// not counted.
//
// Names: BenchmarkBuild/<engine>/<size>. Run with -benchtime=1x (or a few
// x): one bleve build at 100k takes tens of seconds.
func BenchmarkBuild(b *testing.B) {
	for _, e := range Engines {
		b.Run(e.Name(), func(b *testing.B) {
			for _, sz := range Sizes {
				b.Run(sz.Name, func(b *testing.B) {
					c := corpus(b, sz)
					tools := len(c.Snap.Tools())
					b.ReportAllocs()
					var grew int64
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						before := heapAlloc()
						b.StartTimer()
						s, err := e.Build(c.Snap)
						if err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						grew += heapAlloc() - before
						runtime.KeepAlive(s)
						if err := s.Close(); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tools), "ns/tool")
					b.ReportMetric(float64(grew)/float64(b.N)/float64(tools), "B/tool")
				})
			}
		})
	}
}

// Indexes for BenchmarkQuery are built once per test binary and kept, so
// -count=N repeats only the queries.
var (
	searchersMu sync.Mutex
	searchers   = map[string]Searcher{}
)

func searcher(b *testing.B, e Engine, c *Corpus) Searcher {
	b.Helper()
	searchersMu.Lock()
	defer searchersMu.Unlock()
	key := e.Name() + "/" + c.Size.Name
	if s, ok := searchers[key]; ok {
		return s
	}
	s, err := e.Build(c.Snap)
	if err != nil {
		b.Fatal(err)
	}
	searchers[key] = s
	return s
}

// BenchmarkQuery measures one query per iteration, cycling over the dev
// query set, top TopK, against an index built beforehand (not timed, and
// kept for the rest of the run). Besides ns/op (the mean) it reports
// median-ns/query, the median of the per-query wall times of the run, and
// empty/query, the share of queries that found nothing. Run with
// -benchtime=<k×156>x (156 queries in the set) so each query counts the
// same.
//
// Names: BenchmarkQuery/<engine>/<size>.
func BenchmarkQuery(b *testing.B) {
	ctx := context.Background()
	for _, e := range Engines {
		b.Run(e.Name(), func(b *testing.B) {
			for _, sz := range Sizes {
				b.Run(sz.Name, func(b *testing.B) {
					c := corpus(b, sz)
					s := searcher(b, e, c)
					runtime.GC()
					qs := c.Queries
					durs := make([]time.Duration, 0, b.N)
					empty := 0
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						t0 := time.Now()
						hits, err := s.Search(ctx, qs[i%len(qs)].Text, TopK)
						durs = append(durs, time.Since(t0))
						if err != nil {
							b.Fatalf("%q: %v", qs[i%len(qs)].Text, err)
						}
						if len(hits) == 0 {
							empty++
						}
					}
					b.StopTimer()
					slices.Sort(durs)
					b.ReportMetric(float64(median(durs).Nanoseconds()), "median-ns/query")
					b.ReportMetric(float64(empty)/float64(b.N), "empty/query")
				})
			}
		})
	}
}

// median of sorted durations.
func median(d []time.Duration) time.Duration {
	switch n := len(d); {
	case n == 0:
		return 0
	case n%2 == 1:
		return d[n/2]
	default:
		return (d[n/2-1] + d[n/2]) / 2
	}
}

// hitAt5 is the share of queries with a gold tool among the first 5 hits.
// It also counts the queries that found nothing, and reports any query
// whose hits name a tool twice.
func hitAt5(t *testing.T, name string, s Searcher, qs []Query) (float64, int) {
	t.Helper()
	hit, empty, dup := 0, 0, 0
	for _, q := range qs {
		ids, err := s.Search(context.Background(), q.Text, TopK)
		if err != nil {
			t.Fatalf("%q: %v", q.Text, err)
		}
		if len(ids) == 0 {
			empty++
		}
		sorted := slices.Clone(ids)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) < len(ids) {
			if dup++; dup <= 3 {
				t.Errorf("%s: %q: a tool is returned twice: %v", name, q.Text, ids)
			}
		}
		for _, id := range ids {
			if slices.Contains(q.Gold, id) {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(len(qs)), empty
}

// TestSameAnswers checks that every engine answers the dev queries on the
// real catalog and at 10k tools, so the benchmark compares engines that
// find things: every one of the first queries gets hits from each, almost
// no query is left empty, no answer names a tool twice, and each finds a
// gold tool in the top 5 for a fair share of queries. It logs hit@5 and the
// top-5 overlap with toolsearch.
func TestSameAnswers(t *testing.T) {
	for _, sz := range Sizes[:2] {
		t.Run(sz.Name, func(t *testing.T) {
			c := corpus(t, sz)
			idx := map[string]Searcher{}
			for _, e := range Engines {
				s, err := e.Build(c.Snap)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				idx[e.Name()] = s
			}
			for _, q := range c.Queries[:8] {
				var got [][]string
				for _, e := range Engines {
					ids, err := idx[e.Name()].Search(context.Background(), q.Text, TopK)
					if err != nil {
						t.Fatalf("%s %q: %v", e.Name(), q.Text, err)
					}
					if len(ids) == 0 {
						t.Errorf("%s: no results for %q", e.Name(), q.Text)
					}
					got = append(got, ids)
				}
				var common []string
				for i, e := range Engines[1:] {
					n := 0
					for _, id := range got[0] {
						if slices.Contains(got[i+1], id) {
							n++
						}
					}
					common = append(common, fmt.Sprintf("%d with %s", n, e.Name()))
				}
				t.Logf("%q: of toolsearch's top %d, %s", q.Text, TopK, strings.Join(common, ", "))
			}
			for _, e := range Engines {
				h, empty := hitAt5(t, e.Name(), idx[e.Name()], c.Queries)
				t.Logf("%s at %s: hit@5 %.3f over %d queries, %d with no result", e.Name(), sz.Name, h, len(c.Queries), empty)
				if empty > len(c.Queries)/20 {
					t.Errorf("%s: %d of %d queries found nothing", e.Name(), empty, len(c.Queries))
				}
				if h < 0.3 {
					t.Errorf("%s: hit@5 %.3f; the engine is not finding the tools", e.Name(), h)
				}
			}
		})
	}
}

// TestBleveScoresWithBM25 checks the bleve engine really scores with BM25:
// its explanation has BM25's saturation and length normalisation. The same
// mapping in NewMemOnly (upsidedown) silently scores with TF-IDF, which is
// why the engine uses scorch.
func TestBleveScoresWithBM25(t *testing.T) {
	c := corpus(t, Sizes[0])
	s, err := Bleve{PerField: true}.Build(c.Snap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ix, _ := bleveIndexOf(s)
	q := c.Queries[0].Text
	expl := func(ix bleve.Index) string {
		res, err := ix.Search(bleve.NewSearchRequestOptions(BleveQuery(q), 1, 0, true))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Fatalf("no hit for %q", q)
		}
		return res.Hits[0].Expl.String()
	}
	if e := expl(ix); !strings.Contains(e, "saturation") {
		t.Errorf("scorch index does not score with BM25; explanation:\n%s", e)
	}

	mem, err := bleve.NewMemOnly(BleveMapping())
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, tool := range c.Snap.Tools()[:200] {
		srv, _ := c.Snap.Server(tool.Server)
		if err := mem.Index(tool.ID(), BleveDoc(tool, srv)); err != nil {
			t.Fatal(err)
		}
	}
	if e := expl(mem); strings.Contains(e, "saturation") {
		t.Logf("note: NewMemOnly now scores with BM25 too")
	} else {
		t.Logf("as expected, NewMemOnly with ScoringModel=bm25 scores with TF-IDF")
	}
}

// TestGrow checks the growth scheme on a made-up catalog (no shared data
// needed): exact size, unique IDs, deterministic, perturbed copies.
func TestGrow(t *testing.T) {
	var servers []*catalog.Server
	for s := range 3 {
		srv := &catalog.Server{Key: fmt.Sprintf("srv%d", s)}
		for i := range 4 {
			srv.Tools = append(srv.Tools, &catalog.Tool{
				Server: srv.Key, Name: fmt.Sprintf("do_thing_%d", i),
				Description: "Create list update delete search fetch send read write copy move the thing in the remote store now",
			})
		}
		servers = append(servers, srv)
	}
	base, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := Grow(base, 5, 1); g != base {
		t.Error("Grow to fewer tools than the base should return the base")
	}
	const n = 50
	g1, err := Grow(base, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := Grow(base, n, 7)
	if len(g1.Tools()) != n {
		t.Fatalf("grew to %d tools, want %d", len(g1.Tools()), n)
	}
	seen := map[string]bool{}
	changed := 0
	for i, tool := range g1.Tools() {
		if seen[tool.ID()] {
			t.Errorf("duplicate ID %s", tool.ID())
		}
		seen[tool.ID()] = true
		if other := g2.Tools()[i]; other.ID() != tool.ID() || other.Description != tool.Description {
			t.Errorf("Grow is not deterministic at %d: %s %q vs %s %q", i, tool.ID(), tool.Description, other.ID(), other.Description)
		}
		if strings.Contains(tool.Server, "-r") {
			if !strings.HasSuffix(tool.Name, "_"+tool.Server[strings.LastIndex(tool.Server, "-")+1:]) {
				t.Errorf("%s: name not suffixed with its replica", tool.ID())
			}
			if tool.Description != servers[0].Tools[0].Description {
				changed++
			}
		}
	}
	if want := n - len(base.Tools()); changed < want*3/4 {
		t.Errorf("only %d of %d copies have a perturbed description", changed, want)
	}
}

// TestWithParts checks the identifier split given to bleve.
func TestWithParts(t *testing.T) {
	for in, want := range map[string]string{
		"create_issue":      "create_issue create issue",
		"createPullRequest": "createPullRequest create Pull Request",
		"get-v2.items/list": "get-v2.items/list get v2 items list",
		"plain":             "plain plain",
	} {
		if got := withParts(in); got != want {
			t.Errorf("withParts(%q) = %q, want %q", in, got, want)
		}
	}
}

// sideBySideBurst is how many times in a row BenchmarkQuerySideBySide runs
// one engine on one query.
const sideBySideBurst = 3

// BenchmarkQuerySideBySide runs both engines on the same query one after
// the other, query by query, and keeps each query's fastest time per
// engine over the b.N passes over the query set: on a shared machine the
// minimum is what the engine costs, and interleaving gives both engines the
// same conditions. Each engine runs a query sideBySideBurst times in a row,
// so that both are timed with their own data in the caches, as in
// BenchmarkQuery, rather than right after the other engine evicted it. It
// reports each engine's median of those minimums in µs and their ratio
// (bleve ÷ toolsearch, > 1 when toolsearch is faster). Run with
// -benchtime=7x (seven passes).
//
// Names: BenchmarkQuerySideBySide/<size>.
func BenchmarkQuerySideBySide(b *testing.B) {
	ctx := context.Background()
	engines := []Engine{Toolsearch{}, Bleve{}}
	for _, sz := range Sizes {
		b.Run(sz.Name, func(b *testing.B) {
			c := corpus(b, sz)
			ss := make([]Searcher, len(engines))
			for i, e := range engines {
				ss[i] = searcher(b, e, c)
			}
			runtime.GC()
			best := make([][]time.Duration, len(engines))
			for i := range best {
				best[i] = make([]time.Duration, len(c.Queries))
				for j := range best[i] {
					best[i][j] = time.Duration(math.MaxInt64)
				}
			}
			b.ResetTimer()
			for range b.N {
				for j, q := range c.Queries {
					for i, s := range ss {
						for range sideBySideBurst {
							t0 := time.Now()
							if _, err := s.Search(ctx, q.Text, TopK); err != nil {
								b.Fatalf("%s %q: %v", engines[i].Name(), q.Text, err)
							}
							best[i][j] = min(best[i][j], time.Since(t0))
						}
					}
				}
			}
			b.StopTimer()
			meds := make([]float64, len(engines))
			for i := range engines {
				slices.Sort(best[i])
				meds[i] = float64(median(best[i]).Nanoseconds()) / 1e3
				b.ReportMetric(meds[i], engines[i].Name()+"-µs")
			}
			b.ReportMetric(meds[1]/meds[0], "bleve/toolsearch")
		})
	}
}
