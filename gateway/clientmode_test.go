package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// connectAs connects a Go SDK client that calls itself name to the
// gateway in the given exposure, over in-memory transports, in a session
// of MCP 2025-11-25 (the era whose initialize names the client).
func connectAs(t testing.TB, g *Gateway, mode, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, mode, st); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "9.9"}, opts).Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

// listByName returns every tool the session lists, by name.
func listByName(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

// TestAutoByClient checks what auto exposure gives each client: by the
// configuration first, then toolsearch.clients, then whether the client
// defers MCP tools itself (Claude Code), then the token threshold; and
// that the initialize result's instructions match what the client gets.
func TestAutoByClient(t *testing.T) {
	t.Parallel()
	many, open := gatedServer(t, "many")
	open()
	// Above the threshold: the 100 gadget tools weigh far more than 1% of
	// 100,000 tokens. Below it: 100% of a million.
	above := map[string]any{"threshold": 1, "contextWindow": 100000}
	below := map[string]any{"threshold": 100, "contextWindow": 1000000}
	with := func(base map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name, client string
		gw           map[string]any
		want         string
		why          string
	}{
		{"claude code above the threshold", "claude-code", above, config.ExposureFull, "defers MCP tools"},
		{"another client above the threshold", "codex-mcp-client", above, config.ExposureDynamic, "exceed the threshold"},
		{"another client below the threshold", "codex-mcp-client", below, config.ExposureFull, "fit under the threshold"},
		{"clients overrides claude code", "claude-code", with(above, "clients", map[string]string{"claude-code": "search"}), config.ExposureSearch, "toolsearch.clients"},
		{"clients leaves claude code to the threshold", "claude-code", with(above, "clients", map[string]string{"claude-code": "auto"}), config.ExposureDynamic, "leaves client"},
		{"clients names another client", "my-agent", with(above, "clients", map[string]string{"my-agent": "full"}), config.ExposureFull, "toolsearch.clients"},
		{"the configured exposure wins", "claude-code", with(above, "exposure", "search"), config.ExposureSearch, "set by configuration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs lockedBuffer
			cfg, err := config.Load(writeConfig(t, map[string]any{"many": many}, c.gw))
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			g.Start(ctx)
			t.Cleanup(func() { stopGateway(t, g, cancel) })
			waitState(t, g, "many", 30*time.Second, StateReady)
			cs := connectAs(t, g, cfg.Gateway.Exposure, c.client, nil)
			tools := listByName(t, cs)
			_, hasSearch := tools[searchToolName]
			_, hasGadget := tools["gadget_7"]
			got := ""
			switch {
			case hasGadget && !hasSearch:
				got = config.ExposureFull
			case hasSearch && !hasGadget && strings.Contains(tools[searchToolName].Description, "adds it to your tool list"):
				got = config.ExposureDynamic
			case hasSearch && !hasGadget:
				got = config.ExposureSearch
			}
			if got != c.want {
				t.Fatalf("client %s got %q (%d tools), want %s", c.client, got, len(tools), c.want)
			}
			instr := cs.InitializeResult().Instructions
			if (c.want == config.ExposureFull) != strings.Contains(instr, "each named server__tool") {
				t.Errorf("instructions do not match exposure %s: %q", c.want, instr)
			}
			waitFor(t, "the session's log line", 5*time.Second, func() bool {
				return strings.Contains(logs.String(), `msg="client connected" client=`+c.client)
			})
			if line := logs.line("client connected"); !strings.Contains(line, "exposure="+c.want) || !strings.Contains(line, c.why) {
				t.Errorf("log line %q does not give exposure %s and why (%q)", line, c.want, c.why)
			}
		})
	}
}

// TestExposureNamesDeferringClients checks that what toolsearch status
// prints for auto names the clients that get full whatever the
// threshold.
func TestExposureNamesDeferringClients(t *testing.T) {
	t.Parallel()
	cases := []struct {
		clients map[string]string
		want    string
	}{
		{nil, "; by client: claude-code gets full (it defers MCP tools itself)"},
		{map[string]string{"claude-code": "search"}, "; by client: claude-code gets search (toolsearch.clients)"},
		{map[string]string{"my-agent": "full", "claude-code": "auto"}, "; by client: claude-code goes by the threshold, my-agent gets full (toolsearch.clients)"},
	}
	for _, c := range cases {
		cfg := config.Default()
		cfg.Gateway.Clients = c.clients
		g, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, reason := g.Exposure()
		if !strings.HasSuffix(reason, c.want) {
			t.Errorf("clients %v: reason %q, want it to end %q", c.clients, reason, c.want)
		}
	}
}

// metaServer serves over streamable HTTP one tool whose _meta holds every
// anthropic/* key Claude Code reads, a vendor key of another kind, and
// alwaysLoad false.
func metaServer(t testing.TB) (string, map[string]any) {
	t.Helper()
	meta := map[string]any{
		"anthropic/maxResultSizeChars":      float64(120000),
		"anthropic/searchHint":              "quarterly revenue report",
		"anthropic/requiresUserInteraction": true,
		"anthropic/reportsUploads":          map[string]any{"maxBytes": float64(1024)},
		"anthropic/alwaysLoad":              false,
		"com.example/owner":                 "finance",
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "ledger", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "export_ledger", Description: "Export the ledger of a quarter as CSV.", Meta: meta,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"quarter":{"type":"string"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "q,amount"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "close_books", Description: "Close the books of a quarter.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	return serveHTTP(t, h).URL, meta
}

// TestToolMetaThroughEveryExposure checks the _meta of upstream tools on
// the way to the client: every anthropic/* key and any other key pass
// through untouched in full exposure (alwaysLoad false included: the
// client defers the tool), and in dynamic exposure a tool that joins the
// list after a search carries anthropic/alwaysLoad true, so that a
// client with its own tool search does not defer it again, with its
// other keys untouched.
func TestToolMetaThroughEveryExposure(t *testing.T) {
	t.Parallel()
	url, meta := metaServer(t)
	g := startGateway(t, writeConfig(t, map[string]any{"ledger": map[string]any{"type": "http", "url": url}}, nil))
	waitState(t, g, "ledger", 20*time.Second, StateReady)
	loaded := map[string]any{}
	for k, v := range meta {
		loaded[k] = v
	}
	loaded["anthropic/alwaysLoad"] = true
	cases := []struct {
		mode   string
		search bool
		want   map[string]any // export_ledger's _meta in the list
		other  map[string]any // close_books's (no _meta upstream)
	}{
		{config.ExposureFull, false, meta, nil},
		{config.ExposureDynamic, true, loaded, map[string]any{"anthropic/alwaysLoad": true}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			cs := connectAs(t, g, c.mode, "test-client", nil)
			if c.search {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "select:export_ledger,close_books"}})
				if err != nil || res.IsError {
					t.Fatalf("search: %v %v", err, res)
				}
			}
			tools := listByName(t, cs)
			for name, want := range map[string]map[string]any{"export_ledger": c.want, "close_books": c.other} {
				tool, ok := tools[name]
				if !ok {
					t.Fatalf("%s not listed: %v", name, slices.Sorted(mapsKeys(tools)))
				}
				got := map[string]any(tool.Meta)
				if len(got) == 0 && len(want) == 0 {
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s _meta = %v, want %v", name, got, want)
				}
			}
			if m := tools[searchToolName]; c.search && (m == nil || m.Meta["anthropic/alwaysLoad"] != true) {
				t.Errorf("search_tools lacks alwaysLoad: %v", m)
			}
		})
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// line returns the first log line holding s.
func (b *lockedBuffer) line(s string) string {
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestClientNameGrantsNothing checks that a client calling itself
// claude-code, which auto gives full exposure, sees and calls no tool that
// policy denies: the self-reported name changes the shape of the list,
// never what is allowed.
func TestClientNameGrantsNothing(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
		map[string]any{"threshold": 1, "contextWindow": 100000, "policy": map[string]any{"deny": []string{"echo/delete_*"}}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	cs := connectAs(t, g, config.ExposureAuto, "claude-code", nil)
	tools := listByName(t, cs)
	if _, ok := tools["deploy"]; !ok {
		t.Fatalf("claude-code did not get full exposure: %v", slices.Sorted(mapsKeys(tools)))
	}
	for name := range tools {
		if strings.Contains(name, "delete_everything") {
			t.Errorf("a denied tool is listed: %s", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"delete_everything", "echo__delete_everything", "mcp__echo__delete_everything"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Errorf("calling %s succeeded: %v", name, res.Content)
		}
		if err == nil {
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "DELETED") {
					t.Errorf("calling %s reached the tool", name)
				}
			}
		}
	}
}
