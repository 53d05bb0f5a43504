package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// TestClaudeCodeOnTheDashboard runs `claude -p` against a gateway served
// over HTTP with its dashboard, in auto exposure (Claude Code gets full,
// as it defers MCP tools itself), and reads /ui/api/state once Claude
// Code has exited: Claude Code named with its version, its call of
// create_entities shown as its own, its row closed (a session) or shared
// (MCP 2026-07-28 requests, which have no session), and the saving of its
// own tool search counted, not 0 %.
func TestClaudeCodeOnTheDashboard(t *testing.T) {
	t.Parallel()
	claude := claudeBin(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	var up *proxytest.Upstream
	model := func(req *anthropictest.Request) anthropictest.Reply {
		var added map[string]bool
		bodies := up.Messages()
		for i := len(bodies) - 1; i >= 0; i-- {
			var r apiRequest
			if json.Unmarshal(bodies[i], &r) == nil {
				if p, _ := r.tool(ccToolSearch); p {
					added = r.added()
					break
				}
			}
		}
		return ccModel(req, added)
	}
	up = proxytest.New(t, proxytest.Options{SystemMessages: true, Options: anthropictest.Options{SearchToolName: ccToolSearch, Model: model}})

	memFile := filepath.Join(dir, "memory.jsonl")
	writeJSON(t, filepath.Join(dir, "gateway.json"), map[string]any{"mcpServers": map[string]any{"memory": memoryServer(t, memFile)},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state"), "exposure": "auto"}})
	cfg, err := config.Load(filepath.Join(dir, "gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := dashboard.New(dashboard.FromConfig(cfg.Gateway.Dashboard))
	g, err := gateway.New(cfg, gateway.Options{Feed: d, UI: d, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	srv := httptest.NewUnstartedServer(g.Handler(""))
	srv.Config.RegisterOnShutdown(d.Close)
	srv.Start()
	t.Cleanup(func() {
		d.Close()
		srv.Close()
		cancel()
		g.Close()
	})
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := g.WaitSettled(wctx); err != nil {
		t.Fatalf("the memory server did not start: %v", err)
	}

	writeJSON(t, filepath.Join(dir, "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"gw": map[string]any{"type": "http", "url": srv.URL + "/mcp"}}})
	out := newEgress(t)
	stdout, stderr, err := run(t, 90*time.Second, dir, append(claudeEnv(home, up.URL), out.env()...), claude,
		"-p", ccTask, "--mcp-config", filepath.Join(dir, "mcp.json"), "--strict-mcp-config",
		"--allowedTools", "mcp__gw", "--output-format", "json", "--max-turns", "8")
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s", err, tail(stdout, 3000), tail(stderr, 3000))
	}
	if mem, _ := os.ReadFile(memFile); !strings.Contains(string(mem), "Ada Lovelace") {
		t.Fatalf("Claude Code did not create the entity through the gateway; it answered %s", tail(stdout, 2000))
	}

	client := "claude-code " + claudeCodeVersion
	var st dashboard.State
	var row *dashboard.Session
	deadline := time.Now().Add(15 * time.Second)
	for {
		st = readState(t, srv.URL)
		row = nil
		for i, s := range st.Sessions {
			if s.Client == client || (s.Shared && len(s.Clients) > 0 && s.Clients[0].Client == client) {
				row = &st.Sessions[i]
			}
		}
		if row != nil && row.Calls > 0 && (row.Shared || !row.Open) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st.Sessions, "", " ")
			t.Fatalf("no row of %s with its call, closed or shared, within 15 s after it exited: %s", client, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("Claude Code's row: shared %v, protocol %s, exposure %s, full %d, sent %d, model %d tokens",
		row.Shared, row.Protocol, row.Exposure, row.FullTokens, row.SentTokens, row.ModelTokens)
	if row.Exposure != "full" || row.DeferredBy != "client" || row.ModelTokens <= 0 || row.ModelTokens >= row.FullTokens {
		t.Errorf("Claude Code's row %+v: want full exposure, deferred by the client, its model shown less than the full list", *row)
	}
	if st.Economy.ByClient <= 0 {
		t.Errorf("economy %+v: the saving of the client's own tool search is not counted", st.Economy)
	}
	called := false
	for _, c := range st.Calls {
		if strings.HasSuffix(c.Tool, "create_entities") {
			called = true
			if c.Client != client || c.Outcome != "ok" {
				t.Errorf("the call %+v: want it Claude Code's, ok", c)
			}
		}
	}
	if !called {
		t.Errorf("the dashboard shows no call of create_entities: %+v", st.Calls)
	}
}

// readState reads the dashboard's /ui/api/state.
func readState(t *testing.T, base string) dashboard.State {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(base + "/ui/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st dashboard.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(fmt.Errorf("/ui/api/state: %w", err))
	}
	return st
}
