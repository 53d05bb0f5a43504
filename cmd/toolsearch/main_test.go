package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeFile writes a fixture into the test's temporary folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeConfigJSON writes v as JSON to path (mode 0600: configs may hold
// secrets) and returns path.
func writeConfigJSON(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// plainCatalog is a small catalog in the plain format.
const plainCatalog = `{
  "notes": {"tools": [
    {"name": "create_note", "description": "Write a new note with a title and a body.", "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}},
    {"name": "search_notes", "description": "Find notes that mention some words.", "inputSchema": {"type": "object"}}
  ]},
  "weather": [
    {"name": "get_forecast", "description": "Hourly forecast for a city.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}}
  ]
}`

func TestCommands(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	queries := writeFile(t, "q.jsonl", `{"id":"a","query":"forecast for Paris","gold":["weather/get_forecast"],"style":"task"}
{"id":"b","query":"search_notes","gold":["notes/search_notes"],"style":"exact"}
{"id":"c","query":"write a note","gold":["notes/create_note"],"style":"task"}
`)
	badQueries := writeFile(t, "bad.jsonl", "{\"id\":\"a\",\"query\":\"x\",\"gold\":[\"a/b\"]}\n{not json\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings of stdout
		stderr   []string // substrings of stderr
		noStdout bool
	}{
		{name: "no args", args: nil, code: exitUsage, stderr: []string{"Usage: toolsearch"}},
		{name: "help", args: []string{"--help"}, code: exitOK, stdout: []string{"search", "tools", "eval"}},
		{name: "unknown command", args: []string{"frob"}, code: exitUsage, stderr: []string{`unknown command "frob"`}},
		{name: "search help", args: []string{"search", "--help"}, code: exitOK, stdout: []string{"-catalog", "-mode", "-explain"}},
		{name: "search demo catalog", args: []string{"search", "open a pull request"}, code: exitOK, stdout: []string{"1. "}},
		{name: "search file catalog", args: []string{"search", "--catalog", cat, "hourly forecast"}, code: exitOK, stdout: []string{"1. weather/get_forecast"}},
		{name: "flags after the query", args: []string{"search", "hourly", "forecast", "--catalog", cat, "-n", "1", "--explain"}, code: exitOK, stdout: []string{"weather/get_forecast", "score"}},
		{name: "search select", args: []string{"search", "--catalog", cat, "select:notes/create_note,nope"}, code: exitOK, stdout: []string{"notes/create_note", "Unknown names: nope"}},
		{name: "search no match", args: []string{"search", "--catalog", cat, "zzzz qqqq"}, code: exitNoResult, stdout: []string{"No tool matches"}},
		{name: "search missing query", args: []string{"search", "--catalog", cat}, code: exitUsage, stderr: []string{"QUERY is required"}},
		{name: "search bad mode", args: []string{"search", "--mode", "fuzzy", "x"}, code: exitUsage, stderr: []string{`unknown search mode "fuzzy"`}},
		{name: "search bad n", args: []string{"search", "-n", "0", "x"}, code: exitUsage, stderr: []string{"-n is 0"}},
		{name: "search bad regex", args: []string{"search", "--mode", "regex", "a(?=b)"}, code: exitUsage, stderr: []string{"position 1"}},
		{name: "search missing catalog", args: []string{"search", "--catalog", "/nonexistent/c.json", "x"}, code: exitUsage, stderr: []string{"/nonexistent/c.json"}},
		{name: "search unknown flag", args: []string{"search", "--frob", "x"}, code: exitUsage, stderr: []string{"frob"}},
		{name: "tools", args: []string{"tools", "--catalog", cat}, code: exitOK, stdout: []string{"notes", "weather", "total", "3"}},
		{name: "tools demo", args: []string{"tools"}, code: exitOK, stdout: []string{"SERVER", "total"}},
		{name: "eval", args: []string{"eval", "--catalog", cat, "--queries", queries}, code: exitOK, stdout: []string{"exact", "task", "all"}},
		{name: "eval needs queries", args: []string{"eval", "--catalog", cat}, code: exitUsage, stderr: []string{"--queries is required"}},
		{name: "eval bad line", args: []string{"eval", "--catalog", cat, "--queries", badQueries}, code: exitUsage, stderr: []string{"line 2"}},
		{name: "eval bad k", args: []string{"eval", "--queries", queries, "-k", "0"}, code: exitUsage, stderr: []string{"-k is 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCLI(t, tc.args...)
			checkCLI(t, code, tc.code, out, errs, tc.stdout, tc.stderr)
		})
	}
}

// checkCLI checks a command's exit code and that its stdout and stderr
// hold the given strings.
func checkCLI(t *testing.T, code, wantCode int, out, errs string, stdout, stderr []string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, wantCode, out, errs)
	}
	for _, s := range stdout {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(errs, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errs)
		}
	}
}

func TestSearchJSON(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	code, out, errs := runCLI(t, "search", "--catalog", cat, "--json", "notes")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Form string `json:"form"`
		Hits []struct {
			ID string `json:"id"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if res.Form != "server" || len(res.Hits) != 2 || res.Hits[0].ID != "notes/create_note" {
		t.Errorf("got %+v, want the notes server's two tools in order", res)
	}
}

func TestEvalJSONShape(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	queries := writeFile(t, "q.jsonl", `{"id":"a","query":"forecast","gold":["weather/get_forecast"],"style":"keywords"}
{"id":"b","query":"zzzz","gold":["notes/create_note"],"style":"task"}
`)
	code, out, errs := runCLI(t, "eval", "--catalog", cat, "--queries", queries, "-k", "3", "--json", "--misses")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"n", "k", "errors", "hit_at_1", "hit_at_k", "mrr", "ndcg_at_k", "recall_at_k", "by_style", "misses"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out)
		}
	}
	if rep["n"].(float64) != 2 || rep["k"].(float64) != 3 || rep["hit_at_1"].(float64) != 0.5 {
		t.Errorf("n, k, hit_at_1 = %v, %v, %v; want 2, 3, 0.5", rep["n"], rep["k"], rep["hit_at_1"])
	}
	style := rep["by_style"].(map[string]any)["keywords"].(map[string]any)
	if style["hit_at_1"].(float64) != 1 {
		t.Errorf("by_style.keywords = %v", style)
	}
}

func TestToolsJSONAddsUp(t *testing.T) {
	t.Parallel()
	cat := writeFile(t, "cat.json", plainCatalog)
	code, out, errs := runCLI(t, "tools", "--catalog", cat, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep toolsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	sum, share := 0, 0.0
	for _, s := range rep.Servers {
		sum += s.Tokens
		share += s.Share
		if s.Tokens <= 0 || s.DeferSaves <= 0 || s.DeferSaves >= s.Tokens {
			t.Errorf("server %s: tokens %d, defer saves %d", s.Server, s.Tokens, s.DeferSaves)
		}
	}
	if sum != rep.Tokens || rep.Tools != 3 || share < 0.999 || share > 1.001 {
		t.Errorf("servers sum to %d tokens (total %d), %d tools, shares %.3f", sum, rep.Tokens, rep.Tools, share)
	}
}

func TestLintCommand(t *testing.T) {
	t.Parallel()
	good := writeFile(t, "good.json", plainCatalog)
	bad := writeFile(t, "bad.json", `{"x": [{"name": "undocumented", "inputSchema": {"type": "object"}}]}`)
	if code, out, errs := runCLI(t, "lint", "--catalog", good); code != exitOK || !strings.Contains(out, "3 tools") {
		t.Errorf("lint good catalog: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "lint", "--catalog", bad); code != exitNoResult || !strings.Contains(out, "no description") {
		t.Errorf("lint bad catalog: exit %d, want %d\n%s", code, exitNoResult, out)
	}
	if code, _, errs := runCLI(t, "lint", "--server", "nope"); code != exitUsage || !strings.Contains(errs, `unknown server "nope"`) {
		t.Errorf("lint unknown server: exit %d: %s", code, errs)
	}
}
