package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/evaluate"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// samePruned checks that early stopping changes nothing a caller sees but
// Total: the same hits in the same order, with bit-identical scores and the
// same explanations. It returns how many answers stopped early.
func samePruned(t *testing.T, ix *search.Index, reqs []search.Request) int {
	t.Helper()
	if !ix.Prunable() {
		t.Fatal("the index is not prunable")
	}
	ctx := context.Background()
	early := 0
	for _, req := range reqs {
		req.Explain = true
		want, errW := ix.SearchExhaustive(ctx, req)
		got, errG := ix.SearchPruned(ctx, req)
		if (errW == nil) != (errG == nil) {
			t.Fatalf("%q: errors differ: pruned %v, exhaustive %v", req.Query, errG, errW)
		}
		if got.TotalAtLeast {
			early++
			if got.Total > want.Total {
				t.Errorf("%q: pruned Total %d exceeds the true total %d", req.Query, got.Total, want.Total)
			}
		} else if got.Total != want.Total {
			t.Errorf("%q: Total %d, want %d", req.Query, got.Total, want.Total)
		}
		if len(got.Hits) != len(want.Hits) {
			t.Errorf("%q (k=%d): %d hits, want %d\n got %v\nwant %v", req.Query, req.MaxResults, len(got.Hits), len(want.Hits), hitList(got), hitList(want))
			continue
		}
		for i := range got.Hits {
			g, w := got.Hits[i], want.Hits[i]
			if g.Tool != w.Tool || g.Score != w.Score || g.Why != w.Why {
				t.Errorf("%q (k=%d) hit %d: %s %v (%s), want %s %v (%s)", req.Query, req.MaxResults, i,
					g.Tool.ID(), g.Score, g.Why, w.Tool.ID(), w.Score, w.Why)
			}
		}
	}
	return early
}

// mergedWords counts the query words, over all queries, whose blocks are
// read through a merged list of the word and its synonyms.
func mergedWords(ix *search.Index, queries []string) int {
	n := 0
	for _, q := range queries {
		n += ix.MergedGroups(q)
	}
	return n
}

func hitIDs(r search.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Tool.ID())
	}
	return out
}

func hitList(r search.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, fmt.Sprintf("%s=%.6g", h.Tool.ID(), h.Score))
	}
	return out
}

// variants asks each query with several result counts, with +required
// words, and through a visibility filter that hides every third server.
func variants(snap *catalog.Snapshot, queries []string) []search.Request {
	servers := snap.Servers()
	hidden := map[string]bool{}
	for i, s := range servers {
		if i%3 == 0 {
			hidden[s.Key] = true
		}
	}
	visible := func(t *catalog.Tool) bool { return !hidden[t.Server] }
	var reqs []search.Request
	for i, q := range queries {
		for _, k := range []int{1, 5, 20} {
			reqs = append(reqs, search.Request{Query: q, MaxResults: k})
		}
		reqs = append(reqs, search.Request{Query: q, MaxResults: 5, Visible: visible})
		if ws := strings.Fields(q); len(ws) > 1 {
			ws[i%len(ws)] = "+" + ws[i%len(ws)]
			reqs = append(reqs, search.Request{Query: strings.Join(ws, " "), MaxResults: 5})
		}
		if len(servers) > 2 {
			reqs = append(reqs, search.Request{Query: q, MaxResults: 5, Servers: []string{servers[i%len(servers)].Key, servers[(i+1)%len(servers)].Key}})
		}
	}
	return reqs
}

func TestPrunedMatchesExhaustiveMadeUp(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	ix := search.Build(snap)
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(ws []string) string { return ws[rng.IntN(len(ws))] }
	var queries []string
	for range 150 {
		var ws []string
		for range 1 + rng.IntN(7) {
			switch rng.IntN(4) {
			case 0:
				ws = append(ws, pick(benchVerbs))
			case 1:
				ws = append(ws, pick(benchObjects))
			case 2:
				ws = append(ws, pick(benchFiller))
			default:
				ws = append(ws, pick(benchParams))
			}
		}
		queries = append(queries, strings.Join(ws, " "))
	}
	queries = underRace(queries, 10)
	// Words naming servers, and words no tool uses.
	queries = append(queries, "issue server 03 create", "the a of", "zzz qqq create", "webhook workspace 12")
	// More lists than a block's 64-bit list word has bits, so that lists
	// share bits: the groups read through merged lists need none, so
	// this needs an index without them.
	w := search.DefaultWeights
	w.LongQuery = 0 // every query reads synonyms
	unmerged := search.BuildUnmerged(snap, w)
	words := slices.Concat(benchVerbs, benchObjects, benchFiller)
	slices.SortStableFunc(words, func(a, b string) int { return unmerged.QueryLists(b) - unmerged.QueryLists(a) })
	wide := strings.Join(words[:search.MaxTerms], " ")
	if n := unmerged.QueryLists(wide); n <= 64 {
		t.Fatalf("the wide query reads %d lists, want more than 64", n)
	}
	queries = append(queries, wide)
	early := samePruned(t, ix, variants(snap, queries))
	if early == 0 {
		t.Error("no query stopped early: the test checks nothing")
	}
	if samePruned(t, unmerged, variants(snap, queries)) == 0 {
		t.Error("no query stopped early without merged lists: the test checks nothing")
	}
	// With search hints on half the tools, hint coverage bounds too.
	hinted := hintedCatalog(t)
	if samePruned(t, search.Build(hinted), variants(hinted, queries)) == 0 {
		t.Error("no query stopped early with hints: the test checks nothing")
	}
	t.Logf("%d answers stopped early; %d query words read through merged lists", early, mergedWords(ix, queries))
}

func TestPrunedMatchesExhaustiveReal(t *testing.T) {
	t.Parallel()
	snap := sharedtest.Catalog(t)
	f, err := os.Open(sharedtest.QueriesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dev, err := evaluate.LoadQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, q := range dev {
		queries = append(queries, q.Query)
	}
	ix := search.Build(snap)
	asked := underRace(queries, 8)
	early := samePruned(t, ix, variants(snap, asked))
	if early == 0 {
		t.Error("no query stopped early: the test checks nothing")
	}
	merged := mergedWords(ix, asked)
	if merged == 0 {
		t.Error("no query word was read through a merged list: the test does not check them")
	}
	t.Logf("%d of %d answers stopped early; %d query words read through merged lists", early, len(variants(snap, asked)), merged)
	// With the shared hints, as toolsearch eval --hints ranks.
	set, err := hints.LoadFile(sharedtest.HintsPath(t))
	if err != nil {
		t.Fatal(err)
	}
	hinted, _, err := set.Apply(snap)
	if err != nil {
		t.Fatal(err)
	}
	if samePruned(t, search.Build(hinted), variants(hinted, asked)) == 0 {
		t.Error("no query stopped early with hints: the test checks nothing")
	}
}

// underRace keeps every step-th of xs, from the first, when the race
// detector is on, which makes each search several times slower; without
// it (the second go test of .ci/run) every one is kept.
func underRace[T any](xs []T, step int) []T {
	if !raceEnabled {
		return xs
	}
	var out []T
	for i := 0; i < len(xs); i += step {
		out = append(out, xs[i])
	}
	return out
}

// FuzzPruned checks that reading blocks by their bounds answers any query
// exactly as reading every list does, on the made-up catalog.
func FuzzPruned(f *testing.F) {
	for _, q := range []string{"create issue", "+send message channel", "list files in folder 07", "the a of",
		"webhook workspace 12", "update payment invoice status", "zzz", "merge branch +commit"} {
		f.Add(q, uint8(5))
	}
	ix := search.Build(benchCatalog(f))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string, k uint8) {
		req := search.Request{Query: q, MaxResults: int(k%25) + 1}
		want, errW := ix.SearchExhaustive(ctx, req)
		got, errG := ix.SearchPruned(ctx, req)
		if (errW == nil) != (errG == nil) {
			t.Fatalf("%q: errors differ: pruned %v, exhaustive %v", q, errG, errW)
		}
		if len(got.Hits) != len(want.Hits) {
			t.Fatalf("%q: %d hits, want %d", q, len(got.Hits), len(want.Hits))
		}
		for i := range got.Hits {
			if got.Hits[i].Tool != want.Hits[i].Tool || got.Hits[i].Score != want.Hits[i].Score {
				t.Fatalf("%q hit %d: %s %v, want %s %v", q, i, got.Hits[i].Tool.ID(), got.Hits[i].Score, want.Hits[i].Tool.ID(), want.Hits[i].Score)
			}
		}
		if got.Total > want.Total || (!got.TotalAtLeast && got.Total != want.Total) {
			t.Fatalf("%q: total %d (at least: %v), want %d", q, got.Total, got.TotalAtLeast, want.Total)
		}
	})
}

// TestCompact checks which indexes read block by block: a built or loaded
// index does; one split by an update does not, and still answers as a
// build of the same catalog does.
func TestCompact(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	built, loaded, _ := builtAndLoaded(t, snap)
	servers := snap.Servers()
	next, err := catalog.NewSnapshot(servers[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	updated := built.Update(next, servers[0].Key)
	for _, tc := range []struct {
		name string
		ix   *search.Index
		want bool
	}{{"built", built, true}, {"loaded", loaded, true}, {"updated", updated, false}, {"rebuilt", search.Build(next), true}} {
		if got := tc.ix.Compact(); got != tc.want {
			t.Errorf("%s: Compact() = %v, want %v", tc.name, got, tc.want)
		}
	}
	fresh := search.Build(next)
	for _, q := range []string{"create issue", "send message channel", "+merge branch"} {
		a, errA := updated.Search(context.Background(), search.Request{Query: q})
		b, errB := fresh.Search(context.Background(), search.Request{Query: q})
		if errA != nil || errB != nil {
			t.Fatalf("%q: %v, %v", q, errA, errB)
		}
		// An update keeps the other servers' length norms, so scores may
		// differ a little; the tools found may not.
		ia, ib := hitIDs(a), hitIDs(b)
		slices.Sort(ia)
		slices.Sort(ib)
		if !slices.Equal(ia, ib) {
			t.Errorf("%q: updated index %v, built %v", q, hitList(a), hitList(b))
		}
	}
}
