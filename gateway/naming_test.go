package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// logBuffer collects a gateway's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newGatewayLogged makes a gateway (not started) whose log goes to a buffer.
func newGatewayLogged(t *testing.T, servers map[string]any, gw map[string]any) (*Gateway, *logBuffer) {
	t.Helper()
	cfg, err := config.Load(writeConfig(t, servers, gw))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return g, logs
}

// viewOf makes a view of servers given as key → tool names, with prompts.
func viewOf(t *testing.T, tools map[string][]string, prompts map[string][]string) *view {
	t.Helper()
	var servers []*catalog.Server
	v := &view{extras: map[string]*upstream.Manifest{}}
	for _, k := range sortedKeys(tools) {
		var raws []json.RawMessage
		for _, n := range tools[k] {
			raws = append(raws, json.RawMessage(`{"name":"`+n+`","inputSchema":{"type":"object"}}`))
		}
		srv, err := catalog.NewServer(k, raws, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, srv)
		m := &upstream.Manifest{Key: k}
		for _, p := range prompts[k] {
			m.Prompts = append(m.Prompts, &mcp.Prompt{Name: p})
		}
		v.extras[k] = m
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	v.snap = snap
	return v
}

// TestNameView: bare names are granted unless they collide — with another
// server's bare name, with any tool's server__tool, with the gateway's own
// tools — and each refusal is logged once; names route back to their tool.
func TestNameView(t *testing.T) {
	t.Parallel()
	cmd := map[string]any{"command": "unused"}
	with := func(naming string, extra ...string) map[string]any {
		m := map[string]any{"command": "unused", "naming": naming}
		if len(extra) > 0 {
			m["deny"] = extra
		}
		return m
	}
	g, logs := newGatewayLogged(t, map[string]any{"a": with("bare"), "b": with("bare"), "c": with("prefixed"), "d": cmd}, nil)
	v := viewOf(t, map[string][]string{
		"a": {"echo", "search_tools", "c__x", "only_a"},
		"b": {"echo", "only_b"},
		"c": {"x", "only_a"},
		"d": {"y"},
	}, map[string][]string{"a": {"p", "q"}, "b": {"p"}, "c": {"q"}})
	v = screened(t, g, v) // as servers join the catalog: a's c__x is refused
	g.nameView(v)
	g.nameView(v) // a second view: the collisions are not logged again
	g.cur.Store(v)
	want := map[string]string{
		"a/echo": "a__echo", "b/echo": "b__echo", // two bare servers have it
		"a/search_tools": "a__search_tools", // the gateway's own tool
		"a/only_a":       "only_a", "b/only_b": "only_b",
		"c/x": "c__x", "c/only_a": "c__only_a", // prefixed by configuration
		"d/y": "d__y", // auto, with four servers
	}
	for id, name := range want {
		tool, ok := v.snap.Tool(id)
		if !ok {
			t.Fatalf("no tool %s", id)
		}
		if got := v.names.toolName(tool); got != name {
			t.Errorf("%s is exposed as %q, want %q", id, got, name)
		}
		if r, err := resolveTool(g, name); err != nil || r != tool {
			t.Errorf("resolve(%q) = %v, %v; want %s", name, r, err, id)
		}
	}
	// a's tool c__x is a qualified name of server c: it is refused, in
	// every form, and the log says so once.
	for _, name := range []string{"a__c__x", "c__x", "mcp__a__c__x", "a/c__x"} {
		if r, err := resolveTool(g, name); err == nil && r.Server == "a" {
			t.Errorf("resolve(%q) = a/c__x, a tool refused for impersonating server c", name)
		}
	}
	if n := strings.Count(logs.String(), "refusing a tool whose name is a qualified name of another server"); n != 1 {
		t.Errorf("the refusal of a/c__x is logged %d times, want once:\n%s", n, logs.String())
	}
	if _, err := resolveTool(g, "echo"); err == nil || !strings.Contains(err.Error(), "a__echo") || !strings.Contains(err.Error(), "b__echo") {
		t.Errorf("resolve(echo) = %v, want an ambiguity naming a__echo and b__echo", err)
	}
	for _, tc := range []struct{ server, prompt, want string }{
		{"a", "p", "a__p"}, {"b", "p", "b__p"}, {"a", "q", "q"}, {"c", "q", "c__q"},
	} {
		if got := v.names.promptName(tc.server, tc.prompt); got != tc.want {
			t.Errorf("prompt %s/%s is exposed as %q, want %q", tc.server, tc.prompt, got, tc.want)
		}
		if r := v.names.prompts[tc.want]; r.server != tc.server || r.name != tc.prompt {
			t.Errorf("prompt %q routes to %+v", tc.want, r)
		}
	}
	out := logs.String()
	for _, item := range []string{"item=a/echo", "item=b/echo", "item=a/search_tools", `item="prompt a/p"`, `item="prompt b/p"`} {
		if n := strings.Count(out, item+" "); n != 1 {
			t.Errorf("the collision of %s is logged %d times, want once; log:\n%s", item, n, out)
		}
	}
	if !strings.Contains(out, "exposing the prefixed name instead") || !strings.Contains(out, "exposed_as=a__echo") {
		t.Errorf("the log does not say what happened:\n%s", out)
	}

	// A tool hidden by policy takes no name and causes no collision.
	g2, _ := newGatewayLogged(t, map[string]any{"a": with("bare"), "b": with("bare", "echo")}, nil)
	v2 := viewOf(t, map[string][]string{"a": {"echo"}, "b": {"echo"}}, nil)
	g2.nameView(v2)
	if a, _ := v2.snap.Tool("a/echo"); v2.names.toolName(a) != "echo" {
		t.Errorf("a/echo is %q beside a denied b/echo, want echo", v2.names.toolName(a))
	}

	// A global pattern with no server part matches no tool: the log says
	// how to write it.
	_, logs5 := newGatewayLogged(t, map[string]any{"a": with("bare")}, map[string]any{"policy": map[string]any{"deny": []string{"echo", "*/x", "a/y"}}})
	if out := logs5.String(); !strings.Contains(out, "write */echo") || strings.Contains(out, "*/x or") || strings.Contains(out, "a/y or") {
		t.Errorf("warnings about global patterns:\n%s", out)
	}

	// Auto: bare for the only enabled server; a disabled one does not count.
	g3, _ := newGatewayLogged(t, map[string]any{"solo": cmd, "off": map[string]any{"command": "x", "disabled": true}}, nil)
	if !g3.wantsBare("solo") {
		t.Error("the only enabled server (naming auto) does not keep bare names")
	}
	g4, _ := newGatewayLogged(t, map[string]any{"solo": with("prefixed")}, nil)
	if g4.wantsBare("solo") {
		t.Error("a server configured prefixed keeps bare names")
	}
}

// TestNamingThroughTheGateway: with real servers — server-everything and
// the Go echo server configured bare, server-memory left to auto (so
// prefixed: there are three) — every path names a tool the same way:
// the full list, search in every query form, native calls, call_tool,
// dynamic loading, prompts and resources; the one tool name the two bare
// servers share falls back to server__tool, and the log says so.
func TestNamingThroughTheGateway(t *testing.T) {
	t.Parallel()
	everything := map[string]any{"command": npmBin(t, "mcp-server-everything"), "naming": "bare"}
	echo := roleServer(t, "echo")
	echo["naming"] = "bare"
	memory := map[string]any{"command": npmBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}}
	g, logs := newGatewayLogged(t, map[string]any{"everything": everything, "echo": echo, "memory": memory},
		map[string]any{"limits": map[string]any{"startTimeout": "60s"}, "builtins": map[string]any{"lsp": false, "roots": []string{t.TempDir()}}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	for _, k := range []string{"everything", "echo", "memory"} {
		waitState(t, g, k, 60*time.Second, StateReady)
	}
	srv := serveHTTP(t, g.Handler(""))

	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	names := full.toolNames(t)
	for _, want := range []string{"everything__echo", "echo__echo", "deploy", "get-sum", "memory__create_entities", "builtin__glob"} {
		if !slices.Contains(names, want) {
			t.Errorf("the full list lacks %s: %v", want, names)
		}
	}
	for _, absent := range []string{"echo", "echo__deploy", "everything__get-sum", "create_entities"} {
		if slices.Contains(names, absent) {
			t.Errorf("the full list has %s: %v", absent, names)
		}
	}
	if out := logs.String(); !strings.Contains(out, "exposed_as=everything__echo") || !strings.Contains(out, "exposed_as=echo__echo") {
		t.Errorf("the collision of echo is not logged:\n%s", out)
	}
	if text, isErr := full.call(t, "deploy", nil); isErr || text != "deployed" {
		t.Errorf("deploy = %q", text)
	}
	if text, isErr := full.call(t, "get-sum", map[string]any{"a": 2, "b": 3}); isErr || !strings.Contains(text, "5") {
		t.Errorf("get-sum = %q", text)
	}
	if text, isErr := full.call(t, "everything__echo", map[string]any{"message": "hi"}); isErr || !strings.Contains(text, "hi") {
		t.Errorf("everything__echo = %q", text)
	}
	if text, isErr := full.call(t, "echo__echo", map[string]any{"text": "ho"}); isErr || text != "ho" {
		t.Errorf("echo__echo = %q", text)
	}

	search := connectHTTP(t, srv.URL+"/mcp/search", nil)
	for q, want := range map[string][]string{
		"select:deploy,memory__read_graph":   {"deploy", "memory__read_graph"},
		"select:echo/deploy,everything/echo": {"deploy", "everything__echo"},
		"deploy":                             {"deploy"},
		"echo__deploy":                       {"deploy"},
	} {
		if hits := search.search(t, q); len(hits) < len(want) || !slices.Equal(hits[:len(want)], want) {
			t.Errorf("search %q = %v, want %v first", q, hits, want)
		}
	}
	for _, name := range []string{"deploy", "echo__deploy", "echo/deploy", "mcp__echo__deploy"} {
		if text, isErr := search.call(t, callToolName, map[string]any{"name": name}); isErr || text != "deployed" {
			t.Errorf("call_tool %s = %q", name, text)
		}
	}
	if text, isErr := search.call(t, callToolName, map[string]any{"name": "echo"}); !isErr || !strings.Contains(text, "everything__echo") || !strings.Contains(text, "echo__echo") {
		t.Errorf("call_tool echo = %q, want an ambiguity naming both", text)
	}

	dyn := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
	dyn.search(t, "select:deploy")
	waitFor(t, "deploy in the dynamic list", 10*time.Second, func() bool { return slices.Contains(dyn.toolNames(t), "deploy") })
	if text, isErr := dyn.call(t, "deploy", nil); isErr || text != "deployed" {
		t.Errorf("dynamic deploy = %q", text)
	}

	// Prompts and resources of a bare server keep their names.
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	var prompts []string
	for p, err := range full.cs.Prompts(pctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "greet") || slices.Contains(prompts, "echo__greet") {
		t.Errorf("prompts %v, want greet", prompts)
	}
	if res, err := full.cs.GetPrompt(pctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "bare"}}); err != nil ||
		len(res.Messages) == 0 || res.Messages[0].Content.(*mcp.TextContent).Text != "hello bare" {
		t.Errorf("greet: %v %v", res, err)
	}
	for r, err := range full.cs.Resources(pctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if r.URI == "echo://readme" && r.Name != "readme" {
			t.Errorf("echo://readme is named %q, want readme", r.Name)
		}
	}
}

// TestServerParts: the parts of a name that would name a server, in each
// qualified spelling the search takes apart.
func TestServerParts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want []string
	}{
		{"memory__delete", []string{"memory"}},
		{"memory/delete", []string{"memory"}},
		{"mcp__memory__delete", []string{"memory", "mcp"}},
		{"a/b__c", []string{"a", "a/b"}},
		{"plain_name", nil},
		{"", nil},
	} {
		if got := serverParts(c.name); !slices.Equal(got, c.want) {
			t.Errorf("serverParts(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// resolveTool resolves name in g's current view, to its tool.
func resolveTool(g *Gateway, name string) (*catalog.Tool, error) {
	tg, err := g.cur.Load().names.Resolve(name)
	return tg.tool, err
}
