package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
)

// TestEnrichCommand runs enrich against a loopback stand-in for the
// Messages API, then again (nothing is sent), then with --dry-run, and
// reads what it wrote with --hints. Not parallel: it sets the API key in
// the environment, where the SDK reads it.
func TestEnrichCommand(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	s := enrichtest.New(t, enrichtest.Anthropic, nil)
	cat := writeFile(t, "cat.json", plainCatalog)
	out := filepath.Join(t.TempDir(), "state", "hints.jsonl")

	code, stdout, stderr := runCLI(t, "enrich", "--catalog", cat, "--base-url", s.URL, "--out", out)
	if code != exitOK || !strings.Contains(stdout, "3 tools written") || !strings.Contains(stderr, "3 to send in 2 requests") ||
		!strings.Contains(stderr, "enrich: 3/3 tools") {
		t.Fatalf("enrich: exit %d\n%s%s", code, stdout, stderr)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want one per server", len(reqs))
	}
	set, err := hints.LoadFile(out)
	if err != nil || set.Len() != 3 {
		t.Fatalf("the hints file: %v, %d entries", err, set.Len())
	}
	for _, e := range set.Entries() {
		if e.Digest == "" || len(e.Hints) != 4 {
			t.Errorf("entry %+v", e)
		}
	}
	for _, r := range reqs {
		if strings.Contains(r.Prompt, "test-key") || strings.Contains(r.Prompt, cat) {
			t.Error("the prompt carries more than the definitions")
		}
	}

	// Again: nothing to send.
	code, stdout, stderr = runCLI(t, "enrich", "--catalog", cat, "--base-url", s.URL, "--out", out)
	if code != exitOK || !strings.Contains(stderr, "nothing to send") || len(s.Requests()) != 2 {
		t.Fatalf("second enrich: exit %d, %d requests\n%s%s", code, len(s.Requests()), stdout, stderr)
	}

	// --dry-run prints the estimate and sends nothing.
	fresh := filepath.Join(t.TempDir(), "h.jsonl")
	code, stdout, stderr = runCLI(t, "enrich", "--catalog", cat, "--base-url", s.URL, "--out", fresh, "--dry-run", "--batch", "1")
	if code != exitOK || !strings.Contains(stdout, "3 to send in 3 requests") || !strings.Contains(stdout, "input tokens") ||
		len(s.Requests()) != 2 {
		t.Fatalf("dry run: exit %d, %d requests\n%s%s", code, len(s.Requests()), stdout, stderr)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote %s", fresh)
	}

	// What was written is read by the other commands.
	code, stdout, stderr = runCLI(t, "tools", "--catalog", cat, "--hints", out, "--json")
	var rep toolsReport
	if code != exitOK || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Hinted != 3 || !strings.Contains(stderr, "3 tools given hints") {
		t.Fatalf("tools --hints: exit %d, hinted %d\n%s", code, rep.Hinted, stderr)
	}
	code, _, stderr = runCLI(t, "search", "--catalog", cat, "--hints", out, "forecast")
	if code != exitOK || !strings.Contains(stderr, "3 tools given hints, 0 stale") {
		t.Fatalf("search --hints: exit %d\n%s", code, stderr)
	}

	// A changed definition makes its hints stale: lint says so, and
	// enrich sends that tool alone.
	changed := writeFile(t, "cat2.json", strings.Replace(plainCatalog, "Hourly forecast for a city.", "Daily forecast for a town.", 1))
	code, stdout, stderr = runCLI(t, "lint", "--catalog", changed, "--hints", out)
	if !strings.Contains(stdout, "weather/get_forecast [stale-hints]") || !strings.Contains(stderr, "1 stale") {
		t.Fatalf("lint --hints: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "enrich", "--catalog", changed, "--base-url", s.URL, "--out", out)
	reqs = s.Requests()
	if code != exitOK || len(reqs) != 3 || strings.Join(reqs[2].Tools, ",") != "get_forecast" {
		t.Fatalf("enrich after a change: exit %d, %d requests\n%s%s", code, len(reqs), stdout, stderr)
	}
}

func TestEnrichCommandOpenAI(t *testing.T) {
	t.Parallel()
	s := enrichtest.New(t, enrichtest.OpenAI, func(n int, tools []string) enrichtest.Answer {
		// The second tool's hints are refused; the others are kept.
		return enrichtest.Answer{Text: enrichtest.ReplyFor(tools, func(name string) []any {
			if name == "search_notes" {
				return []any{"one", "two"}
			}
			return []any{"a", "b", "c", "d"}
		})}
	})
	if k := os.Getenv("OPENAI_API_KEY"); k != "" {
		s.APIKey = k // the command sends the environment's key
	} else {
		s.APIKey = "none"
	}
	cat := writeFile(t, "cat.json", plainCatalog)
	out := filepath.Join(t.TempDir(), "hints.jsonl")
	code, stdout, stderr := runCLI(t, "enrich", "--provider", "openai", "--model", "llama3", "--catalog", cat,
		"--base-url", s.URL+"/v1", "--out", out, "--concurrency", "1")
	if code != exitNoResult || !strings.Contains(stdout, "2 tools written") || !strings.Contains(stderr, "notes/search_notes: 2 hints; want 4") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var model string
	_ = json.Unmarshal(s.Requests()[0].Body["model"], &model)
	if model != "llama3" {
		t.Errorf("model sent %q", model)
	}
	set, err := hints.LoadFile(out)
	if _, ok := set.Get("notes/search_notes"); err != nil || ok || set.Len() != 2 {
		t.Errorf("cached %d entries (%v); the refused tool cached: %v", set.Len(), err, ok)
	}
}

func TestEnrichCommandErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_PROFILE", "")
	cat := writeFile(t, "cat.json", plainCatalog)
	broken := writeFile(t, "broken.jsonl", "{\"id\":\"notes/create_note\",\"hints\":[\"x\"]}\n{\"id\":\"notes/x\",\"hints\":[5]}\n")
	out := filepath.Join(t.TempDir(), "h.jsonl")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown provider", []string{"enrich", "--provider", "gemini", "--out", out}, `unknown --provider "gemini"`},
		{"no key", []string{"enrich", "--catalog", cat, "--out", out}, "set ANTHROPIC_API_KEY"},
		{"bad batch", []string{"enrich", "--catalog", cat, "--out", out, "--batch", "0"}, "--batch 0 is out of range 1..50"},
		{"bad concurrency", []string{"enrich", "--catalog", cat, "--out", out, "--concurrency", "99"}, "--concurrency 99 is out of range"},
		{"unknown server", []string{"enrich", "--catalog", cat, "--out", out, "--server", "nope"}, `--server "nope"`},
		{"unreadable cache", []string{"enrich", "--catalog", cat, "--out", broken}, "line 2 (notes/x): hint 1 is not a string"},
		{"broken hints file", []string{"search", "--catalog", cat, "--hints", broken, "note"}, "line 2 (notes/x)"},
		{"missing hints file", []string{"eval", "--catalog", cat, "--hints", out, "--queries", cat}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, exitUsage, tt.stderr, stdout, stderr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a refused run wrote the hints file")
	}
	data, _ := os.ReadFile(broken)
	if !strings.Contains(string(data), `[5]`) {
		t.Error("the unreadable hints file was written over")
	}
}
