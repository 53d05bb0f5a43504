package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/usage"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

func TestSplitForLearning(t *testing.T) {
	t.Parallel()
	var qs []Query
	for i := range 7 {
		qs = append(qs, Query{ID: fmt.Sprintf("a%d", i), Style: "a"}, Query{ID: fmt.Sprintf("b%d", i), Style: "b"})
	}
	qs = append(qs, Query{ID: "u0"}, Query{ID: "u1"})
	learn, measure := SplitForLearning(qs)
	ids := func(qs []Query) string {
		var out []string
		for _, q := range qs {
			out = append(out, q.ID)
		}
		return strings.Join(out, " ")
	}
	if got, want := ids(learn), "a0 b0 a2 b2 a4 b4 a6 b6 u0"; got != want {
		t.Errorf("learn %s, want %s", got, want)
	}
	if got, want := ids(measure), "a1 b1 a3 b3 a5 b5 u1"; got != want {
		t.Errorf("measure %s, want %s", got, want)
	}
}

// learnFixture is a catalog where two tools answer the same words: the
// one the words rank second is the one the queries want.
func learnFixture(t *testing.T) *search.Index {
	t.Helper()
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	srv, err := catalog.NewServer("desk", []json.RawMessage{
		tool("save_memo", "Save a memo. Saves the memo text as a memo in the binder."),
		tool("archive_memo", "Archive a memo: move the memo out of the binder."),
		tool("list_binders", "List every binder."),
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	return search.Build(snap)
}

// TestSimulateLearningLifts checks on a small catalog that learning from
// queries answered by the tool ranked second lifts it for the measured
// queries, and that learning off measures the same queries as before.
func TestSimulateLearningLifts(t *testing.T) {
	t.Parallel()
	ix := learnFixture(t)
	var qs []Query
	for i, q := range []string{"put the memo away", "memo away please", "put my memo away", "put this memo away for good"} {
		qs = append(qs, Query{ID: fmt.Sprint(i), Query: q, Gold: []string{"desk/archive_memo"}, Style: "s"})
	}
	rep, err := SimulateLearning(context.Background(), ix, qs, usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Run(context.Background(), ix, qs[1:2], 10)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Learned != 2 || rep.Off.N != 2 || rep.On.N != 2 || rep.Entries != 1 {
		t.Fatalf("report %+v: want 2 learned, 1 entry, 2 measured", rep)
	}
	if rep.Off.HitAt1 != 0 || plain.HitAt1 != 0 {
		t.Fatalf("without learning hit@1 is %v: the fixture does not test learning", rep.Off.HitAt1)
	}
	if rep.On.HitAt1 <= rep.Off.HitAt1 || rep.On.NDCGAt10 <= rep.Off.NDCGAt10 {
		t.Fatalf("learning on: %+v, off: %+v; want the wanted tool lifted", rep.On, rep.Off)
	}
}

// TestLearningSimulation prints, for the ToolRet sets and both halves of
// dev, the figures of the measured half with learning off and on. It
// checks that both runs measure the same queries and that every figure
// is a share; whether learning gains is what it reports, not what it
// asserts.
func TestLearningSimulation(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the simulation runs thousands of searches; it runs without -short and -race")
	}
	type set struct {
		name             string
		catalog, queries func(testing.TB) string
		part             Part
	}
	toolret := func(f string) func(testing.TB) string {
		return func(t testing.TB) string { return sharedtest.ToolRetPath(t, f) }
	}
	sets := []set{
		{"toolret", toolret("catalog.json"), toolret("queries.jsonl"), Part{}},
		{"toolret inst", toolret("catalog.json"), toolret("queries_inst.jsonl"), Part{}},
		{"dev 1/2", sharedtest.CatalogPath, sharedtest.QueriesPath, Part{K: 1, N: 2}},
		{"dev 2/2", sharedtest.CatalogPath, sharedtest.QueriesPath, Part{K: 2, N: 2}},
	}
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			if strings.HasSuffix(s.name, "inst") && os.Getenv("TOOLSEARCH_SIMULATE_ALL") == "" {
				t.Skip("the instruction set's long queries take half a minute; set TOOLSEARCH_SIMULATE_ALL=1 (or run toolsearch eval --learn)")
			}
			simulate(t, s.name, s.catalog(t), s.queries(t), s.part)
		})
	}
}

// simulate runs and checks one set of TestLearningSimulation.
func simulate(t *testing.T, name, catPath, qPath string, part Part) {
	s := struct {
		name, catalog, queries string
		part                   Part
	}{name, catPath, qPath, part}
	{
		snap, err := catalog.LoadFile(s.catalog)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(s.queries)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := LoadQueries(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.part.N > 0 {
			qs = s.part.Select(qs)
		}
		rep, err := SimulateLearning(context.Background(), search.Build(snap), qs, usage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Off.N != rep.On.N || rep.Off.N+rep.Learned != len(qs) {
			t.Fatalf("%s: %d measured off, %d on, %d learned of %d", s.name, rep.Off.N, rep.On.N, rep.Learned, len(qs))
		}
		for _, sc := range []LearnScores{rep.Off, rep.On} {
			for _, x := range []float64{sc.HitAt1, sc.HitAt5, sc.NDCGAt10} {
				if !(x >= 0 && x <= 1) {
					t.Fatalf("%s: figure %v out of [0, 1]", s.name, x)
				}
			}
		}
		t.Logf("%-13s n %4d  hit@1 %.3f → %.3f  hit@5 %.3f → %.3f  NDCG@10 %.3f → %.3f", s.name, rep.On.N,
			rep.Off.HitAt1, rep.On.HitAt1, rep.Off.HitAt5, rep.On.HitAt5, rep.Off.NDCGAt10, rep.On.NDCGAt10)
	}
}
