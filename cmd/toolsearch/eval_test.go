package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/evaluate"
)

// evalQueries is a query file for plainCatalog with categories and one
// query the engine refuses (a select: that names no tool).
func evalQueries(t *testing.T) string {
	t.Helper()
	return writeFile(t, "q.jsonl", fmt.Sprintf(`{"id":"a","query":"select:notes/search_notes,weather/get_forecast","gold":["weather/get_forecast"],"style":"task","category":"web"}
{"id":"b","query":"search_notes","gold":["notes/search_notes"],"style":"exact","category":"code"}
{"id":"c","query":%q,"gold":["weather/get_forecast"],"style":"task","category":"web"}
{"id":"d","query":"write a note","gold":["notes/create_note"],"style":"task"}
`, "select: ,"))
}

func TestEvalTables(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	queries := evalQueries(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		absent []string
		stderr []string
	}{
		{name: "columns and categories", args: []string{"-k", "3"}, code: exitOK,
			stdout: []string{"errors", "N@3", "R@3", "hit@3", "category", "web", "code", "uncategorized", "1 of 4 queries were refused", "--misses lists them"}},
		{name: "misses list the refused", args: []string{"--misses"}, code: exitOK,
			stdout: []string{"c [task, web] refused", "error: bad query: select: names no tool", "a [task, web] rank 2"}},
		{name: "part", args: []string{"--part", "1/1"}, code: exitOK, stdout: []string{"part 1/1 of the queries"}},
		{name: "part out of range", args: []string{"--part", "3/2"}, code: exitUsage, stderr: []string{`part "3/2": K is 3`}},
		{name: "part not a fraction", args: []string{"--part", "half"}, code: exitUsage, stderr: []string{`part "half": want K/N`}},
		{name: "part zero", args: []string{"--part", "1/0"}, code: exitUsage, stderr: []string{"N is 0"}},
		{name: "k too large", args: []string{"-k", "51"}, code: exitUsage, stderr: []string{"-k is 51"}},
		// Per style, a learns from c and b from nothing; d is measured.
		{name: "learn", args: []string{"--learn"}, code: exitOK,
			stdout: []string{"learned from 3 queries", "hit@1 off/on (Δ)", "NDCG@10 off/on (Δ)", "task", "all"}, absent: []string{"exact "}},
		{name: "learn, part", args: []string{"--learn", "--part", "1/1"}, code: exitOK, stdout: []string{"part 1/1 of the queries", "learned from 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCLI(t, append([]string{"eval", "--catalog", cat, "--queries", queries}, tc.args...)...)
			checkCLI(t, code, tc.code, out, errs, tc.stdout, tc.stderr)
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("stdout has %q:\n%s", a, out)
				}
			}
		})
	}
}

// evalJSON is the part of eval's JSON the tests read.
type evalJSON struct {
	N          int                `json:"n"`
	Errors     int                `json:"errors"`
	NDCG       float64            `json:"ndcg_at_k"`
	Recall     float64            `json:"recall_at_k"`
	Part       string             `json:"part"`
	ByCategory map[string]evalRow `json:"by_category"`
	Misses     []struct {
		ID  string `json:"id"`
		Err string `json:"error"`
	} `json:"misses"`
}

type evalRow struct {
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	NDCG   float64 `json:"ndcg_at_k"`
}

func evalRun(t *testing.T, args ...string) evalJSON {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"eval", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep evalJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return rep
}

func TestEvalJSONFigures(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	queries := evalQueries(t)
	rep := evalRun(t, "--catalog", cat, "--queries", queries, "--misses")
	if rep.N != 4 || rep.Errors != 1 {
		t.Errorf("n %d errors %d, want 4 and 1", rep.N, rep.Errors)
	}
	// Query a: gold at rank 2 of a select, so NDCG 1/log2(3) ≈ 0.631.
	if w := rep.ByCategory["web"]; w.N != 2 || w.Errors != 1 || w.NDCG < 0.315 || w.NDCG > 0.316 {
		t.Errorf("web = %+v, want n 2, errors 1, NDCG (1/log2 3)/2", w)
	}
	refused := ""
	for _, m := range rep.Misses {
		if m.Err != "" {
			refused += m.ID
		}
	}
	if refused != "c" {
		t.Errorf("refused queries in misses: %q, want c", refused)
	}

	// The two halves of the set hold every query once.
	one := evalRun(t, "--catalog", cat, "--queries", queries, "--part", "1/2")
	two := evalRun(t, "--catalog", cat, "--queries", queries, "--part", "2/2")
	if one.N+two.N != rep.N || one.Errors+two.Errors != rep.Errors || one.Part != "1/2" || two.Part != "2/2" {
		t.Errorf("halves: %+v and %+v; the whole: n %d errors %d", one, two, rep.N, rep.Errors)
	}
}

// TestEvalEmptyPart: a part that holds none of the queries is a usage
// error, not a table of zeros.
func TestEvalEmptyPart(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	queries := evalQueries(t)
	empty := ""
	for k := 1; k <= evaluate.MaxParts && empty == ""; k++ {
		p := evaluate.Part{K: k, N: evaluate.MaxParts}
		if !p.Holds("a") && !p.Holds("b") && !p.Holds("c") && !p.Holds("d") {
			empty = p.String()
		}
	}
	code, _, errs := runCLI(t, "eval", "--catalog", cat, "--queries", queries, "--part", empty)
	if code != exitUsage || !strings.Contains(errs, "holds none of the 4 queries") {
		t.Errorf("--part %s: exit %d, stderr %q", empty, code, errs)
	}
}
