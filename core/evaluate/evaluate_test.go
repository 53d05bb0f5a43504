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

func TestLoadQueries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, err string
		n             int
	}{
		{name: "ok with blank lines", in: "{\"query\":\"a\",\"gold\":[\"s/t\"]}\n\n{\"id\":\"x\",\"query\":\"b\",\"gold\":[\"s/u\"],\"style\":\"task\"}\n", n: 2},
		{name: "bad JSON names the line", in: "{\"query\":\"a\",\"gold\":[\"s/t\"]}\n{\"query\":\n", err: "line 2"},
		{name: "missing query", in: "{\"gold\":[\"s/t\"]}\n", err: `line 1: missing "query"`},
		{name: "missing gold", in: "{\"query\":\"a\"}\n", err: `line 1: missing "gold"`},
		{name: "empty", in: "\n\n", err: "no queries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			qs, err := LoadQueries(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(qs) != tc.n {
				t.Fatalf("got %d queries, err %v; want %d", len(qs), err, tc.n)
			}
			if qs[0].ID != "line-1" || qs[0].Style != "unstyled" {
				t.Errorf("defaults: id %q style %q", qs[0].ID, qs[0].Style)
			}
		})
	}
}

// TestRunScores checks hit@1, hit@k and MRR against ranks worked out by hand.
func TestRunScores(t *testing.T) {
	t.Parallel()
	raw := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	srv, err := catalog.NewServer("s", []json.RawMessage{
		raw("alpha", "alpha alpha"), raw("beta", "beta alpha"), raw("gamma", "gamma beta alpha"),
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	ix := search.Build(snap)
	// Find where each tool ranks for "alpha" so the expectation follows the
	// engine's own order.
	res, err := ix.Search(context.Background(), search.Request{Query: "alpha"})
	if err != nil || len(res.Hits) < 2 {
		t.Fatalf("search: %v %v", res.Hits, err)
	}
	second := res.Hits[1].Tool.ID()
	qs := []Query{
		{ID: "1", Query: "alpha", Gold: []string{res.Hits[0].Tool.ID()}, Style: "a"},
		{ID: "2", Query: "alpha", Gold: []string{second}, Style: "a"},
		{ID: "3", Query: "zzz", Gold: []string{"s/alpha"}, Style: "b"},
	}
	rep, err := Run(context.Background(), ix, qs, 5)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if rep.N != 3 || !near(rep.HitAt1, 1.0/3) || !near(rep.HitAtK, 2.0/3) || !near(rep.MRR, (1+0.5)/3) {
		t.Errorf("scores = %+v", rep.Scores)
	}
	if a := rep.ByStyle["a"]; a.N != 2 || !near(a.HitAt1, 0.5) || !near(a.MRR, 0.75) {
		t.Errorf("style a = %+v", a)
	}
	if len(rep.Misses) != 2 || rep.Misses[0].Rank != 2 || rep.Misses[1].Rank != 0 {
		t.Errorf("misses = %+v", rep.Misses)
	}
	if _, err := Run(context.Background(), ix, qs, 0); err == nil {
		t.Error("k=0 accepted")
	}
}
