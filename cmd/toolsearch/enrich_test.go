package main

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
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
	// Before anything is sent, stderr names the catalog, the count and the
	// price at the model asked for.
	head := "enrich: catalog " + cat + ": 3 tools; 0 already have hints for their current definition (not sent); 3 to send in 2 requests\n"
	if i := strings.Index(stderr, head); i < 0 || i > strings.Index(stderr, "enrich: 3/3 tools") ||
		!strings.Contains(stderr, "estimated price: ") || !strings.Contains(stderr, "claude-haiku-4-5's published $1.00/$5.00") {
		t.Errorf("stderr does not begin with what is sent:\n%s", stderr)
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
	if code != exitOK || !strings.Contains(stdout, "3 to send in 3 requests") || !strings.Contains(stdout, "estimated tokens: ") ||
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

// TestEnrichCommandErrors: what enrich refuses, each with one line that
// says what is wrong, exit 2, no server started and nothing written. Not
// parallel: it empties the keys and the home directory in the
// environment.
func TestEnrichCommandErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	home := t.TempDir() // no user config, and a cache directory of its own
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	cat := writeFile(t, "cat.json", plainCatalog)
	brokenHints := "{\"id\":\"notes/create_note\",\"hints\":[\"x\"]}\n{\"id\":\"notes/x\",\"hints\":[5]}\n"
	broken := writeFile(t, "broken.jsonl", brokenHints)
	out := filepath.Join(t.TempDir(), "h.jsonl")
	cfg, _ := enrichConfig(t, t.TempDir(), nil)
	// A config whose state directory holds a hints file that cannot be
	// read: the default --out.
	brokenCfg, brokenState := enrichConfig(t, t.TempDir(), nil)
	if err := os.MkdirAll(filepath.Dir(brokenState), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(brokenState, []byte(brokenHints), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown provider", []string{"enrich", "--provider", "gemini", "--out", out}, `unknown --provider "gemini"`},
		{"no key", []string{"enrich", "--catalog", cat, "--out", out}, "set ANTHROPIC_API_KEY"},
		{"no key, config", []string{"enrich", "-c", cfg}, "set ANTHROPIC_API_KEY"},
		{"bad batch", []string{"enrich", "--catalog", cat, "--out", out, "--batch", "0"}, "--batch 0 is out of range 1..50"},
		{"bad concurrency", []string{"enrich", "--catalog", cat, "--out", out, "--concurrency", "99"}, "--concurrency 99 is out of range"},
		{"unknown server", []string{"enrich", "--catalog", cat, "--out", out, "--server", "nope"}, `--server "nope": the catalog has no such server`},
		{"unknown server, config", []string{"enrich", "-c", cfg, "--server", "nope", "--dry-run"},
			`--server "nope": ` + cfg + ` has no such server (it has notes)`},
		{"unreadable cache", []string{"enrich", "--catalog", cat, "--out", broken}, "line 2 (notes/x): hint 1 is not a string"},
		{"unreadable cache, config", []string{"enrich", "-c", brokenCfg, "--dry-run"}, brokenState + ": line 2 (notes/x)"},
		{"cache is a folder", []string{"enrich", "--catalog", cat, "--out", t.TempDir(), "--dry-run"}, "it is a directory"},
		{"missing config", []string{"enrich", "-c", filepath.Join(home, "nope.json"), "--dry-run"}, "config file " + filepath.Join(home, "nope.json") + " does not exist"},
		{"broken config", []string{"enrich", "-c", writeFile(t, "bad.json", `{"mcpServers": {"x": {"comand": "y"}}}`), "--dry-run"}, `"comand"`},
		{"missing catalog", []string{"enrich", "--catalog", filepath.Join(home, "nope.json"), "--dry-run"}, "nope.json"},
		{"no config, no catalog", []string{"enrich", "--dry-run"}, "no config file (looked in toolsearch.json, "},
		{"json without dry run", []string{"enrich", "--catalog", cat, "--json"}, "--json goes with --dry-run"},
		{"bad timeout", []string{"enrich", "-c", cfg, "--timeout", "0s", "--dry-run"}, "--timeout is 0s"},
		{"broken hints file", []string{"search", "--catalog", cat, "--hints", broken, "note"}, "line 2 (notes/x)"},
		{"missing hints file", []string{"eval", "--catalog", cat, "--hints", out, "--queries", cat}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, exitUsage, tt.stderr, stdout, stderr)
			}
			if tt.args[0] == "enrich" && (strings.Count(stderr, "\n") != 1 || stdout != "") {
				t.Errorf("want one line on stderr and nothing on stdout (no server started):\n%s%s", stdout, stderr)
			}
		})
	}
	_, _, stderr := runCLI(t, "enrich", "--dry-run")
	if !strings.Contains(stderr, "-c FILE") || !strings.Contains(stderr, "--catalog demo") {
		t.Errorf("without a config, enrich does not say how to give one:\n%s", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a refused run wrote the hints file")
	}
	for _, f := range []string{broken, brokenState} {
		if data, _ := os.ReadFile(f); string(data) != brokenHints {
			t.Errorf("the unreadable hints file %s was written over", f)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "cache")); !os.IsNotExist(err) {
		t.Error("a refused run wrote to the default state directory")
	}
}

// enrichConfig writes, in dir, a config of the notes server with policy
// hiding its delete_note, env added to the server's environment, and a
// state directory of its own; it returns the config and the hints file
// serve reads with it.
func enrichConfig(t *testing.T, dir string, env map[string]string) (cfg, hintsFile string) {
	t.Helper()
	notes := roleServer(t, "notes")
	for k, v := range env {
		notes["env"].(map[string]string)[k] = v
	}
	state := filepath.Join(dir, "state")
	cfg = writeConfigJSON(t, filepath.Join(dir, "toolsearch.json"), map[string]any{
		"mcpServers": map[string]any{"notes": notes},
		"toolsearch": map[string]any{"stateDir": state, "policy": map[string]any{"deny": []string{"notes/delete_*"}}},
	})
	return cfg, filepath.Join(state, "hints.jsonl")
}

// openAIStandIn starts a stand-in for the Chat Completions API that wants
// the key enrich sends: $OPENAI_API_KEY, or "none" with --base-url and no
// key. No environment is changed, so the tests that use it run in
// parallel.
func openAIStandIn(t *testing.T) *enrichtest.Server {
	t.Helper()
	s := enrichtest.New(t, enrichtest.OpenAI, nil)
	s.APIKey = cmp.Or(os.Getenv("OPENAI_API_KEY"), "none")
	return s
}

// TestEnrichReadsConfig: enrich -c sends the tools of the config's
// servers that clients could see (policy applies), says so on stderr
// before anything is sent, and writes the hints file serve reads with that
// config. A second run sends nothing; a changed description sends that
// tool alone.
func TestEnrichReadsConfig(t *testing.T) {
	t.Parallel()
	s := openAIStandIn(t)
	dir := t.TempDir()
	cfg, hintsFile := enrichConfig(t, dir, nil)
	// The built-in tools are the gateway's own (clients may see them too):
	// --server keeps to the notes server's.
	args := []string{"enrich", "-c", cfg, "--server", "notes", "--provider", "openai", "--base-url", s.URL + "/v1", "--timeout", "20s"}

	code, stdout, stderr := runCLI(t, args...)
	head := "enrich: the servers of " + cfg + ": 2 tools; 0 already have hints for their current definition (not sent); 2 to send in 1 request\n"
	if code != exitOK || !strings.Contains(stdout, "2 tools written to "+hintsFile) || !strings.Contains(stderr, head) ||
		!strings.Contains(stderr, "notes: starting…") {
		t.Fatalf("enrich: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Index(stderr, head) > strings.Index(stderr, "enrich: 2/2 tools") {
		t.Errorf("the line naming what is sent comes after the first request:\n%s", stderr)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || strings.Join(reqs[0].Tools, ",") != "create_note,search_notes" || strings.Contains(reqs[0].Prompt, "delete_note") {
		t.Fatalf("requests %+v; want the two tools policy lets clients see", reqs)
	}
	set, err := hints.LoadFile(hintsFile)
	if err != nil || set.Len() != 2 {
		t.Fatalf("the state directory's hints file: %v, %d entries", err, set.Len())
	}

	// serve reads that file: a gateway of the same config puts the hints
	// on the tools.
	code, stdout, stderr = runCLI(t, "tools", "-c", cfg, "--json")
	var rep toolsReport
	if code != exitOK || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Hinted != 2 {
		t.Errorf("tools -c: exit %d, %d tools hinted, want 2\n%s%s", code, rep.Hinted, stdout, stderr)
	}

	// Again: the hints are current, nothing is sent.
	code, stdout, stderr = runCLI(t, args...)
	if code != exitOK || !strings.Contains(stderr, ": 2 tools; 2 already have hints for their current definition (not sent); 0 to send") ||
		!strings.Contains(stderr, "nothing to send: "+hintsFile+" is up to date") || len(s.Requests()) != 1 {
		t.Fatalf("second run: exit %d, %d requests\n%s%s", code, len(s.Requests()), stdout, stderr)
	}

	// The server changes one description: that tool alone is sent again.
	// (--refresh: the cached manifest, younger than --max-age, would
	// answer with the old one.) The new description is a value of the
	// server's env, which the configuration's secrets include: it is sent
	// redacted.
	enrichConfig(t, dir, map[string]string{"NOTES_DESCRIPTION_search_notes": "Look up notes by the words they hold."})
	code, stdout, stderr = runCLI(t, append(args, "--refresh")...)
	reqs = s.Requests()
	if code != exitOK || len(reqs) != 2 || strings.Join(reqs[1].Tools, ",") != "search_notes" ||
		strings.Contains(reqs[1].Prompt, "Look up notes by the words they hold.") || !strings.Contains(reqs[1].Prompt, `"description":"[REDACTED]"`) ||
		!strings.Contains(stderr, ": 2 tools; 1 already have hints for their current definition (not sent); 1 to send in 1 request") {
		t.Fatalf("after a change: exit %d, requests %+v\n%s%s", code, reqs, stdout, stderr)
	}
	if set, err := hints.LoadFile(hintsFile); err != nil || set.Len() != 2 {
		t.Errorf("the hints file after the change: %v, %d entries", err, set.Len())
	}
	code, stdout, _ = runCLI(t, append(args, "--dry-run")...)
	if code != exitOK || !strings.Contains(stdout, "0 to send") || len(s.Requests()) != 2 {
		t.Errorf("a dry run after it: exit %d\n%s", code, stdout)
	}
}

// TestEnrichDryRun: --dry-run lists the tools, the requests, the tokens
// and the price at every model of the table, marks the model asked for
// (or says its price is unknown), and sends nothing, with no key.
func TestEnrichDryRun(t *testing.T) {
	t.Parallel()
	s := openAIStandIn(t)
	cat := writeFile(t, "cat.json", plainCatalog)
	out := filepath.Join(t.TempDir(), "h.jsonl")
	base := []string{"enrich", "--dry-run", "--out", out, "--base-url", s.URL + "/v1"}
	tests := []struct {
		name    string
		args    []string
		want    []string // substrings of stdout
		match   []string // regular expressions stdout matches
		lacking []string
	}{
		{"the default model", []string{"--catalog", cat},
			[]string{"enrich: catalog " + cat + ": 3 tools; 0 already have hints for their current definition (not sent); 3 to send in 2 requests\n",
				"tools to send, with the o200k tokens of each definition:\n",
				"requests: 2, of 1 to 2 tools (1.5 on average; a request holds one server's tools)\n",
				"estimated price at the published prices of " + enrich.PricesAsOf,
				"would send: each tool's name, description and input schema, to anthropic model claude-haiku-4-5; hints would go to " + out + "\n"},
			[]string{`(?m)^  notes/create_note +\d+$`, `(?m)^  notes/search_notes +\d+$`, `(?m)^  weather/get_forecast +\d+$`,
				`(?m)^estimated tokens: \d+ input \(o200k\) and about 240 output; Claude models count about 20% more: \d+ and 288$`,
				`(?m)^  claude-haiku-4-5 +1\.00 +5\.00 +(\$|<\$)\d\.\d\d  the model asked for$`,
				`(?m)^  gpt-4\.1-mini +0\.40 +1\.60 +(\$|<\$)\d\.\d\d$`},
			nil},
		{"a dated snapshot", []string{"--catalog", cat, "--provider", "openai", "--model", "gpt-5-mini-2025-08-07"}, nil,
			[]string{`(?m)^  gpt-5-mini +0\.25 +2\.00 +\S+  the model asked for; reasoning tokens`}, []string{"price unknown"}},
		{"an unknown model", []string{"--catalog", cat, "--provider", "openai", "--model", "llama3"},
			[]string{"to openai model llama3;"}, []string{`(?m)^  llama3 +price unknown  the model asked for$`}, []string{"asked for;"}},
		{"one server", []string{"--catalog", cat, "--server", "weather"},
			[]string{": 1 tool; 0 already have hints for their current definition (not sent); 1 to send in 1 request\n",
				"requests: 1, of 1 tool each"}, nil, []string{"notes/"}},
		{"--limit", []string{"--catalog", cat, "--limit", "1"},
			[]string{": 3 tools; 0 already have hints for their current definition (not sent); 1 to send in 1 request\n",
				"2 more need hints and are left for a later run (--limit)\n"}, nil, nil},
		{"--batch", []string{"--catalog", cat, "--batch", "1"}, []string{"3 to send in 3 requests", "requests: 3, of 1 tool each"}, nil, nil},
		{"the demo, by name", []string{"--catalog", "demo"}, []string{"enrich: the embedded demo catalog: 89 tools;"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, append(base, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q", w)
				}
			}
			for _, m := range tt.match {
				if !regexp.MustCompile(m).MatchString(stdout) {
					t.Errorf("stdout does not match %s", m)
				}
			}
			for _, l := range tt.lacking {
				if strings.Contains(stdout, l) {
					t.Errorf("stdout has %q", l)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s", stdout)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := runCLI(t, append(base, "--catalog", cat, "--json")...)
		var plan enrichPlanJSON
		if err := json.Unmarshal([]byte(stdout), &plan); err != nil || code != exitOK {
			t.Fatalf("exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		var ids []string
		for _, tt := range plan.ToSend {
			ids = append(ids, tt.ID)
			if tt.Tokens <= 0 {
				t.Errorf("%s: %d tokens", tt.ID, tt.Tokens)
			}
		}
		if plan.Source != "catalog" || plan.Path != cat || plan.Out != out || plan.Send != 3 || len(plan.Requests) != 2 ||
			strings.Join(ids, ",") != "notes/create_note,notes/search_notes,weather/get_forecast" ||
			plan.PricesAsOf != enrich.PricesAsOf || plan.ClaudeInputTokens <= plan.InputTokens {
			t.Errorf("plan %+v", plan)
		}
		if p := plan.Prices; len(p) != len(enrich.Prices()) || p[0].Model != "claude-haiku-4-5" || !p[0].Asked || p[0].USD == nil || *p[0].USD <= 0 {
			t.Errorf("prices %+v; want the model asked for first, with a price", p)
		}
		_, stdout, _ = runCLI(t, append(base, "--catalog", cat, "--json", "--provider", "openai", "--model", "llama3")...)
		plan = enrichPlanJSON{}
		if json.Unmarshal([]byte(stdout), &plan) != nil || len(plan.Prices) == 0 || plan.Prices[0].Model != "llama3" ||
			plan.Prices[0].Known || plan.Prices[0].USD != nil {
			t.Errorf("an unknown model's price: %+v", plan.Prices)
		}
	})
	t.Cleanup(func() {
		if n := len(s.Requests()); n != 0 {
			t.Errorf("a dry run sent %d requests", n)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a dry run wrote %s", out)
		}
	})
}

// TestEnrichRealServer: enrich -c with a real MCP server
// (@modelcontextprotocol/server-memory from npm ci) writes hints for its
// tools to the config's state directory, and a second run sends nothing.
func TestEnrichRealServer(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	mem := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin", "mcp-server-memory")
	if _, err := os.Stat(mem); err != nil {
		t.Skip("no node_modules (npm ci in the repository root installs the servers)")
	}
	dir := t.TempDir()
	cfg := writeConfigJSON(t, filepath.Join(dir, "toolsearch.json"), map[string]any{
		"mcpServers": map[string]any{"memory": map[string]any{"command": mem, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "m.jsonl")}}},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state")},
	})
	hintsFile := filepath.Join(dir, "state", "hints.jsonl")
	s := openAIStandIn(t)
	args := []string{"enrich", "-c", cfg, "--server", "memory", "--provider", "openai", "--base-url", s.URL + "/v1", "--timeout", "60s"}
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK || !strings.Contains(stderr, "memory: starting…") || !strings.Contains(stderr, "enrich: the servers of "+cfg+": ") {
		t.Fatalf("enrich: exit %d\n%s%s", code, stdout, stderr)
	}
	set, err := hints.LoadFile(hintsFile)
	if err != nil || set.Len() < 5 {
		t.Fatalf("the state directory's hints file: %v, %d entries", err, set.Len())
	}
	sent := 0
	for _, r := range s.Requests() {
		sent += len(r.Tools)
	}
	for _, e := range set.Entries() {
		if !strings.HasPrefix(e.ID, "memory/") || e.Digest == "" {
			t.Errorf("entry %+v", e)
		}
	}
	if sent != set.Len() || !slices.ContainsFunc(set.Entries(), func(e hints.Entry) bool { return e.ID == "memory/create_entities" }) {
		t.Errorf("%d tools sent, %d written", sent, set.Len())
	}
	n := len(s.Requests())
	code, stdout, stderr = runCLI(t, args...)
	if code != exitOK || !strings.Contains(stderr, "nothing to send") || len(s.Requests()) != n {
		t.Errorf("second run: exit %d, %d requests, want %d\n%s%s", code, len(s.Requests()), n, stdout, stderr)
	}
}
