package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
)

// client is a Go SDK client session with what it was told.
type client struct {
	cs       *mcp.ClientSession
	changed  atomic.Int32
	mu       sync.Mutex
	progress []string
	logs     []string
}

func newClient(elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.Client, *client) {
	c := &client{}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed.Add(1) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params.Message)
			c.mu.Unlock()
		},
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, r.Params.Logger+": "+toString(r.Params.Data))
			c.mu.Unlock()
		},
		ElicitationHandler: elicit,
	}
	return mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts), c
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// connectHTTP connects a Go SDK client to url over streamable HTTP.
func connectHTTP(t testing.TB, url string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *client {
	t.Helper()
	cl, c := newClient(elicit)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, legacySession)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	c.cs = cs
	t.Cleanup(func() { closeSession(t, cs) })
	return c
}

// closeSession closes a client session within bounds (the SDK's Close
// waits for the messages in flight).
func closeSession(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	bounded(t, "closing a client session", 15*time.Second, func() { _ = cs.Close() })
}

// connectStdio spawns the gateway (the test binary in role gateway-stdio)
// and connects a Go SDK client to it over stdio.
func connectStdio(t testing.TB, cfgPath, mode string) *client {
	t.Helper()
	cmd := exec.Command(self(t))
	cmd.Env = append(os.Environ(), roleEnv+"=gateway-stdio", "TOOLSEARCH_TEST_CONFIG="+cfgPath, "TOOLSEARCH_TEST_MODE="+mode)
	cmd.Stderr = os.Stderr
	cl, c := newClient(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, legacySession)
	if err != nil {
		t.Fatalf("connect over stdio: %v", err)
	}
	c.cs = cs
	t.Cleanup(func() { closeSession(t, cs) })
	return c
}

func (c *client) toolNames(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// call calls a tool and returns its text and whether it is an error.
func (c *client) call(t testing.TB, name string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// search calls search_tools and returns the names found.
func (c *client) search(t testing.TB, query string) []string {
	t.Helper()
	text, isErr := c.call(t, searchToolName, map[string]any{"query": query})
	if isErr {
		t.Fatalf("search %q: %s", query, text)
	}
	var out searchOutput
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("search %q: %v in %s", query, err, text)
	}
	var names []string
	for _, h := range append(out.Tools, out.More...) {
		names = append(names, h.Name)
	}
	return names
}

func waitFor(t testing.TB, what string, timeout time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// realServers is a config of the three npm servers and the Go echo server.
func realServers(t testing.TB) map[string]any {
	fsDir := t.TempDir()
	return map[string]any{
		"everything": map[string]any{"command": npmBin(t, "mcp-server-everything")},
		"memory": map[string]any{"command": npmBin(t, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"filesystem": map[string]any{"command": npmBin(t, "mcp-server-filesystem"), "args": []string{fsDir}, "keywords": []string{"disk"}},
		"echo":       roleServer(t, "echo"),
	}
}

// TestRealServersEveryModeOverHTTP drives list → search → call through one
// gateway in front of the npm servers, in every exposure mode.
func TestRealServersEveryModeOverHTTP(t *testing.T) {
	t.Parallel()
	servers := realServers(t)
	g := startGateway(t, writeConfig(t, servers, map[string]any{"limits": map[string]any{"startTimeout": "60s"}}))
	for k := range servers {
		waitState(t, g, k, 60*time.Second, StateReady)
	}
	srv := serveHTTP(t, g.Handler(""))
	fsDir := servers["filesystem"].(map[string]any)["args"].([]string)[0]

	t.Run("full", func(t *testing.T) {
		t.Parallel()
		c := connectHTTP(t, srv.URL+"/mcp/full", nil)
		names := c.toolNames(t)
		for _, want := range []string{"everything__echo", "memory__create_entities", "filesystem__read_text_file", "echo__echo"} {
			if !slices.Contains(names, want) {
				t.Errorf("full list lacks %s (%d tools)", want, len(names))
			}
		}
		if slices.Contains(names, searchToolName) {
			t.Error("full mode lists search_tools")
		}
		if text, isErr := c.call(t, "everything__echo", map[string]any{"message": "hi"}); isErr || !strings.Contains(text, "hi") {
			t.Errorf("everything__echo = %q, %v", text, isErr)
		}
	})
	t.Run("search", func(t *testing.T) {
		t.Parallel()
		c := connectHTTP(t, srv.URL+"/mcp/search", nil)
		names := c.toolNames(t)
		// Built-in tools marked always-load may be listed too.
		names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, "builtin__") })
		if !slices.Equal(names, []string{callToolName, searchToolName}) {
			t.Fatalf("search mode lists %v", names)
		}
		if hits := c.search(t, "add two numbers sum"); !slices.Contains(hits, "everything__get-sum") {
			t.Errorf("search for a sum found %v", hits)
		}
		text, isErr := c.call(t, callToolName, map[string]any{"name": "everything__get-sum", "arguments": map[string]any{"a": 2, "b": 3}})
		if isErr || !strings.Contains(text, "5") {
			t.Errorf("get-sum = %q, %v", text, isErr)
		}
		// The call tool validates arguments before calling.
		text, isErr = c.call(t, callToolName, map[string]any{"name": "everything__get-sum", "arguments": map[string]any{"a": "two"}})
		if !isErr || !strings.Contains(text, "input schema") {
			t.Errorf("bad arguments = %q, %v", text, isErr)
		}
		// filesystem: write then read through the gateway.
		if hits := c.search(t, "write a file to disk"); !slices.Contains(hits, "filesystem__write_file") {
			t.Errorf("search for writing a file found %v", hits)
		}
		p := filepath.Join(fsDir, "note.txt")
		if text, isErr := c.call(t, callToolName, map[string]any{"name": "filesystem__write_file", "arguments": map[string]any{"path": p, "content": "gateway was here"}}); isErr {
			t.Fatalf("write_file: %s", text)
		}
		if text, _ := c.call(t, callToolName, map[string]any{"name": "filesystem/read_text_file", "arguments": map[string]any{"path": p}}); !strings.Contains(text, "gateway was here") {
			t.Errorf("read_text_file = %q", text)
		}
	})
	t.Run("dynamic", func(t *testing.T) {
		t.Parallel()
		c := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
		before := c.toolNames(t)
		hits := c.search(t, "select:memory__create_entities,memory__read_graph")
		if !slices.Equal(hits, []string{"memory__create_entities", "memory__read_graph"}) {
			t.Fatalf("select found %v", hits)
		}
		waitFor(t, "tools/list_changed", 10*time.Second, func() bool { return c.changed.Load() > 0 })
		after := c.toolNames(t)
		if !slices.Contains(after, "memory__create_entities") || len(after) != len(before)+2 {
			t.Fatalf("after search the list is %v (before %v)", after, before)
		}
		ents := map[string]any{"entities": []any{map[string]any{"name": "toolsearch", "entityType": "project", "observations": []string{"a gateway"}}}}
		if text, isErr := c.call(t, "memory__create_entities", ents); isErr {
			t.Fatalf("create_entities: %s", text)
		}
		if text, _ := c.call(t, callToolName, map[string]any{"name": "mcp__memory__read_graph"}); !strings.Contains(text, "a gateway") {
			t.Errorf("read_graph = %q", text)
		}
	})
	t.Run("auto", func(t *testing.T) {
		t.Parallel()
		mode, reason := g.Exposure()
		c := connectHTTP(t, srv.URL+"/mcp", nil)
		names := c.toolNames(t)
		if mode != "full" || !slices.Contains(names, "echo__echo") {
			t.Errorf("auto picked %s (%s); list %v", mode, reason, names)
		}
	})
}

// TestStdioEveryMode spawns the gateway over stdio in each mode.
func TestStdioEveryMode(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, map[string]any{
		"memory": map[string]any{"command": npmBin(t, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.jsonl")}},
		"echo": roleServer(t, "echo"),
	}, map[string]any{"stateDir": t.TempDir()})
	for _, mode := range []string{"full", "search", "dynamic", "auto"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := connectStdio(t, cfg, mode)
			// The first search may come before the upstreams are ready;
			// the search result says which are still starting.
			waitFor(t, "echo's tools", 30*time.Second, func() bool {
				if mode == "full" || mode == "auto" {
					return slices.Contains(c.toolNames(t), "echo__echo")
				}
				return slices.Contains(c.search(t, "echo the text back"), "echo__echo")
			})
			name, args := "echo__echo", any(map[string]any{"text": "over stdio"})
			if mode == "search" || mode == "dynamic" {
				name, args = callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "over stdio"}}
			}
			if text, isErr := c.call(t, name, args); isErr || text != "over stdio" {
				t.Errorf("%s: echo = %q, %v", mode, text, isErr)
			}
			if mode == "dynamic" {
				waitFor(t, "echo__echo in the dynamic list", 10*time.Second, func() bool { return slices.Contains(c.toolNames(t), "echo__echo") })
			}
		})
	}
}

// TestFaults: a server that never answers initialize, one that prints
// garbage on stdout, one that exits at once, one killed mid-call. The
// gateway stays up, reports each plainly, and the others keep working.
// Only the two servers that never answer have a short start timeout: the
// others start within the default, however busy the machine.
func TestFaults(t *testing.T) {
	t.Parallel()
	hang, garbage := roleServer(t, "hang"), roleServer(t, "garbage-only")
	hang["startTimeout"], garbage["startTimeout"] = "1500ms", "1500ms"
	servers := map[string]any{
		"echo":    roleServer(t, "echo"),
		"hang":    hang,
		"chatty":  roleServer(t, "garbage"),
		"garbage": garbage,
		"exits":   roleServer(t, "exit"),
	}
	g := startGateway(t, writeConfig(t, servers, map[string]any{"limits": map[string]any{"maxRestarts": 1}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("search"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)

	st := waitState(t, g, "exits", 10*time.Second, StateFailed)
	if !strings.Contains(st.Error, "API_TOKEN is not set") || !strings.Contains(st.Error, "exit") {
		t.Errorf("exits: %q", st.Error)
	}
	st = waitState(t, g, "hang", 10*time.Second, StateFailed)
	if !strings.Contains(st.Error, "did not answer initialize within 1.5s") {
		t.Errorf("hang: %q", st.Error)
	}
	st = waitState(t, g, "garbage", 10*time.Second, StateFailed)
	if !strings.Contains(st.Error, "not JSON-RPC") {
		t.Errorf("garbage: %q", st.Error)
	}
	waitState(t, g, "chatty", 10*time.Second, StateReady)
	if text, isErr := c.call(t, callToolName, map[string]any{"name": "chatty__echo", "arguments": map[string]any{"text": "ok"}}); isErr || text != "ok" {
		t.Errorf("chatty echo = %q", text)
	}
	// A call to a failed server is a plain tool error, not a hang.
	text, isErr := c.call(t, callToolName, map[string]any{"name": "exits__anything"})
	if !isErr {
		t.Errorf("call to a failed server: %q", text)
	}
	// Killed mid-call: the call in flight fails at once.
	start := time.Now()
	text, isErr = c.call(t, callToolName, map[string]any{"name": "echo__crash"})
	if !isErr || !strings.Contains(text, "stopped while the call") || time.Since(start) > 5*time.Second {
		t.Errorf("crash mid-call = %q, %v after %v", text, isErr, time.Since(start))
	}
	if !strings.Contains(text, "dying mid-call") {
		t.Errorf("crash error lacks the stderr tail: %q", text)
	}
	// ... and the server is restarted.
	waitState(t, g, "echo", 20*time.Second, StateReady)
	text, isErr = c.call(t, callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "back"}})
	if isErr || text != "back" {
		t.Errorf("after restart echo = %q, %v", text, isErr)
	}
	// /healthz shows the states.
	resp, err := httpGet(t, srv.URL+"/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"name": "hang"`, `"state": "failed"`, `"state": "ready"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/healthz lacks %s: %s", want, body)
		}
	}
}

// TestListChanged: a server adds a tool at run time; the client is told and
// search finds the new tool (under its bare name: the server is the only
// one).
func TestListChanged(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	dyn := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
	if hits := dyn.search(t, "frobnicate widgets"); slices.Contains(hits, "frobnicate") {
		t.Fatal("found the tool before it exists")
	}
	before := g.Snapshot().Version()
	if text, isErr := full.call(t, "grow", map[string]any{"name": "frobnicate"}); isErr {
		t.Fatal(text)
	}
	waitFor(t, "the new tool in the full list", 10*time.Second, func() bool {
		return full.changed.Load() > 0 && slices.Contains(full.toolNames(t), "frobnicate")
	})
	if g.Snapshot().Version() <= before {
		t.Error("no new snapshot")
	}
	if hits := dyn.search(t, "frobnicate widgets"); len(hits) == 0 || hits[0] != "frobnicate" {
		t.Errorf("search after list_changed found %v", hits)
	}
	if text, _ := dyn.call(t, "frobnicate", map[string]any{"widget": "w"}); text != "frobnicated" {
		t.Errorf("new tool = %q", text)
	}
}

// TestPolicy: a denied tool is invisible to every query form and every call
// path; an ask rule uses elicitation or refuses. The server is the only one,
// so its tools keep their bare names: the per-server glob (delete_*) and
// the global one (echo/deploy) apply to them all the same.
func TestPolicy(t *testing.T) {
	t.Parallel()
	echo := roleServer(t, "echo")
	echo["deny"] = []string{"delete_*"}
	g := startGateway(t, writeConfig(t, map[string]any{"echo": echo}, map[string]any{"policy": map[string]any{"ask": []string{"echo/deploy"}}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	if names := full.toolNames(t); slices.Contains(names, "delete_everything") || !slices.Contains(names, "echo") {
		t.Fatalf("full list %v", names)
	}
	c := connectHTTP(t, srv.URL+"/mcp/search", nil)
	for _, q := range []string{"select:echo__delete_everything", "select:delete_everything", "delete_everything", "echo__delete_everything",
		"echo/delete_everything", "mcp__echo__delete_everything", "delete every record", "delete.*", "echo", "dangerous"} {
		if hits := c.search(t, q); slices.Contains(hits, "delete_everything") {
			t.Errorf("query %q found the denied tool", q)
		}
	}
	for _, name := range []string{"echo__delete_everything", "echo/delete_everything", "delete_everything", "mcp__echo__delete_everything"} {
		text, isErr := c.call(t, callToolName, map[string]any{"name": name})
		if !isErr || strings.Contains(text, "DELETED") {
			t.Errorf("call_tool %s = %q", name, text)
		}
	}
	if text, isErr := full.call(t, "delete_everything", nil); !isErr || strings.Contains(text, "DELETED") {
		t.Errorf("native call of a denied tool = %q", text)
	}
	// Ask: no elicitation support → refused with the reason.
	text, isErr := c.call(t, callToolName, map[string]any{"name": "deploy"})
	if !isErr || !strings.Contains(text, "approval") || !strings.Contains(text, "elicitation") {
		t.Errorf("ask without elicitation = %q", text)
	}
	// Ask with elicitation: yes, then no.
	var answer atomic.Bool
	asker := connectHTTP(t, srv.URL+"/mcp/search", func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if !strings.Contains(r.Params.Message, "call to deploy?") {
			t.Errorf("elicitation message %q", r.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": answer.Load()}}, nil
	})
	answer.Store(true)
	if text, isErr := asker.call(t, callToolName, map[string]any{"name": "deploy"}); isErr || text != "deployed" {
		t.Errorf("approved deploy = %q", text)
	}
	answer.Store(false)
	if text, isErr := asker.call(t, callToolName, map[string]any{"name": "echo__deploy"}); !isErr || !strings.Contains(text, "did not allow") {
		t.Errorf("declined deploy = %q", text)
	}
}

// TestCacheAndLazy: manifests are cached; a second gateway answers from the
// cache at once, under the same (bare) names, and starts a lazy server at
// its first call.
func TestCacheAndLazy(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	echo := roleServer(t, "echo")
	cfg := writeConfig(t, map[string]any{"echo": echo}, map[string]any{"stateDir": state})
	{
		cfg, err := loadCfg(t, cfg)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		g.Start(ctx)
		waitState(t, g, "echo", 20*time.Second, StateReady)
		stopGateway(t, g, cancel)
	}
	if _, err := os.Stat(filepath.Join(state, "manifests", "echo.json")); err != nil {
		t.Fatal(err)
	}
	echo["lazy"] = true
	g := startGateway(t, writeConfig(t, map[string]any{"echo": echo}, map[string]any{"stateDir": state}))
	st := waitState(t, g, "echo", 5*time.Second, StateIdle)
	if !st.FromCache || st.Tools == 0 {
		t.Fatalf("status %+v", st)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	res, err := g.Search(sctx, "echo text back", 3)
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Tool.Name != "echo" {
		t.Fatalf("search from cache: %v %v", res.Hits, err)
	}
	srv := serveHTTP(t, g.Handler("search"))
	// The only server keeps its bare names, from the cache as live: the
	// full list names it echo before the server has started, and select:
	// finds it by that name.
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	if names := full.toolNames(t); !slices.Contains(names, "echo") || slices.Contains(names, "echo__echo") {
		t.Errorf("the full list from the cache: %v", names)
	}
	c := connectHTTP(t, srv.URL+"/mcp", nil)
	if hits := c.search(t, "select:echo"); !slices.Equal(hits, []string{"echo"}) {
		t.Errorf("select:echo from the cache = %v", hits)
	}
	if st := g.ups()["echo"].Status(); st.State != StateIdle {
		t.Fatalf("the lazy server started before any call: %s", st.State)
	}
	if text, isErr := c.call(t, callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "lazy"}}); isErr || text != "lazy" {
		t.Fatalf("lazy call = %q", text)
	}
	waitState(t, g, "echo", 5*time.Second, StateReady)
	if text, isErr := full.call(t, "echo", map[string]any{"text": "bare"}); isErr || text != "bare" {
		t.Errorf("native call by the bare name = %q", text)
	}
}

// TestResourcesPromptsProgressLogs: aggregation and pass-through.
func TestResourcesPromptsProgressLogs(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo"), "echo2": roleServer(t, "echo")}, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	waitState(t, g, "echo2", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/full", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var uris []string
	for r, err := range c.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	// Both servers have echo://readme: the names cannot collide.
	if len(uris) != 2 || uris[0] == uris[1] {
		t.Fatalf("resources %v", uris)
	}
	for _, u := range uris {
		rr, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: u})
		if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text != "echo readme" {
			t.Errorf("read %s: %v %v", u, rr, err)
		}
	}
	pr, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "echo2__greet", Arguments: map[string]string{"who": "bob"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello bob" {
		t.Errorf("prompt: %v %v", pr, err)
	}
	// Progress passes through.
	p := &mcp.CallToolParams{Name: "echo__slow", Arguments: map[string]any{"millis": 200}}
	p.SetProgressToken("tok-1")
	if _, err := c.cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "progress", 5*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.progress) == 4 && c.progress[3] == "step 4"
	})
	// Cancellation passes through: the upstream sees it.
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, _ = c.cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo__slow", Arguments: map[string]any{"millis": 8000}})
	ccancel()
	if time.Since(start) > 3*time.Second {
		t.Errorf("cancelled call took %v", time.Since(start))
	}
	waitFor(t, "the upstream to see the cancellation", 5*time.Second, func() bool {
		return strings.Contains(g.ups()["echo"].Stderr().String(), "slow: cancelled")
	})
	// Logging passes through once the client sets a level.
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "echo's log message", 10*time.Second, func() bool {
		c.call(t, "echo__echo", map[string]any{"text": "logged"})
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Contains(c.logs, "echo: echo: logged")
	})
}

// TestMetricsAndDemo: /metrics counts searches and calls; a static catalog
// (the demo's, passed by the caller) is searchable and calls say no server
// is configured.
func TestMetricsAndDemo(t *testing.T) {
	t.Parallel()
	g, err := New(nil, Options{Static: demo.Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, g.Handler("search"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)
	hits := c.search(t, "create a pull request")
	if len(hits) == 0 {
		t.Fatal("demo search found nothing")
	}
	text, isErr := c.call(t, callToolName, map[string]any{"name": hits[0]})
	if !isErr || !strings.Contains(text, "no server is configured") {
		t.Errorf("demo call = %q", text)
	}
	resp, err := httpGet(t, srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"toolsearch_searches_total 1", "toolsearch_search_hits_total", `outcome="not_configured"`, "toolsearch_tokens_held_back", "toolsearch_search_seconds_bucket"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// httpGet fetches url within bounds.
func httpGet(t testing.TB, url string) (*http.Response, error) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	return client.Get(url)
}

func loadCfg(t testing.TB, path string) (*configT, error) {
	t.Helper()
	return loadConfigFile(path)
}
