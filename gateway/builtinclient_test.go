package gateway

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
)

// callText calls a tool through a client session and returns the text
// of its result, whether it is an error, and the protocol error if any.
func callText(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", true, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

// TestBuiltinsPerClient: which built-in tools each client is shown, and
// that what a client is not shown it can neither find nor call. Claude
// Code, Codex and VS Code (known by clientInfo) get only what the
// configuration sets explicitly (web_fetch here); another client gets the
// file tools in the configured roots; so do clients of MCP 2026-07-28 over
// HTTP, by the clientInfo name of each request.
func TestBuiltinsPerClient(t *testing.T) {
	t.Parallel()
	ws := workspace(t)
	cfg := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
		map[string]any{"builtins": map[string]any{"roots": []string{ws}, "lsp": false, "web_fetch": map[string]any{"allow": []string{"example.com"}}}})
	g := startGateway(t, cfg)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	all := []string{"builtin__glob", "builtin__grep", "builtin__web_fetch", "builtin__list_resources", "builtin__read_resource"}
	for _, tc := range []struct {
		client, mode string
		want         []string // of all
	}{
		{"inspector", "full", all},
		{"inspector", "search", []string{"builtin__glob", "builtin__grep"}}, // the others are deferred
		{"claude-code", "full", []string{"builtin__web_fetch"}},
		{"codex-mcp-client", "full", []string{"builtin__web_fetch"}},
		{"Visual Studio Code - Insiders", "full", []string{"builtin__web_fetch"}},
		{"codex-mcp-client", "search", nil},
	} {
		t.Run(tc.client+" "+tc.mode, func(t *testing.T) {
			t.Parallel()
			cs := connectAs(t, g, tc.mode, tc.client, nil)
			listed := listByName(t, cs)
			for _, name := range all {
				_, got := listed[name]
				if want := contains(tc.want, name); got != want {
					t.Errorf("%s in %s: %s listed = %v, want %v", tc.client, tc.mode, name, got, want)
				}
			}
			if tc.mode != "search" {
				return
			}
			// Search finds only what the client is shown, and call_tool
			// refuses the rest, saying why.
			text, _, err := callText(t, cs, searchToolName, map[string]any{"query": "find files by name pattern"})
			if err != nil {
				t.Fatal(err)
			}
			if found := strings.Contains(text, "builtin__glob"); found != contains(tc.want, "builtin__glob") {
				t.Errorf("search found builtin__glob = %v for %s: %s", found, tc.client, text)
			}
			text, isErr, err := callText(t, cs, callToolName, map[string]any{"name": "builtin__grep", "arguments": map[string]any{"pattern": "hello"}})
			if err != nil {
				t.Fatal(err)
			}
			if contains(tc.want, "builtin__grep") {
				if isErr || !strings.Contains(text, "greet.go") {
					t.Errorf("grep = %q, %v", text, isErr)
				}
			} else if !isErr || !strings.Contains(text, "not offered to this client") || !strings.Contains(text, "has tools of its own") {
				t.Errorf("grep for %s = %q, %v; want a refusal that says why", tc.client, text, isErr)
			}
		})
	}
	t.Run("a full-mode client cannot call what it is not shown", func(t *testing.T) {
		t.Parallel()
		cs := connectAs(t, g, "full", "claude-code", nil)
		if _, _, err := callText(t, cs, "builtin__grep", map[string]any{"pattern": "hello"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("claude-code called builtin__grep in full mode: %v", err)
		}
	})
	t.Run("MCP 2026-07-28 goes by each request's clientInfo", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(g.Handler(""))
		t.Cleanup(srv.Close)
		for _, tc := range []struct {
			client string
			want   []string
		}{
			{"claude-code", []string{"builtin__web_fetch"}},
			{"inspector", all},
			{"Visual Studio Code - Insiders", []string{"builtin__web_fetch"}},
			{"claude-code", []string{"builtin__web_fetch"}}, // again: the same list
		} {
			cl := mcp.NewClient(&mcp.Implementation{Name: tc.client, Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/full"}, &mcp.ClientSessionOptions{ProtocolVersion: clientera.PerRequestVersion})
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			res, err := cs.ListTools(ctx, nil)
			cancel()
			closeSession(t, cs)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			for _, tool := range res.Tools {
				listed[tool.Name] = true
			}
			for _, tool := range all {
				if got, want := listed[tool], contains(tc.want, tool); got != want {
					t.Errorf("2026-07-28 client %q: %s listed = %v, want %v", tc.client, tool, got, want)
				}
			}
			// The list depends on the request's clientInfo: no shared
			// cache may serve it to another client.
			if res.CacheScope != "private" {
				t.Errorf("2026-07-28 client %q: cacheScope %q, want private", tc.client, res.CacheScope)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestBuiltinsFollowClientRoots: with no configured roots the file tools
// are shown only to a client that has roots: not before it has any, and
// from its roots/list_changed on, with list_changed sent; they then work
// in the client's root.
func TestBuiltinsFollowClientRoots(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"builtins": map[string]any{"lsp": false}})
	g := startGateway(t, cfg)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := httptest.NewServer(g.Handler(""))
	t.Cleanup(srv.Close)

	for _, mode := range []string{"full", "search"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			root := workspace(t)
			if err := os.WriteFile(filepath.Join(root, "only_here.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cl, c := newClient(nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/" + mode}, legacySession)
			if err != nil {
				t.Fatal(err)
			}
			c.cs = cs
			t.Cleanup(func() { closeSession(t, cs) })
			if names := c.toolNames(t); contains(names, "builtin__glob") || contains(names, "builtin__grep") {
				t.Fatalf("file tools listed with no roots anywhere: %v", names)
			}
			before := c.changed.Load()
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			cl.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(root), Name: "ws"})
			waitFor(t, "list_changed after the client's roots changed", 20*time.Second, func() bool { return c.changed.Load() > before })
			waitFor(t, "the file tools listed", 20*time.Second, func() bool { return contains(c.toolNames(t), "builtin__glob") })
			text, isErr := c.call(t, "builtin__glob", map[string]any{"pattern": "*.go"})
			if isErr || !strings.Contains(text, "only_here.go") {
				t.Errorf("glob in the client's root = %q, %v", text, isErr)
			}
		})
	}
	t.Run("roots declared at connect are in the first list", func(t *testing.T) {
		t.Parallel()
		root := workspace(t)
		cl, c := newClient(nil)
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		cl.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(root), Name: "ws"})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/full"}, legacySession)
		if err != nil {
			t.Fatal(err)
		}
		c.cs = cs
		t.Cleanup(func() { closeSession(t, cs) })
		if names := c.toolNames(t); !contains(names, "builtin__glob") || !contains(names, "builtin__grep") {
			t.Errorf("the first list lacks the file tools of a client with roots: %v", names)
		}
	})
}

// TestBuiltinsStatus: Builtins gives one decision with a reason per
// built-in tool, for a client the gateway knows nothing of.
func TestBuiltinsStatus(t *testing.T) {
	t.Parallel()
	cfg, err := loadCfg(t, writeConfig(t, nil, map[string]any{"builtins": map[string]any{"roots": []string{t.TempDir()}, "lsp": false}}))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds, note := g.Builtins()
	want := map[string]bool{"glob": true, "grep": true, "lsp": false, "web_fetch": false, "web_search": false, "list_resources": false, "read_resource": false}
	if len(ds) != len(want) {
		t.Fatalf("%d decisions: %+v", len(ds), ds)
	}
	for _, d := range ds {
		if on, ok := want[d.Tool]; !ok || on != d.On || d.Reason == "" {
			t.Errorf("%+v, want on=%v with a reason", d, on)
		}
	}
	if !strings.Contains(note, "claude-code") {
		t.Errorf("note %q does not name the clients that have their own tools", note)
	}
}
