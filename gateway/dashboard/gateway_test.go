package dashboard_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

// argumentCanary is a call's argument, and so part of its result: the
// dashboard shows neither unless recordArguments is on.
const argumentCanary = "argument-canary-5521"

// TestThroughTheGateway drives a real gateway with a real upstream server
// and a real MCP client, and reads what the dashboard shows.
func TestThroughTheGateway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		record bool
	}{{"arguments not recorded by default", false}, {"arguments recorded when asked", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dash map[string]any
			if tc.record {
				dash = map[string]any{"recordArguments": true}
			}
			r := newRig(t, rigOptions{dashboard: dash})
			cs := r.client(t, "e2e-client")
			found := search(t, cs, "keep a short note in the notebook")
			i := slices.IndexFunc(found, func(n string) bool { return strings.HasSuffix(n, "keep_note") })
			if i < 0 {
				t.Fatalf("the search found %v, not keep_note", found)
			}
			note := found[i]
			if got := call(t, cs, "call_tool", map[string]any{"name": note, "arguments": map[string]any{"text": argumentCanary}}); !strings.Contains(got, argumentCanary) {
				t.Fatalf("keep_note answered %q", got)
			}
			// A secret of the configuration in a call's arguments is never
			// shown, recorded or not.
			call(t, cs, "call_tool", map[string]any{"name": note, "arguments": map[string]any{"text": upstreamSecret}})
			if got := search(t, cs, "zzqx frobnicate quux"); len(got) != 0 {
				t.Fatalf("a nonsense query found %v", got)
			}
			search(t, cs, "render a page of markup")

			var st dashboard.State
			// The server may still be listing its resources and prompts
			// (it is ready after): wait for that too.
			eventually(t, "the dashboard shows the searches and the server ready", 10*time.Second, func() bool {
				st = r.state(t)
				return len(st.Searches) == 3 && len(st.Servers) == 1 && st.Servers[0].State == "ready"
			})
			// Servers: state, tools, and a redacted stderr tail.
			if len(st.Servers) != 1 || st.Servers[0].Name != "hostile" || st.Servers[0].State != "ready" || st.Servers[0].Tools != 2 {
				t.Fatalf("servers %+v, want hostile ready with 2 tools", st.Servers)
			}
			srv := st.Servers[0]
			if !strings.Contains(srv.Stderr, "hostile starting") || strings.Contains(srv.Stderr, upstreamSecret) {
				t.Errorf("stderr tail %q: want the server's lines without its secret", srv.Stderr)
			}
			if srv.Deferral != "deferred" || !strings.Contains(srv.DeferralWhy, "search") || srv.Tokens <= 0 {
				t.Errorf("deferral %q (%q), tokens %d: want deferred under exposure search", srv.Deferral, srv.DeferralWhy, srv.Tokens)
			}
			// Clients: the session, its exposure and why.
			if len(st.Sessions) != 1 {
				t.Fatalf("sessions %+v, want one", st.Sessions)
			}
			sess := st.Sessions[0]
			if sess.Client != "e2e-client 1.0" || sess.Exposure != "search" || sess.Why == "" || !sess.Open ||
				sess.Searches != 3 || sess.Calls != 2 || sess.Protocol != "2025-11-25" {
				t.Errorf("session %+v: want e2e-client in search exposure, with 3 searches and 2 calls", sess)
			}
			if sess.FullTokens <= 0 || sess.SentTokens <= 0 {
				t.Errorf("session tokens full %d sent %d: want both counted", sess.FullTokens, sess.SentTokens)
			}
			// Searches, newest first: what each found, loaded and called.
			last, miss, hit := st.Searches[0], st.Searches[1], st.Searches[2]
			if hit.Query != "keep a short note in the notebook" || hit.Outcome != dashboard.OutcomeCalled || len(hit.Called) != 2 ||
				hit.Called[0].Tool != note || hit.Called[0].Outcome != "ok" || !slices.Contains(hit.Loaded, note) || hit.Form == "" {
				t.Errorf("the first search %+v: want it to have loaded and called %s", hit, note)
			}
			if miss.Outcome != dashboard.OutcomeNoCall || len(miss.Results) != 0 {
				t.Errorf("the nonsense search %+v: want no call", miss)
			}
			if last.Outcome != dashboard.OutcomeWaiting {
				t.Errorf("the last search %+v: want it waiting (nothing after it yet)", last)
			}
			if len(st.Misses) != 1 || st.Misses[0].Query != "zzqx frobnicate quux" || st.Misses[0].Count != 1 {
				t.Errorf("misses %+v, want the nonsense query", st.Misses)
			}
			if len(st.Economy.Points) == 0 {
				t.Error("no point in the context economy plot")
			}
			// Arguments and results: absent unless recorded.
			_, _, body := r.get(t, "/ui/api/state", nil)
			if strings.Contains(body, upstreamSecret) {
				t.Error("the state shows a secret of the configuration that a call carried")
			}
			if tc.record && !strings.Contains(hit.Called[1].Arguments, "[REDACTED]") {
				t.Errorf("recorded arguments %q: want the secret replaced", hit.Called[1].Arguments)
			}
			if got := strings.Contains(body, argumentCanary); got != tc.record {
				t.Errorf("the state holds the call's argument: %v, want %v", got, tc.record)
			}
			if st.RecordArguments != tc.record {
				t.Errorf("recordArguments %v, want %v", st.RecordArguments, tc.record)
			}
			if tc.record && (!strings.Contains(hit.Called[0].Arguments, argumentCanary) || !strings.Contains(hit.Called[0].Result, argumentCanary)) {
				t.Errorf("recorded call %+v: want its arguments and result", hit.Called[0])
			}
			// A closed session shows as closed.
			_ = cs.Close()
			eventually(t, "the session shows closed", 10*time.Second, func() bool {
				st = r.state(t)
				return len(st.Sessions) == 1 && !st.Sessions[0].Open
			})
			if st.Searches[0].Outcome != dashboard.OutcomeNoCall {
				t.Errorf("the last search of a closed session is %q, want %q", st.Searches[0].Outcome, dashboard.OutcomeNoCall)
			}
		})
	}
}

// TestGuardedLikeMCP checks that /ui passes the guard of /mcp: the token,
// the Host check against DNS rebinding and the Origin check.
func TestGuardedLikeMCP(t *testing.T) {
	t.Parallel()
	const token = "dashboard-token-0451-abcdef"
	r := newRig(t, rigOptions{token: token})
	anon := &rig{url: r.url}
	tests := []struct {
		name   string
		r      *rig
		path   string
		header map[string]string
		want   int
	}{
		{"page with the token", r, "/ui/servers", nil, http.StatusOK},
		{"state with the token", r, "/ui/api/state", nil, http.StatusOK},
		{"page without the token", anon, "/ui/servers", nil, http.StatusUnauthorized},
		{"state without the token", anon, "/ui/api/state", nil, http.StatusUnauthorized},
		{"events without the token", anon, "/ui/events", nil, http.StatusUnauthorized},
		{"script without the token", anon, "/ui/app.js", nil, http.StatusUnauthorized},
		{"rebound host", r, "/ui/api/state", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"foreign origin", r, "/ui/api/state", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"loopback origin", r, "/ui/api/state", map[string]string{"Origin": "http://127.0.0.1:9"}, http.StatusOK},
		{"unknown page", r, "/ui/nope", nil, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, h, body := tc.r.get(t, tc.path, tc.header)
			if code != tc.want {
				t.Fatalf("GET %s answered %d (%s), want %d", tc.path, code, body, tc.want)
			}
			if strings.Contains(body, token) {
				t.Errorf("the answer shows the token")
			}
			if code == http.StatusOK && !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q", h.Get("Content-Security-Policy"))
			}
		})
	}
}

// TestEnrichPanel: with background enrichment on, the state the pages read
// says what it did: its state, the tools with hints, today's spend
// against the budget and the day's outcomes.
func TestEnrichPanel(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{enrich: true})
	if st := r.state(t); st.Enrich == nil {
		t.Fatal("the state has no enrichment with enrichment on")
	}
	var st dashboard.State
	eventually(t, "every tool with hints", 30*time.Second, func() bool {
		st = r.state(t)
		return st.Enrich.State == "idle" && st.Enrich.Tools > 0 && st.Enrich.WithHints == st.Enrich.Tools
	})
	e := st.Enrich
	if e.Provider != "openai" || e.Model != "small-model" || e.SpentTools != int64(e.Tools) || e.Written != int64(e.Tools) ||
		e.BudgetTools != config.DefaultEnrichDailyTools || e.BudgetTokens != config.DefaultEnrichDailyTokens || e.SpentTokens <= 0 ||
		e.Day != time.Now().UTC().Format(time.DateOnly) || e.LastError != "" || e.Total != 0 {
		t.Errorf("enrichment %+v", e)
	}
	if off := newRig(t, rigOptions{}).state(t); off.Enrich != nil {
		t.Errorf("enrichment off shows %+v", off.Enrich)
	}
}
