package evaluate

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// fixtureIndex indexes one server "s" with the tools a to f. The tests ask
// it select: queries, whose hits come in the order the names are given, so
// every rank below is known without depending on the ranking.
func fixtureIndex(t *testing.T) *search.Index {
	t.Helper()
	var tools []json.RawMessage
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		b, err := json.Marshal(map[string]any{"name": name, "description": "tool " + name, "inputSchema": map[string]any{"type": "object"}})
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, b)
	}
	srv, err := catalog.NewServer("s", tools, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	return search.Build(snap)
}

// l2 is log2, for writing the expected figures out by hand.
func l2(x float64) float64 { return math.Log2(x) }

// TestRunByHand checks every figure of Run against values worked out by
// hand from the definitions in the package doc, at two cut-offs.
func TestRunByHand(t *testing.T) {
	t.Parallel()
	ix := fixtureIndex(t)
	refused := "select: ," // a select: that names no tool
	qs := []Query{
		// got a b c d e: gold b (rank 2) and d (rank 4).
		{ID: "q1", Query: "select:s/a,s/b,s/c,s/d,s/e", Gold: []string{"s/b", "s/d"}, Style: "x", Category: "web"},
		// got a b c: gold a (1) and c (3) of three; e is not returned.
		{ID: "q2", Query: "select:s/a,s/b,s/c", Gold: []string{"s/a", "s/c", "s/e"}, Style: "x", Category: "code"},
		// got f e d c b a: gold a at rank 6, beyond k = 5.
		{ID: "q3", Query: "select:s/f,s/e,s/d,s/c,s/b,s/a", Gold: []string{"s/a"}, Style: "y", Category: "code"},
		// the same gold twice counts once: gold d at rank 1.
		{ID: "q4", Query: "select:s/d", Gold: []string{"s/d", "s/d"}, Style: "y"},
		// refused by the engine: scores 0 and counts as an error.
		{ID: "q5", Query: refused, Gold: []string{"s/a"}, Style: "y", Category: "web"},
	}
	type fig struct{ hit1, hitk, rr, ndcg, recall float64 }
	// Per query, at k = 5 and at k = 3.
	at5 := map[string]fig{
		"q1": {0, 1, 1.0 / 2, (1/l2(3) + 1/l2(5)) / (1 + 1/l2(3)), 1},
		"q2": {1, 1, 1, (1 + 1/l2(4)) / (1 + 1/l2(3) + 1/l2(4)), 2.0 / 3},
		"q3": {0, 0, 0, 0, 0},
		"q4": {1, 1, 1, 1, 1},
		"q5": {0, 0, 0, 0, 0},
	}
	at3 := map[string]fig{
		"q1": {0, 1, 1.0 / 2, (1 / l2(3)) / (1 + 1/l2(3)), 1.0 / 2}, // d at 4 is cut
		"q2": at5["q2"],
		"q3": {0, 0, 0, 0, 0},
		"q4": at5["q4"],
		"q5": at5["q5"],
	}
	mean := func(per map[string]fig, ids ...string) Scores {
		var s Scores
		for _, id := range ids {
			f := per[id]
			s.HitAt1 += f.hit1
			s.HitAtK += f.hitk
			s.MRR += f.rr
			s.NDCGAtK += f.ndcg
			s.RecallAtK += f.recall
		}
		n := float64(len(ids))
		s.N = len(ids)
		s.HitAt1, s.HitAtK, s.MRR, s.NDCGAtK, s.RecallAtK = s.HitAt1/n, s.HitAtK/n, s.MRR/n, s.NDCGAtK/n, s.RecallAtK/n
		for _, id := range ids {
			if id == "q5" {
				s.Errors++
			}
		}
		return s
	}
	for _, tc := range []struct {
		k   int
		per map[string]fig
	}{{5, at5}, {3, at3}} {
		rep, err := Run(context.Background(), ix, qs, tc.k)
		if err != nil {
			t.Fatalf("k=%d: %v", tc.k, err)
		}
		check := func(what string, got, want Scores) {
			t.Helper()
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
			if got.N != want.N || got.Errors != want.Errors || !near(got.HitAt1, want.HitAt1) || !near(got.HitAtK, want.HitAtK) ||
				!near(got.MRR, want.MRR) || !near(got.NDCGAtK, want.NDCGAtK) || !near(got.RecallAtK, want.RecallAtK) {
				t.Errorf("k=%d %s:\n got  %+v\n want %+v", tc.k, what, got, want)
			}
		}
		check("all", rep.Scores, mean(tc.per, "q1", "q2", "q3", "q4", "q5"))
		check("style x", rep.ByStyle["x"], mean(tc.per, "q1", "q2"))
		check("style y", rep.ByStyle["y"], mean(tc.per, "q3", "q4", "q5"))
		check("category web", rep.ByCategory["web"], mean(tc.per, "q1", "q5"))
		check("category code", rep.ByCategory["code"], mean(tc.per, "q2", "q3"))
		check("no category", rep.ByCategory[NoCategory], mean(tc.per, "q4"))
		if len(rep.ByCategory) != 3 {
			t.Errorf("k=%d: categories %v, want web, code and %s", tc.k, rep.ByCategory, NoCategory)
		}
		// Misses: every query not answered at rank 1, the refused one with
		// its error; hits are cut at k.
		var ids []string
		for _, m := range rep.Misses {
			ids = append(ids, m.ID)
			if len(m.Got) > tc.k {
				t.Errorf("k=%d: miss %s lists %d hits", tc.k, m.ID, len(m.Got))
			}
			if (m.ID == "q5") != (m.Err != "") {
				t.Errorf("k=%d: miss %s error %q", tc.k, m.ID, m.Err)
			}
		}
		if got := strings.Join(ids, " "); got != "q1 q3 q5" {
			t.Errorf("k=%d: misses %s, want q1 q3 q5", tc.k, got)
		}
	}
}

// TestRunWithoutCategories leaves the category table out.
func TestRunWithoutCategories(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), fixtureIndex(t), []Query{{ID: "1", Query: "select:s/a", Gold: []string{"s/a"}, Style: "x"}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ByCategory != nil || rep.NDCGAtK != 1 || rep.RecallAtK != 1 {
		t.Errorf("report %+v", rep)
	}
}

// TestRunStopsWithTheContext: a cancelled context fails the run rather
// than being counted as refused queries.
func TestRunStopsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, fixtureIndex(t), []Query{{ID: "1", Query: "select:s/a", Gold: []string{"s/a"}}}, 5)
	if err == nil {
		t.Fatal("a cancelled run succeeded")
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		gold, got    []string
		k, rank      int
		ndcg, recall float64
	}{
		{name: "nothing returned", gold: []string{"a"}, got: nil, k: 5},
		{name: "first", gold: []string{"a"}, got: []string{"a", "b"}, k: 5, rank: 1, ndcg: 1, recall: 1},
		{name: "second", gold: []string{"b"}, got: []string{"a", "b"}, k: 5, rank: 2, ndcg: 1 / l2(3), recall: 1},
		{name: "beyond k", gold: []string{"b"}, got: []string{"a", "b"}, k: 1},
		// Ideal DCG counts min(k, |gold|) = 1 gold: one found at rank 1 is perfect.
		{name: "more gold than k", gold: []string{"a", "b", "c"}, got: []string{"a", "b", "c"}, k: 1, rank: 1, ndcg: 1, recall: 1.0 / 3},
		{name: "all gold, in order", gold: []string{"c", "a"}, got: []string{"a", "c"}, k: 2, rank: 1, ndcg: 1, recall: 1},
		{name: "repeated hit counts once", gold: []string{"a", "b"}, got: []string{"a", "a"}, k: 2, rank: 1, ndcg: 1 / (1 + 1/l2(3)), recall: 0.5},
		{name: "third of two gold", gold: []string{"x", "c"}, got: []string{"a", "b", "c"}, k: 10, rank: 3, ndcg: (1 / l2(4)) / (1 + 1/l2(3)), recall: 0.5},
		{name: "no gold", gold: nil, got: []string{"a"}, k: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := judge(tc.gold, tc.got, tc.k)
			if j.rank != tc.rank || math.Abs(j.ndcg-tc.ndcg) > 1e-12 || math.Abs(j.recall-tc.recall) > 1e-12 {
				t.Errorf("judge = %+v, want rank %d ndcg %.6f recall %.6f", j, tc.rank, tc.ndcg, tc.recall)
			}
		})
	}
}
