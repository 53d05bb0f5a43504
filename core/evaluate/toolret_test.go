package evaluate

import (
	"context"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// mayRefuse reports whether the engine may refuse a keyword query: it is
// blank, is not valid UTF-8, or is a select: (which may name no tool, or
// too many). Length is no reason: a long query is read in part.
func mayRefuse(q string) bool {
	q = strings.TrimSpace(q)
	return q == "" || !utf8.ValidString(q) || strings.HasPrefix(strings.ToLower(q), "select:")
}

// TestToolRetLoads reads both ToolRet query files against their catalog
// and checks that the evaluation counts every query, and that the engine
// refuses none that is valid (however long).
func TestToolRetLoads(t *testing.T) {
	snap, err := catalog.LoadFile(sharedtest.ToolRetPath(t, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	ix := search.Build(snap)
	plain := newPlainBM25(snap)
	for _, file := range []string{"queries.jsonl", "queries_inst.jsonl"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(sharedtest.ToolRetPath(t, file))
			if err != nil {
				t.Fatal(err)
			}
			qs, err := LoadQueries(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if raceEnabled {
				// A quarter of each file keeps the race run short.
				qs = Part{K: 1, N: 4}.Select(qs)
			}
			for _, q := range qs {
				if q.Category != "web" && q.Category != "code" {
					t.Errorf("%s: category %q, want web or code", q.ID, q.Category)
				}
				for _, g := range q.Gold {
					if _, ok := snap.Tool(g); !ok {
						t.Errorf("%s: gold %q is not in the catalog", q.ID, g)
					}
				}
			}
			rep, err := Run(context.Background(), ix, qs, 10)
			if err != nil {
				t.Fatal(err)
			}
			if rep.N != len(qs) {
				t.Errorf("report n %d; the file has %d queries", rep.N, len(qs))
			}
			refused := 0
			for _, m := range rep.Misses {
				if m.Err == "" {
					continue
				}
				refused++
				if !mayRefuse(m.Query) || !strings.HasPrefix(m.Err, "bad query: ") {
					t.Errorf("%s: a valid query was refused: %s\n%q", m.ID, m.Err, m.Query)
				}
			}
			if rep.Errors != refused {
				t.Errorf("report errors %d; its misses list %d refused queries", rep.Errors, refused)
			}
			sum := 0
			for _, c := range rep.ByCategory {
				sum += c.Errors
			}
			if len(rep.ByCategory) != 2 || sum != refused {
				t.Errorf("categories %v hold %d errors, want web and code with %d", rep.ByCategory, sum, refused)
			}
			t.Logf("%s: n=%d errors=%d N@10 web %.4f code %.4f all %.4f", file, rep.N, rep.Errors,
				rep.ByCategory["web"].NDCGAtK, rep.ByCategory["code"].NDCGAtK, rep.NDCGAtK)
			// Nobody tuned the search on ToolRet: here it must rank at least
			// as well as plain BM25 over the same definitions.
			base := plain.ndcgByCategory(qs, 10)
			for _, c := range []string{"web", "code"} {
				if got := rep.ByCategory[c].NDCGAtK; got < base[c] {
					t.Errorf("%s %s: N@10 %.4f, below plain BM25's %.4f", file, c, got, base[c])
				}
			}
			t.Logf("%s: plain BM25 N@10 web %.4f code %.4f", file, base["web"], base["code"])
		})
	}
}
