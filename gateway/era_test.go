package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// The two eras the tests pin the Go SDK's client to.
const (
	era2026 = "2026-07-28"
	era2025 = "2025-11-25"
)

// legacySession pins a Go SDK client to the session era. The SDK's client
// speaks 2026-07-28 unless told otherwise; the tests of sessions (dynamic
// exposure, requests relayed to the client, session caps) use this.
var legacySession = &mcp.ClientSessionOptions{ProtocolVersion: era2025}

func TestAggregateCache(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		hints   []cacheHint
		private bool
		want    mcp.Cacheable
	}{
		{"no upstream said anything", nil, false, mcp.Cacheable{TTLMs: 0, CacheScope: "public"}},
		{"one ttl", []cacheHint{{TTLMs: 5000, Scope: "public"}}, false, mcp.Cacheable{TTLMs: 5000, CacheScope: "public"}},
		{"smallest non-zero ttl", []cacheHint{{TTLMs: 60000}, {TTLMs: 0}, {TTLMs: 30000}, {TTLMs: 90000}}, false, mcp.Cacheable{TTLMs: 30000, CacheScope: "public"}},
		{"negative ttl is none", []cacheHint{{TTLMs: -5}, {TTLMs: 7000}}, false, mcp.Cacheable{TTLMs: 7000, CacheScope: "public"}},
		{"one private upstream", []cacheHint{{TTLMs: 1000, Scope: "public"}, {TTLMs: 2000, Scope: "private"}}, false, mcp.Cacheable{TTLMs: 1000, CacheScope: "private"}},
		{"an unknown scope is private", []cacheHint{{TTLMs: 1000, Scope: "everyone"}}, false, mcp.Cacheable{TTLMs: 1000, CacheScope: "private"}},
		{"policy makes it private", []cacheHint{{TTLMs: 1000, Scope: "public"}}, true, mcp.Cacheable{TTLMs: 1000, CacheScope: "private"}},
		{"a stale upstream makes it stale", []cacheHint{{TTLMs: 1000}, {TTLMs: 9000, Stale: true}}, false, mcp.Cacheable{TTLMs: 0, CacheScope: "public"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := aggregateCache(c.hints, c.private); got != c.want {
				t.Errorf("aggregateCache(%+v, %v) = %+v, want %+v", c.hints, c.private, got, c.want)
			}
		})
	}
}

func TestCacheHintsStaleUntilRelisted(t *testing.T) {
	t.Parallel()
	g := &Gateway{}
	g.setServers(map[string]*upstream.Server{"a": {}, "b": {}, "c": {}})
	now := time.Now()
	// Two pages of a's tools, 8000 and 4000 public, fold to 4000 public
	// (upstream.TestCacheHintsFold).
	g.ups()["a"].SetListCache(upstream.ListTools, ListCache{TTL: 4 * time.Second, Scope: "public", ListedAt: now})
	g.ups()["b"].SetListCache(upstream.ListTools, ListCache{TTL: 6 * time.Second, Scope: "public", ListedAt: now})
	// c was never listed: it gives no hint.
	if got := aggregateCache(g.hintsFor("tools/list"), false); got != (mcp.Cacheable{TTLMs: 4000, CacheScope: "public"}) {
		t.Fatalf("two servers, one with two pages: %+v, want 4000 public", got)
	}
	g.ups()["b"].MarkStale(upstream.ListTools, upstream.ListPrompts)
	if got := aggregateCache(g.hintsFor("tools/list"), false); got.TTLMs != 0 {
		t.Fatalf("ttl after b's list_changed: %d, want 0 (stale)", got.TTLMs)
	}
	if got := aggregateCache(g.hintsFor("prompts/list"), false); got.TTLMs != 0 {
		t.Fatalf("prompts ttl after b's list_changed: %d, want 0", got.TTLMs)
	}
	g.ups()["b"].SetListCache(upstream.ListTools, ListCache{TTL: 2 * time.Second, Scope: "private", ListedAt: now})
	if got := aggregateCache(g.hintsFor("tools/list"), false); got != (mcp.Cacheable{TTLMs: 2000, CacheScope: "private"}) {
		t.Fatalf("after b was relisted: %+v, want 2000 private", got)
	}
	if got := g.hintsFor("no/such/list"); got != nil {
		t.Fatalf("hints of an unknown list: %v", got)
	}
}

// TestDynamicBecomesSearchOnce: the shared server of 2026-07-28 clients
// is never dynamic, and the gateway says why once per endpoint.
func TestDynamicBecomesSearchOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var buf bytes.Buffer
	g, err := New(nil, Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"dynamic", "dynamic", "search", "full"} {
		s := g.sharedSession(mode)
		if s != g.sharedSession(mode) {
			t.Fatalf("two shared servers for %s", mode)
		}
		want := mode
		if mode == "dynamic" {
			want = "search"
		}
		if s.mode != want {
			t.Errorf("a 2026-07-28 client asking %s gets %s, want %s", mode, s.mode, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(buf.String(), "gets search exposure instead of dynamic"); n != 1 {
		t.Fatalf("%d log lines say why dynamic became search, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "2025-11-25 sessions only") {
		t.Errorf("the log line does not say why: %s", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestPeekBody(t *testing.T) {
	t.Parallel()
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":"` + strings.Repeat("a", clientera.MaxMetaBytes) + `"}}}`
	for _, c := range []struct {
		name, body, method, version string
		bad                         bool
		client                      string
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, "initialize", "", false, ""},
		{"2026 request", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/list", "2026-07-28", false, ""},
		{"version not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`, "tools/list", "", false, ""},
		{"meta not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[1]}}`, "tools/list", "", false, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "", "", false, ""},
		{"not JSON", `hello`, "", "", false, ""},
		{"empty", ``, "", "", false, ""},
		{"oversize _meta", big, "tools/list", "", true, ""},
		{"clientInfo", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1"}}}}`, "tools/list", "2026-07-28", false, "claude-code"},
		{"clientInfo name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":["claude-code"]}}}}`, "tools/list", "2026-07-28", false, ""},
		{"clientInfo not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":"claude-code"}}}`, "tools/list", "2026-07-28", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			hb, err := peekBody([]byte(c.body))
			if (err != nil) != c.bad {
				t.Fatalf("error %v, want error: %v", err, c.bad)
			}
			if c.bad {
				if !strings.Contains(err.Error(), "_meta") {
					t.Errorf("the error does not say what was too big: %v", err)
				}
				return
			}
			if hb.method != c.method || hb.version != c.version || hb.client != c.client {
				t.Errorf("got method %q version %q client %q, want %q %q %q", hb.method, hb.version, hb.client, c.method, c.version, c.client)
			}
		})
	}
}

func FuzzPeekBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"method":"server/discover","params":{"_meta":null}}`,
		`[{"method":"x"}]`, `{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":{"a":1}}}}`, `{`, ``,
		`{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"claude-code"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := peekBody(body)
		if err == nil && hb.metaLen > clientera.MaxMetaBytes {
			t.Fatalf("a _meta of %d bytes passed", hb.metaLen)
		}
		if hb.version != "" && !json.Valid(body) {
			t.Fatalf("a version %q read from a body that is not JSON", hb.version)
		}
		// Routing reads the client's name as serving does.
		var msg struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err == nil && json.Unmarshal(body, &msg) == nil {
			if want := clientera.FromMeta(msg.Params.Meta).Name; hb.client != want {
				t.Fatalf("routing read client %q, serving reads %q", hb.client, want)
			}
		}
	})
}

// cacheUpstream serves, over streamable HTTP on loopback, a Go SDK server
// of one tool whose lists carry the given cache fields; add adds a tool
// to it (the server then sends tools/list_changed).
func cacheUpstream(t testing.TB, name string, ttl int, scope string) (url string, add func(tool string), update func(uri string)) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SetCacheable:       func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs, c.CacheScope = ttl, scope },
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	tool := func(n string) {
		s.AddTool(&mcp.Tool{Name: n, Description: "Look up the weather of a city: " + n + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny at " + name}}}, nil
			})
	}
	tool(name + "_weather")
	s.AddResource(&mcp.Resource{URI: "cache://" + name + "/doc", Name: "doc", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "doc of " + name}}}, nil
		})
	srv := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	return srv.URL, tool, func(uri string) {
		_ = s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// eraGateway starts a gateway with the echo role server, the npm memory
// server and two HTTP upstreams of different cache fields, and serves it
// over HTTP on loopback with dynamic exposure at /mcp.
type eraFixture struct {
	g       *Gateway
	base    string
	addA    func(string)
	updateA func(string)
}

func startEraGateway(t *testing.T) *eraFixture {
	t.Helper()
	urlA, addA, updateA := cacheUpstream(t, "alpha", 45000, "public")
	urlB, _, _ := cacheUpstream(t, "beta", 30000, "private")
	servers := map[string]any{
		"echo":  roleServer(t, "echo"),
		"alpha": map[string]any{"type": "http", "url": urlA},
		"beta":  map[string]any{"type": "http", "url": urlB},
	}
	if p, err := os.Stat(repoRoot(t) + "/node_modules/.bin/mcp-server-memory"); err == nil && !p.IsDir() {
		servers["memory"] = map[string]any{"command": npmBin(t, "mcp-server-memory"),
			"env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}}
	}
	g := startGateway(t, writeConfig(t, servers, map[string]any{"exposure": "dynamic",
		"http": map[string]any{"exposures": []string{"full", "search", "dynamic"}}}))
	for k := range servers {
		waitState(t, g, k, 30*time.Second, StateReady)
	}
	srv := serveHTTP(t, g.Handler(""))
	return &eraFixture{g: g, base: srv.URL, addA: addA, updateA: updateA}
}

// eraClient is a Go SDK client pinned to one protocol version.
type eraClient struct {
	cs      *mcp.ClientSession
	changed chan mcp.Meta
	updated chan *mcp.ResourceUpdatedNotificationParams
}

func connectEra(t *testing.T, tr mcp.Transport, version string) *eraClient {
	t.Helper()
	c := &eraClient{changed: make(chan mcp.Meta, 16), updated: make(chan *mcp.ResourceUpdatedNotificationParams, 16)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "era-client-" + version, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, r *mcp.ToolListChangedRequest) {
			var m mcp.Meta
			if r.Params != nil {
				m = r.Params.Meta
			}
			select {
			case c.changed <- m:
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case c.updated <- r.Params:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	c.cs = cs
	t.Cleanup(func() { closeSession(t, cs) })
	return c
}

func (c *eraClient) list(t *testing.T) []string {
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

func (c *eraClient) search(t *testing.T, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": query}})
	if err != nil {
		t.Fatalf("search_tools: %v", err)
	}
	if res.IsError {
		t.Fatalf("search_tools failed: %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// waitListed waits until the client's list has name.
func (c *eraClient) waitListed(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(c.list(t), name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never joined the list: %v", name, c.list(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post sends one raw JSON-RPC message and returns the status and the
// decoded response (from JSON or from the first SSE data line).
func post(t *testing.T, url string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	data := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
				break
			}
		}
	}
	var out map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(data), &out); err != nil {
		return resp.StatusCode, map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, out
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// modernBody is a 2026-07-28 request of method with params (a JSON object
// without _meta) and a _meta of version.
func modernBody(method, params, version string) string {
	meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`, version)
	if params == "" || params == "{}" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
}

func modernHeader(method, name, version string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": version, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func TestErasOverHTTP(t *testing.T) {
	f := startEraGateway(t)
	dynamic := f.base + "/mcp/dynamic"

	t.Run("discover", func(t *testing.T) {
		c := connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2026)
		if got := c.cs.InitializeResult().ProtocolVersion; got != era2026 {
			t.Fatalf("negotiated %s, want %s (server/discover)", got, era2026)
		}
		status, res := post(t, dynamic, modernHeader("server/discover", "", era2026), modernBody("server/discover", "", era2026))
		r, _ := res["result"].(map[string]any)
		if status != http.StatusOK || r == nil {
			t.Fatalf("server/discover: %d %v", status, res)
		}
		vs, _ := r["supportedVersions"].([]any)
		if !slices.Contains(vs, any(era2026)) || !slices.Contains(vs, any(era2025)) {
			t.Errorf("supportedVersions %v lack one of the eras", vs)
		}
	})

	t.Run("unsupported version", func(t *testing.T) {
		const made = "2031-02-30"
		status, res := post(t, dynamic, modernHeader("tools/list", "", made), modernBody("tools/list", "", made))
		if errCode(res) != int(mcp.CodeUnsupportedProtocolVersion) {
			t.Fatalf("a made-up version: %d %v, want error -32022", status, res)
		}
		data, _ := res["error"].(map[string]any)["data"].(map[string]any)
		sup, _ := data["supported"].([]any)
		if !slices.Contains(sup, any(era2026)) || !slices.Contains(sup, any(era2025)) || data["requested"] != made {
			t.Errorf("the error's data %v does not name the supported versions and the one asked", data)
		}
	})

	t.Run("two 2026 clients on dynamic see one list", func(t *testing.T) {
		a := connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2026)
		b := connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2026)
		beforeA, beforeB := a.list(t), b.list(t)
		if !slices.Equal(beforeA, beforeB) || !slices.IsSorted(beforeA) {
			t.Fatalf("two 2026 clients list %v and %v: want one sorted list", beforeA, beforeB)
		}
		if !slices.Contains(beforeA, searchToolName) {
			t.Fatalf("the list %v lacks %s", beforeA, searchToolName)
		}
		// /mcp is dynamic by configuration: the same list.
		if viaConfig := connectEra(t, &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp"}, era2026).list(t); !slices.Equal(viaConfig, beforeA) {
			t.Fatalf("/mcp (dynamic by configuration) lists %v, /mcp/dynamic %v", viaConfig, beforeA)
		}
		out := a.search(t, "select:echo__echo")
		if !strings.Contains(out, "echo__echo") || strings.Contains(out, "now in your tool list") {
			t.Fatalf("a 2026 client's search should find echo__echo and not claim to load it: %s", out)
		}
		afterA, afterB := a.list(t), b.list(t)
		if !slices.Equal(afterA, beforeA) || !slices.Equal(afterB, beforeB) {
			t.Fatalf("after a search: %v and %v, before: %v", afterA, afterB, beforeA)
		}
		// The tool found is called by name through call_tool.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "hi"}}})
		if err != nil || res.IsError {
			t.Fatalf("call_tool echo__echo: %v %v", err, res)
		}
	})

	t.Run("a 2025 session is still dynamic", func(t *testing.T) {
		c := connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2025)
		if got := c.cs.InitializeResult().ProtocolVersion; got != era2025 {
			t.Fatalf("negotiated %s, want %s", got, era2025)
		}
		if slices.Contains(c.list(t), "echo__echo") {
			t.Fatal("echo__echo listed before any search")
		}
		if out := c.search(t, "select:echo__echo"); !strings.Contains(out, "now in your tool list") {
			t.Fatalf("a dynamic search result: %s", out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(c.list(t), "echo__echo") {
			if time.Now().After(deadline) {
				t.Fatalf("echo__echo never joined the 2025 session's list: %v", c.list(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("ttlMs and cacheScope aggregated", func(t *testing.T) {
		for _, m := range []struct{ method, params, name string }{
			{"tools/list", "", ""}, {"prompts/list", "", ""}, {"resources/list", "", ""}, {"resources/templates/list", "", ""},
			{"resources/read", `{"uri":"cache://alpha/doc"}`, "cache://alpha/doc"},
		} {
			for _, path := range []string{"/mcp/full", "/mcp/search", "/mcp/dynamic"} {
				status, res := post(t, f.base+path, modernHeader(m.method, m.name, era2026), modernBody(m.method, m.params, era2026))
				r, _ := res["result"].(map[string]any)
				if status != http.StatusOK || r == nil {
					t.Fatalf("%s %s: %d %v", path, m.method, status, res)
				}
				ttl, okT := r["ttlMs"].(float64)
				scope, okS := r["cacheScope"].(string)
				if !okT || !okS {
					t.Fatalf("%s %s: no ttlMs or cacheScope in %v", path, m.method, r)
				}
				switch m.method {
				case "tools/list":
					// alpha says 45s public, beta 30s private.
					if ttl != 30000 || scope != "private" {
						t.Errorf("%s tools/list: ttlMs %v cacheScope %s, want 30000 private", path, ttl, scope)
					}
				case "resources/read":
					if ttl != 45000 || scope != "public" {
						t.Errorf("%s resources/read of alpha: ttlMs %v cacheScope %s, want alpha's 45000 public", path, ttl, scope)
					}
				}
			}
		}
		// A 2025 session's lists carry them too.
		c := connectEra(t, &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp/full"}, era2025)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.cs.ListTools(ctx, nil)
		if err != nil || res.TTLMs != 30000 || res.CacheScope != "private" {
			t.Fatalf("a 2025 session's tools/list: %v ttl %d scope %q", err, res.TTLMs, res.CacheScope)
		}
	})

	t.Run("header mismatch", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			header map[string]string
			body   string
		}{
			{"Mcp-Method", modernHeader("tools/list", "", era2026), modernBody("prompts/list", "", era2026)},
			{"Mcp-Name", modernHeader("tools/call", "search_tools", era2026), modernBody("tools/call", `{"name":"call_tool","arguments":{"name":"echo__echo"}}`, era2026)},
			{"Mcp-Protocol-Version", modernHeader("tools/list", "", era2026), modernBody("tools/list", "", "2026-12-01")},
		} {
			status, res := post(t, dynamic, c.header, c.body)
			if errCode(res) != int(mcp.CodeHeaderMismatch) || status != http.StatusBadRequest {
				t.Errorf("%s mismatch: %d %v, want 400 with -32020", c.name, status, res)
			}
		}
		// The same request with matching headers is served.
		status, res := post(t, dynamic, modernHeader("tools/list", "", era2026), modernBody("tools/list", "", era2026))
		if status != http.StatusOK || res["result"] == nil {
			t.Fatalf("matching headers: %d %v", status, res)
		}
	})

	t.Run("listen gets tools list_changed", func(t *testing.T) {
		c := connectEra(t, &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp/full"}, era2026)
		before := c.list(t)
		f.addA("alpha_forecast")
		var meta mcp.Meta
		select {
		case meta = <-c.changed:
		case <-time.After(20 * time.Second):
			t.Fatal("no tools/list_changed on the listen stream after an upstream added a tool")
		}
		if _, ok := meta[mcp.MetaKeySubscriptionID]; !ok {
			t.Errorf("the notification's _meta %v lacks the subscription id", meta)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(c.list(t), "alpha__alpha_forecast") {
			if time.Now().After(deadline) {
				t.Fatalf("the new tool never showed: before %v, now %v", before, c.list(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("listen gets resource updates", func(t *testing.T) {
		a := connectEra(t, &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp/search"}, era2026)
		b := connectEra(t, &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp/search"}, era2026)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		const uri = "cache://alpha/doc"
		for _, c := range []*eraClient{a, b} {
			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
		}
		// One stream ending must not end the other's subscription.
		if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			f.updateA(uri)
			select {
			case p := <-b.updated:
				if p.URI != uri {
					t.Fatalf("an update of %q, want %q", p.URI, uri)
				}
				if _, ok := p.Meta[mcp.MetaKeySubscriptionID]; !ok {
					t.Errorf("the update's _meta %v lacks the subscription id", p.Meta)
				}
				return
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("no resources/updated on the remaining listen stream")
			}
		}
	})

	t.Run("attack: a 2026 request naming another client's session", func(t *testing.T) {
		victim := connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2025)
		victim.search(t, "select:echo__deploy")
		victim.waitListed(t, "echo__deploy")
		id := victim.cs.ID()
		if id == "" {
			t.Fatal("the 2025 session has no id")
		}
		hdr := modernHeader("tools/list", "", era2026)
		hdr["Mcp-Session-Id"] = id
		status, res := post(t, dynamic, hdr, modernBody("tools/list", "", era2026))
		if status != http.StatusBadRequest || errCode(res) != int(jsonrpc.CodeInvalidRequest) || !strings.Contains(errMessage(res), "Mcp-Session-Id") {
			t.Fatalf("a 2026 request with a session id: %d %v, want 400 naming Mcp-Session-Id", status, res)
		}
		if raw, _ := json.Marshal(res); strings.Contains(string(raw), "echo__deploy") {
			t.Fatalf("the answer shows the victim's tools: %s", raw)
		}
		// A forged _meta in the victim's own session is refused too.
		hdr = map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": era2025}
		status, res = post(t, dynamic, hdr, modernBody("tools/list", "", era2026))
		if status != http.StatusBadRequest || res["result"] != nil {
			t.Fatalf("a session request with a 2026 _meta: %d %v, want refused", status, res)
		}
		victim.waitListed(t, "echo__deploy")
	})

	t.Run("attack: oversize _meta", func(t *testing.T) {
		body := modernBody("tools/list", `{"x":1}`, era2026)
		body = strings.Replace(body, `"_meta":{`, `"_meta":{"pad":"`+strings.Repeat("x", clientera.MaxMetaBytes)+`",`, 1)
		status, res := post(t, dynamic, modernHeader("tools/list", "", era2026), body)
		if status != http.StatusBadRequest || errCode(res) != int(jsonrpc.CodeInvalidParams) || !strings.Contains(errMessage(res), "_meta") {
			t.Fatalf("an oversize _meta: %d %v, want 400 -32602 naming _meta", status, res)
		}
	})

	t.Run("healthz names the eras", func(t *testing.T) {
		connectEra(t, &mcp.StreamableClientTransport{Endpoint: dynamic}, era2025)
		// The session counts once the gateway has seen its
		// notifications/initialized, which the client does not wait for.
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get(f.base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var h struct {
				Clients []ClientEra `json:"clients"`
			}
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			eras := map[string]bool{}
			for _, c := range h.Clients {
				eras[c.Era+" "+c.Protocol+" "+c.Exposure] = true
				if c.Protocol == era2026 && c.Exposure == "dynamic" {
					t.Fatalf("a 2026 client shown with dynamic exposure: %+v", c)
				}
			}
			if eras["per-request "+era2026+" search"] && eras["session "+era2025+" dynamic"] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz clients %+v lack one of the eras", h.Clients)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resp, err := http.Get(f.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, v := range []string{era2026, era2025} {
			if !strings.Contains(string(b), fmt.Sprintf("toolsearch_client_requests_total{protocol=%q} ", v)) {
				t.Errorf("/metrics counts no requests of %s", v)
			}
		}
	})
}

// TestErasOverStdio runs the gateway as a process serving stdio in
// dynamic exposure and connects the Go SDK's client in each era.
func TestErasOverStdio(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil)
	spawn := func() *exec.Cmd {
		cmd := exec.Command(self(t))
		cmd.Env = append(os.Environ(), roleEnv+"=gateway-stdio", "TOOLSEARCH_TEST_CONFIG="+cfg, "TOOLSEARCH_TEST_MODE=dynamic")
		cmd.Stderr = os.Stderr
		return cmd
	}
	t.Run("2026 client gets search", func(t *testing.T) {
		t.Parallel()
		c := connectEra(t, &mcp.CommandTransport{Command: spawn(), TerminateDuration: 2 * time.Second}, era2026)
		if got := c.cs.InitializeResult().ProtocolVersion; got != era2026 {
			t.Fatalf("negotiated %s, want %s", got, era2026)
		}
		before := c.list(t)
		if out := c.search(t, "select:echo"); strings.Contains(out, "now in your tool list") {
			t.Fatalf("a 2026 client was told its list grew: %s", out)
		}
		if after := c.list(t); !slices.Equal(before, after) {
			t.Fatalf("the list changed with a search: %v → %v", before, after)
		}
	})
	t.Run("2025 client gets dynamic", func(t *testing.T) {
		t.Parallel()
		c := connectEra(t, &mcp.CommandTransport{Command: spawn(), TerminateDuration: 2 * time.Second}, era2025)
		if got := c.cs.InitializeResult().ProtocolVersion; got != era2025 {
			t.Fatalf("negotiated %s, want %s", got, era2025)
		}
		if out := c.search(t, "select:echo"); !strings.Contains(out, "now in your tool list") {
			t.Fatalf("a dynamic search result: %s", out)
		}
		c.waitListed(t, "echo") // one server: bare names
	})
}

// rawStdio is a client that writes JSON-RPC lines to an in-process
// gateway connection and reads its answers.
type rawStdio struct {
	w    io.Writer
	mu   sync.Mutex
	resp map[string]chan map[string]any
}

func connectRawStdio(t *testing.T, g *Gateway, mode string) *rawStdio {
	t.Helper()
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		_ = cw.Close()
		_ = sr.Close() // ends the reader below
	})
	go func() { _ = g.Serve(ctx, mode, stdioTransport(cr, sw)) }()
	r := &rawStdio{w: cw, resp: map[string]chan map[string]any{}}
	go func() {
		dec := json.NewDecoder(sr)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				return
			}
			if m["id"] == nil {
				continue
			}
			id := fmt.Sprint(m["id"])
			r.mu.Lock()
			ch := r.resp[id]
			r.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	return r
}

var rawID sync.Mutex
var rawNext int

// call sends method with params (a JSON object) and waits for the answer.
func (r *rawStdio) call(t *testing.T, method, params string) map[string]any {
	t.Helper()
	rawID.Lock()
	rawNext++
	id := rawNext
	rawID.Unlock()
	ch := make(chan map[string]any, 1)
	r.mu.Lock()
	r.resp[fmt.Sprint(id)] = ch
	r.mu.Unlock()
	if params == "" {
		params = "{}"
	}
	if _, err := fmt.Fprintf(r.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer", method)
		return nil
	}
}

func (r *rawStdio) notify(t *testing.T, method string) {
	t.Helper()
	if _, err := fmt.Fprintf(r.w, `{"jsonrpc":"2.0","method":%q}`+"\n", method); err != nil {
		t.Fatal(err)
	}
}

// rawToolNames are the names of a raw tools/list answer.
func rawToolNames(res map[string]any) []string {
	r, _ := res["result"].(map[string]any)
	tools, _ := r["tools"].([]any)
	var names []string
	for _, t := range tools {
		if m, ok := t.(map[string]any); ok {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	return names
}

// modernParams is params (a JSON object) with a _meta of version.
func modernParams(params, version string) string {
	b := modernBody("x", params, version)
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal([]byte(b), &m)
	return string(m.Params)
}

// TestEraAttacksOverStdio: a connection speaks one era; a forged _meta
// cannot switch it, and an oversize _meta is refused.
func TestEraAttacksOverStdio(t *testing.T) {
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	waitState(t, g, "echo", 30*time.Second, StateReady)
	for _, c := range []struct {
		name  string
		steps func(t *testing.T, r *rawStdio)
	}{
		{"a 2026 _meta in a 2025 session", func(t *testing.T, r *rawStdio) {
			if res := r.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`); res["result"] == nil {
				t.Fatalf("initialize: %v", res)
			}
			r.notify(t, "notifications/initialized")
			res := r.call(t, "tools/list", modernParams("", era2026))
			if errCode(res) != int(mcp.CodeUnsupportedProtocolVersion) || !strings.Contains(errMessage(res), "2025-11-25") {
				t.Fatalf("forged _meta: %v, want -32022 naming the session's version", res)
			}
			if res := r.call(t, "tools/call", `{"name":"search_tools","arguments":{"query":"select:echo"}}`); !strings.Contains(fmt.Sprint(res["result"]), "now in your tool list") {
				t.Fatalf("the session's own search is dynamic: %v", res)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !slices.Contains(rawToolNames(r.call(t, "tools/list", "")), "echo") {
				if time.Now().After(deadline) {
					t.Fatal("the found tool never joined the 2025 session's list")
				}
				time.Sleep(50 * time.Millisecond)
			}
		}},
		{"a 2025 request in a 2026 connection", func(t *testing.T, r *rawStdio) {
			if res := r.call(t, "tools/list", modernParams("", era2026)); res["result"] == nil {
				t.Fatalf("a 2026 request opening the connection: %v", res)
			}
			res := r.call(t, "tools/list", "")
			if errCode(res) != int(jsonrpc.CodeInvalidRequest) || !strings.Contains(errMessage(res), era2026) {
				t.Fatalf("a request without _meta in a 2026 connection: %v, want -32600 naming the version", res)
			}
			if res := r.call(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`); res["result"] != nil {
				t.Fatalf("initialize after a 2026 request was served: %v", res)
			}
		}},
		{"an unsupported version", func(t *testing.T, r *rawStdio) {
			res := r.call(t, "server/discover", modernParams("", "2040-01-01"))
			if errCode(res) != int(mcp.CodeUnsupportedProtocolVersion) || !strings.Contains(fmt.Sprint(res["error"]), era2026) {
				t.Fatalf("discover at a made-up version: %v, want -32022 naming %s", res, era2026)
			}
			res = r.call(t, "server/discover", modernParams("", era2026))
			if res["result"] == nil {
				t.Fatalf("discover at %s: %v", era2026, res)
			}
		}},
		{"an oversize _meta", func(t *testing.T, r *rawStdio) {
			params := modernParams(`{"x":1}`, era2026)
			params = strings.Replace(params, `"_meta":{`, `"_meta":{"pad":"`+strings.Repeat("y", clientera.MaxMetaBytes)+`",`, 1)
			res := r.call(t, "tools/list", params)
			if errCode(res) != int(jsonrpc.CodeInvalidParams) || !strings.Contains(errMessage(res), "_meta") {
				t.Fatalf("an oversize _meta: %v, want -32602 naming _meta", res)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.steps(t, connectRawStdio(t, g, "dynamic"))
		})
	}
}

// BenchmarkToolsListByEra measures one tools/list over HTTP on loopback in
// each era: a 2026-07-28 request (served by the stateless handler, a
// temporary session per request) and a request of a 2025-11-25 session.
func BenchmarkToolsListByEra(b *testing.B) {
	// ttl 0: the client caches nothing, every call is a request.
	url, _, _ := cacheUpstream(b, "alpha", 0, "")
	g := startGateway(b, writeConfig(b, map[string]any{"alpha": map[string]any{"type": "http", "url": url}}, map[string]any{"exposure": "search"}))
	waitState(b, g, "alpha", 30*time.Second, StateReady)
	srv := serveHTTP(b, g.Handler(""))
	ctx := context.Background()
	for _, version := range []string{era2026, era2025} {
		b.Run(version, func(b *testing.B) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
