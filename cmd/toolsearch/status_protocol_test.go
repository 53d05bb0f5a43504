package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStatusShowsProtocol: status names the MCP version each server's
// session negotiated, in the table and in --json: 2026-07-28 for a server
// that serves it (a stateless streamable HTTP server), 2025-11-25 for one
// that does not (a stateful one), and for a server pinned to 2025-11-25.
func TestStatusShowsProtocol(t *testing.T) {
	t.Parallel()
	url := func(stateless bool) string {
		s := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "noop", Description: "Do nothing.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: stateless}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	modern, legacy := url(true), url(false)
	servers := map[string]any{
		"modern": map[string]any{"type": "http", "url": modern},
		"legacy": map[string]any{"type": "http", "url": legacy},
		"pinned": map[string]any{"type": "http", "url": modern, "protocolVersion": "2025-11-25"},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": map[string]any{"limits": map[string]any{"startTimeout": "20s"}}})
	cfg := filepath.Join(t.TempDir(), "ts.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"modern": "2026-07-28", "legacy": "2025-11-25", "pinned": "2025-11-25"}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"status", "-c", cfg, "--state-dir", t.TempDir()}, &stdout, &stderr); code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !regexp.MustCompile(`(?m)^SERVER\s+STATE\s+PROTOCOL\s+TOOLS`).MatchString(stdout.String()) {
		t.Errorf("no PROTOCOL column:\n%s", stdout.String())
	}
	for name, proto := range want {
		if !regexp.MustCompile(`(?m)^` + name + `\s+ready\s+` + regexp.QuoteMeta(proto) + `\s+1\s`).MatchString(stdout.String()) {
			t.Errorf("no row %q ready at %s:\n%s", name, proto, stdout.String())
		}
	}

	stdout.Reset()
	if code := run(context.Background(), []string{"status", "-c", cfg, "--state-dir", t.TempDir(), "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, stderr.String())
	}
	var out statusJSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range out.Servers {
		got[s.Name] = s.Protocol
	}
	for name, proto := range want {
		if got[name] != proto {
			t.Errorf("--json: %s protocol %q, want %q (all: %v)", name, got[name], proto, got)
		}
	}
}
