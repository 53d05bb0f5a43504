package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/enrichment"
)

// enrichKeyEnv is the variable the tests' configurations name in
// apiKeyEnv; the tests read configurations with a lookup that holds it.
const enrichKeyEnv = "TOOLSEARCH_TEST_ENRICH_KEY"

// testHints are the hints the stand-ins write: words found in no
// definition, one per tool name, so that a search for one finds its tool
// only through its hints.
func testHints(name string) []any {
	return []any{"find " + name, "use the " + name + " tool", codeWord(name), "get " + name + " done"}
}

// goodAnswers answers every request with testHints.
func goodAnswers(_ int, tools []string) enrichtest.Answer {
	return enrichtest.Answer{Text: enrichtest.ReplyFor(tools, testHints)}
}

// quickEnrich are waits short enough for tests, with failures and
// refused tools waiting an hour, so that a loop that does not wait shows.
func quickEnrich(t *enrichment.Timing) {
	t.Quiet, t.Again = 50*time.Millisecond, 100*time.Millisecond
	t.Retry, t.Refused, t.Skip = time.Hour, time.Hour, time.Hour
	t.Backoff = 10 * time.Millisecond
}

// enrichRig is a gateway whose enrichment asks a stand-in model API.
type enrichRig struct {
	g     *Gateway
	log   *clusterLog
	state string // the state directory
	base  string // the HTTP address, once served
	stop  func() // stops the gateway (once; the test's end does too)
}

// enrichConfig writes a configuration of servers whose enrichment asks
// stand over its API; enrich adds to (or overrides) the enrich block, gw
// to the toolsearch object.
func enrichConfig(t *testing.T, servers map[string]any, stand *enrichtest.Server, state string, enrich, gw map[string]any) string {
	t.Helper()
	e := map[string]any{"enabled": true, "provider": stand.Kind().String(), "baseURL": stand.URL, "apiKeyEnv": enrichKeyEnv, "batch": 10}
	if stand.Kind() == enrichtest.OpenAI {
		e["baseURL"] = stand.URL + "/v1/"
	}
	maps.Copy(e, enrich)
	top := map[string]any{"stateDir": state, "enrich": e}
	maps.Copy(top, gw)
	return writeConfig(t, servers, top)
}

// loadEnrichConfig reads a configuration with the stand-in's key in
// enrichKeyEnv.
func loadEnrichConfig(t *testing.T, path, key string) *config.Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(path, data, func(k string) (string, bool) {
		if k == enrichKeyEnv {
			return key, key != ""
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startEnrichRig starts a gateway of cfg with the waits tune sets, and
// serves it over HTTP when serve is set.
func startEnrichRig(t *testing.T, cfg *config.Config, opts Options, tune func(*enrichment.Timing), serve bool) *enrichRig {
	t.Helper()
	r := &enrichRig{log: &clusterLog{}, state: cfg.Gateway.StateDir}
	opts.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	quickEnrich(&g.enrichTiming)
	if tune != nil {
		tune(&g.enrichTiming)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	var once sync.Once
	r.stop = func() { once.Do(func() { stopGateway(t, g, cancel) }) }
	t.Cleanup(r.stop)
	r.g = g
	if serve {
		r.base = serveHTTP(t, g.Handler("")).URL
	}
	return r
}

// waitEnrich waits until the enrichment status satisfies ok.
func (r *enrichRig) waitEnrich(t *testing.T, what string, ok func(EnrichStatus) bool) EnrichStatus {
	t.Helper()
	var st EnrichStatus
	waitFor(t, what, 30*time.Second, func() bool {
		st = r.g.EnrichStatus()
		return ok(st)
	})
	return st
}

// health reads /healthz.
func (r *enrichRig) health(t *testing.T) (status string, enrich *EnrichStatus) {
	t.Helper()
	code, body := get(t, r.base, "/healthz")
	var h struct {
		Status string        `json:"status"`
		Enrich *EnrichStatus `json:"enrich"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != 200 {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	return h.Status, h.Enrich
}

// visibleNames are the names of the tools of server key that policy
// shows.
func visibleNames(g *Gateway, key string) []string {
	var out []string
	for _, tl := range g.Snapshot().Tools() {
		if tl.Server == key && g.Visible(tl) {
			out = append(out, tl.Name)
		}
	}
	slices.Sort(out)
	return out
}

// withMemory adds the npm memory server to servers when node_modules has
// it.
func withMemory(t *testing.T, servers map[string]any) map[string]any {
	p := filepath.Join(repoRoot(t), "node_modules", ".bin", "mcp-server-memory")
	if _, err := os.Stat(p); err == nil {
		servers["memory"] = map[string]any{"command": p, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
	}
	return servers
}

// TestEnrichRanksNewHints: once the catalog settles, the tools without
// hints are sent to the provider (Anthropic's API, stood in); while its
// answer is held, a real MCP client over HTTP lists and searches as
// before; once the hints are written, the same session's search ranks a
// tool by a word only its hints hold, without a restart. The hints file
// holds each tool's digest, policy's hidden tool is never sent, and
// /healthz, /metrics and the status say what was done and spent.
func TestEnrichRanksNewHints(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stand := enrichtest.New(t, enrichtest.Anthropic, func(n int, tools []string) enrichtest.Answer {
		a := goodAnswers(n, tools)
		if slices.Contains(tools, "deploy") {
			a.Hold = release
		}
		return a
	})
	state := t.TempDir()
	servers := withMemory(t, map[string]any{"echo": roleServer(t, "echo")})
	path := enrichConfig(t, servers, stand, state, nil, map[string]any{"policy": map[string]any{"deny": []string{"echo/delete_everything"}}})
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, nil, true)
	waitState(t, r.g, "echo", 20*time.Second, StateReady)
	c := connectHTTP(t, r.base+"/mcp/search", nil)
	waitFor(t, "the provider asked for echo's tools", 30*time.Second, func() bool { return stand.ToolCounts()["deploy"] == 1 })

	// The answer is held: lists and searches answer, without the hints.
	if names := c.toolNames(t); len(names) == 0 {
		t.Fatal("tools/list is empty while enrichment runs")
	}
	if hits := c.search(t, codeWord("deploy")); len(hits) > 0 && strings.HasSuffix(hits[0], "deploy") {
		t.Fatalf("a hint's word found its tool before the hints were written: %v", hits)
	}
	if st := r.g.EnrichStatus(); st.State != EnrichRunning || st.Progress == nil {
		t.Errorf("status while the provider holds its answer: %+v", st)
	}
	close(release)
	waitFor(t, "a search ranking by the new hints", 30*time.Second, func() bool {
		hits := c.search(t, codeWord("deploy"))
		return len(hits) > 0 && strings.HasSuffix(hits[0], "deploy")
	})
	st := r.waitEnrich(t, "enrichment idle", func(s EnrichStatus) bool { return s.State == EnrichIdle })

	// What was sent: every visible tool once, the hidden one never.
	counts := stand.ToolCounts()
	if counts["delete_everything"] != 0 {
		t.Error("a tool policy hides was sent to the model")
	}
	visible := visibleNames(r.g, "echo")
	for _, n := range visible {
		if counts[n] != 1 {
			t.Errorf("echo/%s sent %d times, want once", n, counts[n])
		}
	}
	set, err := hints.LoadFile(filepath.Join(state, "hints.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range r.g.Snapshot().Tools() {
		if !r.g.Visible(tl) {
			continue
		}
		if e, ok := set.Get(tl.ID()); !ok || e.Digest != hints.Digest(tl) || len(tl.Hints) != 4 {
			t.Errorf("%s: entry %+v, hints on the tool %q", tl.ID(), e, tl.Hints)
		}
	}
	total := len(r.g.Snapshot().Tools()) - 1 // less the hidden one
	if st.Tools != total || st.WithHints != total || st.SinceStart.Written != int64(total) || st.Today.Written != int64(total) ||
		st.Spent.Tools != int64(total) || st.Spent.Tokens <= 0 || st.Remaining.Tools != config.DefaultEnrichDailyTools-int64(total) ||
		st.Requests < 1 || st.InputTokens <= 0 || st.OutputTokens <= 0 || st.Provider != "anthropic" {
		t.Errorf("status after the run: %+v (want %d tools, all with hints, written and spent)", st, total)
	}
	// /healthz and /metrics say the same.
	status, h := r.health(t)
	if status != "ok" || h == nil || h.State != EnrichIdle || h.WithHints != total || h.Spent.Tools != int64(total) ||
		h.Budget.Tools != config.DefaultEnrichDailyTools {
		t.Errorf("/healthz: %s %+v", status, h)
	}
	_, metrics := get(t, r.base, "/metrics")
	for _, want := range []string{
		`toolsearch_enrich_tools_total{outcome="written"} ` + itoa(total),
		`toolsearch_enrich_tools_total{outcome="rejected"} 0`,
		`toolsearch_enrich_budget_remaining{unit="tools"} ` + itoa(config.DefaultEnrichDailyTools-total),
		`toolsearch_enrich_tools_without_hints 0`,
		`toolsearch_enrich_state{state="idle"} 1`,
		`toolsearch_enrich_tokens_total{direction="input"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The key the provider was sent never shows.
	if strings.Contains(r.log.String(), stand.APIKey) || strings.Contains(metrics, stand.APIKey) {
		t.Error("the provider's key shows in the log or the metrics")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestEnrichNeverHoldsUpClients: a provider that never answers keeps a
// run going, and meanwhile lists, searches and calls answer; the gateway
// stops all the same.
func TestEnrichNeverHoldsUpClients(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{}) // never closed: the request ends with the gateway
	stand := enrichtest.New(t, enrichtest.Anthropic, func(int, []string) enrichtest.Answer { return enrichtest.Answer{Hold: hang} })
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(), nil, nil)
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, nil, true)
	waitFor(t, "a request to the provider", 30*time.Second, func() bool { return len(stand.Requests()) > 0 })
	c := connectHTTP(t, r.base+"/mcp/search", nil)
	bounded(t, "tools/list while the provider hangs", 20*time.Second, func() {
		if len(c.toolNames(t)) == 0 {
			t.Error("an empty tool list")
		}
	})
	bounded(t, "a search while the provider hangs", 20*time.Second, func() {
		if hits := c.search(t, "echo the text back"); len(hits) == 0 {
			t.Error("the search found nothing")
		}
	})
	bounded(t, "a call while the provider hangs", 20*time.Second, func() {
		if text, isErr := c.call(t, callToolName, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}); isErr || !strings.Contains(text, "hi") {
			t.Errorf("call = %q", text)
		}
	})
	if st := r.g.EnrichStatus(); st.State != EnrichRunning {
		t.Errorf("state %q while the provider holds its answer, want running", st.State)
	}
	if len(stand.Requests()) != 1 {
		t.Errorf("%d requests: want the one that hangs", len(stand.Requests()))
	}
}

// TestEnrichOnlyChangedTools: a server that changes its tools
// (list_changed) gets only the new or changed tools enriched; the others
// keep their hints and are not sent again.
func TestEnrichOnlyChangedTools(t *testing.T) {
	t.Parallel()
	stand := enrichtest.New(t, enrichtest.OpenAI, goodAnswers)
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(), nil, nil)
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, nil, true)
	waitState(t, r.g, "echo", 20*time.Second, StateReady)
	r.waitEnrich(t, "the first run's hints", func(s EnrichStatus) bool { return s.State == EnrichIdle && s.WithHints == s.Tools })
	before := len(stand.Requests())

	c := connectHTTP(t, r.base+"/mcp/full", nil)
	if text, isErr := c.call(t, "grow", map[string]any{"name": "frobnicate"}); isErr {
		t.Fatal(text)
	}
	waitFor(t, "hints on the new tool", 30*time.Second, func() bool {
		tl, ok := r.g.Snapshot().Tool("echo/frobnicate")
		return ok && len(tl.Hints) == 4
	})
	reqs := stand.Requests()[before:]
	var sent []string
	for _, q := range reqs {
		sent = append(sent, q.Tools...)
	}
	if !slices.Equal(sent, []string{"frobnicate"}) {
		t.Errorf("after list_changed the provider was sent %q, want only the new tool", sent)
	}
	for n, k := range stand.ToolCounts() {
		if k != 1 {
			t.Errorf("%s sent %d times", n, k)
		}
	}
	hits := connectHTTP(t, r.base+"/mcp/search", nil).search(t, codeWord("frobnicate"))
	if len(hits) == 0 || hits[0] != "frobnicate" {
		t.Errorf("a search for the new tool's hint found %v", hits)
	}
}

// TestEnrichMissingKey: a provider whose key is not in the environment
// leaves enrichment unavailable, said in one line in the status, /healthz
// and the log; nothing is sent, and the gateway serves as ever.
func TestEnrichMissingKey(t *testing.T) {
	t.Parallel()
	stand := enrichtest.New(t, enrichtest.Anthropic, goodAnswers)
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(), nil, nil)
	r := startEnrichRig(t, loadEnrichConfig(t, path, ""), Options{}, nil, true)
	waitState(t, r.g, "echo", 20*time.Second, StateReady)
	want := "the anthropic key is missing: $" + enrichKeyEnv + " is not set"
	st := r.g.EnrichStatus()
	if st.State != EnrichUnavailable || !strings.Contains(st.Reason, want) || strings.Contains(st.Line(), "\n") {
		t.Errorf("status %+v, want unavailable: %s", st, want)
	}
	if _, h := r.health(t); h == nil || h.State != EnrichUnavailable || !strings.Contains(h.Reason, want) {
		t.Errorf("/healthz enrich %+v", h)
	}
	if r.log.count(want) != 1 {
		t.Errorf("the log says %d times %q:\n%s", r.log.count(want), want, r.log)
	}
	c := connectHTTP(t, r.base+"/mcp/search", nil)
	if hits := c.search(t, "echo the text back"); len(hits) == 0 {
		t.Error("no search result with enrichment unavailable")
	}
	r.g.enr.Kick()
	time.Sleep(300 * time.Millisecond) // six quiet times
	if n := len(stand.Requests()); n != 0 {
		t.Errorf("%d requests without a key", n)
	}
}

// TestEnrichFailures: whatever the provider does (refuse the key, ask to
// wait, fail, hang, answer garbage, huge hints or tools it was not asked
// for, or not be there at all), the gateway serves on, the hints file
// keeps what it held, and the status says what happened in one line. A
// 429 or a 5xx is retried within the run; a refused key or an unreachable
// provider ends the run and waits (an hour here) before the next, however
// often the catalog changes meanwhile; a refused answer is counted and its
// tools wait too.
func TestEnrichFailures(t *testing.T) {
	t.Parallel()
	// Each try is two requests, one per server: the gateway's built-in
	// tools and echo's (batches never mix servers).
	type outcome struct {
		state    string
		reason   string // in the status's reason, or else its last error
		requests int    // how many the provider received (0: do not check)
		written  bool
		rejected bool
	}
	huge := strings.Repeat("h", 10_000)
	tests := []struct {
		name   string
		script func(n int, tools []string) enrichtest.Answer
		key    string // "" is the stand-in's
		down   bool   // the provider's address answers nothing
		tune   func(*enrichment.Timing)
		want   outcome
	}{
		{name: "401: the key refused", key: "wrong-key",
			want: outcome{state: EnrichBackoff, reason: "the provider refused the key: HTTP 401", requests: 1}},
		{name: "403", script: func(int, []string) enrichtest.Answer { return enrichtest.Answer{Status: 403} },
			want: outcome{state: EnrichBackoff, reason: "the provider refused the key: HTTP 403", requests: 1}},
		{name: "429 with Retry-After, then hints", script: func(n int, tools []string) enrichtest.Answer {
			if n == 0 {
				return enrichtest.Answer{Status: 429, Header: map[string]string{"Retry-After": "1"}}
			}
			return goodAnswers(n, tools)
		}, want: outcome{state: EnrichIdle, requests: 3, written: true}},
		{name: "5xx twice, then hints", script: func(n int, tools []string) enrichtest.Answer {
			if n < 2 {
				return enrichtest.Answer{Status: 502 + n}
			}
			return goodAnswers(n, tools)
		}, want: outcome{state: EnrichIdle, requests: 4, written: true}},
		{name: "5xx every time", script: func(int, []string) enrichtest.Answer { return enrichtest.Answer{Status: 500} },
			want: outcome{state: EnrichBackoff, reason: "the provider failed: HTTP 500", requests: 10}},
		{name: "a timeout every time", script: func(int, []string) enrichtest.Answer { return enrichtest.Answer{Hold: make(chan struct{})} },
			tune: func(t *enrichment.Timing) { t.RequestTimeout = 100 * time.Millisecond },
			want: outcome{state: EnrichBackoff, reason: "the provider did not answer in time", requests: 10}},
		{name: "unreachable", down: true,
			want: outcome{state: EnrichBackoff, reason: "the provider cannot be reached"}},
		{name: "garbage", script: func(int, []string) enrichtest.Answer {
			return enrichtest.Answer{Text: "Sure! Here are some hints: deploy, ship"}
		},
			want: outcome{state: EnrichIdle, reason: "the model's answer was refused", requests: 2, rejected: true}},
		{name: "huge hints", script: func(_ int, tools []string) enrichtest.Answer {
			return enrichtest.Answer{Text: enrichtest.ReplyFor(tools, func(string) []any { return []any{huge, huge, huge, huge} })}
		}, want: outcome{state: EnrichIdle, reason: "the model's answer was refused", requests: 2, rejected: true}},
		{name: "tools it was not asked for", script: func(_ int, tools []string) enrichtest.Answer {
			var made []string
			for _, n := range tools {
				made = append(made, n+"_x")
			}
			return enrichtest.Answer{Text: enrichtest.ReplyFor(made, testHints)}
		}, want: outcome{state: EnrichIdle, reason: "the model's answer was refused", requests: 2, rejected: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stand := enrichtest.New(t, enrichtest.Anthropic, tc.script)
			if tc.down {
				stand.Close()
			}
			state := t.TempDir()
			// An entry the user wrote by hand: it must survive whatever
			// the provider does.
			kept := `{"id":"echo/echo","hints":["written by hand"]}` + "\n"
			if err := os.WriteFile(filepath.Join(state, "hints.jsonl"), []byte(kept), 0o644); err != nil {
				t.Fatal(err)
			}
			path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, state, nil, nil)
			key := stand.APIKey
			if tc.key != "" {
				key = tc.key
			}
			r := startEnrichRig(t, loadEnrichConfig(t, path, key), Options{}, tc.tune, true)
			st := r.waitEnrich(t, "the run's end", func(s EnrichStatus) bool {
				return s.State != EnrichWaiting && s.State != EnrichRunning
			})
			if st.State != tc.want.state {
				t.Fatalf("state %q (%s), want %q", st.State, st.Reason, tc.want.state)
			}
			said := st.Reason
			if said == "" {
				said = st.LastError
			}
			if !strings.Contains(said, tc.want.reason) || strings.Contains(said, "\n") {
				t.Errorf("reason %q, last error %q: want one line with %q", st.Reason, st.LastError, tc.want.reason)
			}
			if tc.want.state == EnrichBackoff && (st.NextRun == nil || time.Until(*st.NextRun) < 30*time.Minute) {
				t.Errorf("next run %v: want the hour's back-off", st.NextRun)
			}
			if tc.want.requests > 0 && len(stand.Requests()) != tc.want.requests {
				t.Errorf("%d requests, want %d", len(stand.Requests()), tc.want.requests)
			}
			if got := st.SinceStart.Written > 0; got != tc.want.written {
				t.Errorf("written %d", st.SinceStart.Written)
			}
			if got := st.SinceStart.Rejected > 0; got != tc.want.rejected {
				t.Errorf("rejected %d", st.SinceStart.Rejected)
			}
			// The gateway serves on, and says the same in /healthz and
			// /metrics.
			c := connectHTTP(t, r.base+"/mcp/search", nil)
			if hits := c.search(t, "echo the text back"); len(hits) == 0 {
				t.Error("no search result after the provider failed")
			}
			status, h := r.health(t)
			if status != "ok" || h == nil || h.State != st.State || h.Reason != st.Reason {
				t.Errorf("/healthz %s %+v", status, h)
			}
			if tc.want.rejected {
				_, metrics := get(t, r.base, "/metrics")
				if !strings.Contains(metrics, `toolsearch_enrich_tools_total{outcome="rejected"} `+itoa(int(st.SinceStart.Rejected))) {
					t.Errorf("/metrics does not count %d rejected tools", st.SinceStart.Rejected)
				}
			}
			if tc.want.state == EnrichBackoff && r.log.count("background enrichment: backoff: "+st.Reason[:20]) != 1 {
				t.Errorf("the log does not say once why:\n%s", r.log)
			}
			// The hand-written entry is there, and the file reads.
			set, err := hints.LoadFile(filepath.Join(state, "hints.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := set.Get("echo/echo"); !ok || !slices.Equal(e.Hints, []string{"written by hand"}) {
				t.Errorf("the hand-written entry is %+v", e)
			}
			if !tc.want.written && set.Len() != 1 {
				t.Errorf("the hints file holds %d entries, want only the hand-written one", set.Len())
			}
			// Changes of the catalog (a client connecting) do not cut the
			// wait short: nothing more is sent.
			n := len(stand.Requests())
			for range 3 {
				r.g.enr.Kick()
				connectHTTP(t, r.base+"/mcp/search", nil)
			}
			time.Sleep(500 * time.Millisecond) // ten quiet times
			if got := len(stand.Requests()); got != n {
				t.Errorf("%d more requests after the run ended (want none within the hour's wait)", got-n)
			}
		})
	}
}

// TestEnrichRetriesLater: after a failed run the loop tries again by
// itself, after a back-off that grows, not at once and not never.
func TestEnrichRetriesLater(t *testing.T) {
	t.Parallel()
	var fails atomic.Int32
	fails.Store(2)
	stand := enrichtest.New(t, enrichtest.Anthropic, func(n int, tools []string) enrichtest.Answer {
		if fails.Load() > 0 {
			fails.Add(-1)
			return enrichtest.Answer{Status: 401}
		}
		return goodAnswers(n, tools)
	})
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(), nil, nil)
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, func(t *enrichment.Timing) {
		t.Refused, t.RefusedMax = 200*time.Millisecond, time.Hour
	}, false)
	st := r.waitEnrich(t, "hints after two refusals", func(s EnrichStatus) bool { return s.State == EnrichIdle && s.SinceStart.Written > 0 })
	reqs := stand.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (two refused, then one for each server: the built-in tools and echo)", len(reqs))
	}
	// The second wait is twice the first (each with up to 10% more).
	if d1, d2 := reqs[1].At.Sub(reqs[0].At), reqs[2].At.Sub(reqs[1].At); d1 < 200*time.Millisecond || d2 < 400*time.Millisecond {
		t.Errorf("waits %v and %v: want at least 200ms, then 400ms", d1, d2)
	}
	if st.LastError == "" || !strings.Contains(st.LastError, "401") {
		t.Errorf("last error %q: want the refusal", st.LastError)
	}
}

// TestEnrichSendsNoSecret: a server echoes its configured credential into
// a tool's description and puts a provider-shaped key in its schema; the
// request the background enrichment sends holds neither, and the tool is
// still enriched.
func TestEnrichSendsNoSecret(t *testing.T) {
	t.Parallel()
	const secret = "cfg-secret-7f3a9c2e41d0"
	stand := enrichtest.New(t, enrichtest.Anthropic, goodAnswers)
	leaky := roleServer(t, "leaky")
	leaky["env"].(map[string]string)["LEAKY_TOKEN"] = secret
	path := enrichConfig(t, map[string]any{"leaky": leaky}, stand, t.TempDir(), nil, nil)
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, nil, false)
	st := r.waitEnrich(t, "the run's end", func(s EnrichStatus) bool { return s.State == EnrichIdle && s.WithHints > 0 })
	calls := stand.Requests()
	if len(calls) == 0 {
		t.Fatalf("no request reached the provider (status %+v)", st)
	}
	sent := false
	for _, c := range calls {
		body, _ := json.Marshal(c.Body)
		for _, leak := range []string{secret, "sk-ant-api03-Q7Q7"} {
			if strings.Contains(string(body), leak) || strings.Contains(c.Prompt, leak) {
				t.Errorf("the request to the provider holds %q:\n%.600s", leak, c.Prompt)
			}
		}
		if strings.Contains(c.Prompt, "Look up a record") {
			sent = true
			if strings.Count(c.Prompt, "[REDACTED]") < 2 {
				t.Errorf("the request does not hold the redacted definition:\n%s", c.Prompt)
			}
		}
	}
	if !sent {
		t.Error("the leaky server's tool was never sent to be enriched")
	}
}
