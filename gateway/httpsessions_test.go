package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawPost posts one JSON-RPC message to an MCP endpoint and returns the
// response, its body read.
func rawPost(t testing.TB, url, sessionID, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// metricValue reads one sample of /metrics.
func metricValue(t testing.TB, base, sample string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("/metrics has no %s", sample)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// heapAfterGC is the live heap, in bytes.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestUninitializedSessionsExpire: sessions whose client sends initialize
// but never notifications/initialized are closed at the init timeout, over
// real loopback HTTP: the gauge of open sessions goes back to zero, each is
// counted as expired, their ids are unknown afterwards, and the memory and
// goroutines they held are given back. A session that did initialize
// stays.
func TestUninitializedSessionsExpire(t *testing.T) {
	// Not parallel: it measures the process's goroutines and heap.
	echo := roleServer(t, "echo")
	echo["naming"] = "prefixed"
	g := startGateway(t, writeConfig(t, map[string]any{"echo": echo},
		map[string]any{"exposure": "full", "http": map[string]any{"sessionInitTimeout": "1s", "maxSessions": 1000}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	good := connectHTTP(t, srv.URL+"/mcp", nil)
	http.DefaultClient.CloseIdleConnections()
	goroutines, heap := runtime.NumGoroutine(), heapAfterGC()

	const n = 300
	var ids []string
	start := time.Now()
	for i := range n {
		resp, body := rawPost(t, srv.URL+"/mcp/full", "", initializeBody)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize %d: %s %s", i, resp.Status, body)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	if open := metricValue(t, srv.URL, "toolsearch_http_sessions_open"); open < n && time.Since(start) < time.Second {
		t.Fatalf("%d sessions open after %d initializes", open, n)
	}
	waitFor(t, "the uninitialized sessions to be closed", 15*time.Second, func() bool {
		return metricValue(t, srv.URL, "toolsearch_http_sessions_open") == 1
	})
	if got := metricValue(t, srv.URL, `toolsearch_http_sessions_expired_total{reason="uninitialized"}`); got != n {
		t.Errorf("%d sessions counted as expired, want %d", got, n)
	}
	for _, id := range ids[:5] {
		if resp, body := rawPost(t, srv.URL+"/mcp/full", id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
			t.Errorf("a closed session still answers: %s %s", resp.Status, body)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	// What the sessions held is given back (the bounds leave room for the
	// runtime's own goroutines and caches).
	waitFor(t, "the goroutines to end", 10*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines+10 })
	if now := heapAfterGC(); now > heap+8<<20 {
		t.Errorf("heap %d MiB after the sessions closed, %d MiB before", now>>20, heap>>20)
	}
	// The session that initialized is still served.
	if text, isErr := good.call(t, "echo__echo", map[string]any{"text": "still here"}); isErr || text != "still here" {
		t.Errorf("the initialized session: %q, %v", text, isErr)
	}
}

// TestSessionCap: with maxSessions open, the next initialize is refused
// with 503, Retry-After and a JSON-RPC error that names the setting; once
// a session ends, a new one is served.
func TestSessionCap(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
		map[string]any{"http": map[string]any{"maxSessions": 3}}))
	srv := serveHTTP(t, g.Handler("search"))
	var ids []string
	for range 3 {
		resp, body := rawPost(t, srv.URL+"/mcp", "", initializeBody)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %s %s", resp.Status, body)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, body := rawPost(t, srv.URL+"/mcp", "", initializeBody)
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &rpc)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(rpc.Error.Message, "toolsearch.http.maxSessions") {
		t.Fatalf("the 4th session: %s, Retry-After %q, %s", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if n := metricValue(t, srv.URL, "toolsearch_http_sessions_refused_total"); n != 1 {
		t.Errorf("refused_total = %d", n)
	}
	// The SDK client sees the refusal as an error, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, legacySession); err == nil {
		cs.Close()
		t.Error("a client connected beyond the cap")
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", ids[0])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	waitFor(t, "the deleted session to give its place back", 10*time.Second, func() bool {
		return metricValue(t, srv.URL, "toolsearch_http_sessions_open") == 2
	})
	if resp, body := rawPost(t, srv.URL+"/mcp", "", initializeBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a session ended: %s %s", resp.Status, body)
	}
}

// TestIdleSessionExpires: an initialized session with no request for the
// idle timeout is closed (its open event stream does not keep it), and is
// counted; its client's next call fails instead of hanging.
func TestIdleSessionExpires(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
		map[string]any{"http": map[string]any{"sessionIdleTimeout": "1s"}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("search"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)
	// Requests keep it: calls half a second apart for twice the timeout.
	for range 4 {
		if _, isErr := c.call(t, searchToolName, map[string]any{"query": "echo"}); isErr {
			t.Fatal("a busy session was closed")
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitFor(t, "the idle session to be closed", 10*time.Second, func() bool {
		return metricValue(t, srv.URL, `toolsearch_http_sessions_expired_total{reason="idle"}`) == 1 &&
			metricValue(t, srv.URL, "toolsearch_http_sessions_open") == 0
	})
	if text, isErr := callWithin(c, searchToolName, map[string]any{"query": "echo"}, 10*time.Second); !isErr {
		t.Errorf("a call on the closed session: %q", text)
	}
}

// TestServedExposures: the /mcp/<exposure> endpoints the configuration
// does not serve answer 404 with a message naming those it does; the
// others work.
func TestServedExposures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		gw       map[string]any
		served   []string
		refused  []string
		mentions string
	}{
		{"search", map[string]any{"exposure": "search"}, []string{"/mcp", "/mcp/search"}, []string{"/mcp/full", "/mcp/dynamic", "/mcp/auto"}, "/mcp/search"},
		{"dynamic", map[string]any{"exposure": "dynamic"}, []string{"/mcp", "/mcp/dynamic", "/mcp/search"}, []string{"/mcp/full", "/mcp/auto"}, "/mcp/dynamic, /mcp/search"},
		{"auto", map[string]any{}, []string{"/mcp", "/mcp/auto", "/mcp/full", "/mcp/dynamic", "/mcp/search"}, nil, ""},
		{"listed", map[string]any{"exposure": "search", "http": map[string]any{"exposures": []string{"full"}}},
			[]string{"/mcp", "/mcp/search", "/mcp/full"}, []string{"/mcp/dynamic", "/mcp/auto"}, "/mcp/search, /mcp/full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, tc.gw))
			srv := serveHTTP(t, g.Handler(""))
			for _, p := range tc.served {
				if resp, body := rawPost(t, srv.URL+p, "", initializeBody); resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %s %s", p, resp.Status, body)
				}
			}
			for _, p := range tc.refused {
				resp, body := rawPost(t, srv.URL+p, "", initializeBody)
				if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, p+" is not served") || !strings.Contains(body, tc.mentions) {
					t.Errorf("%s: %s %s", p, resp.Status, body)
				}
				if r, err := http.Get(srv.URL + p); err != nil || r.StatusCode != http.StatusNotFound {
					t.Errorf("GET %s: %v %v", p, r, err)
				} else {
					r.Body.Close()
				}
			}
			if got, want := strings.Join(g.Endpoints(""), " "), strings.Join(tc.served, " "); len(got) != len(want) {
				t.Errorf("Endpoints = %s, want %s", got, want)
			}
		})
	}
}

// manyToolsServer is an in-process streamable HTTP MCP server of n tools.
func manyToolsServer(t testing.TB, n int) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, nil)
	for i := range n {
		name := fmt.Sprintf("gadget_%05d", i)
		s.AddTool(&mcp.Tool{Name: name, Description: fmt.Sprintf("Adjust gadget %d: its size, colour and place.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","description":"the new size"},"colour":{"type":"string"}}}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "adjusted " + name}}}, nil
			})
	}
	return serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)).URL
}

// TestFullListBuiltOnce: on a large catalog, the tool list of full
// exposure is built once for the catalog's version, not once per session:
// many sessions initialize and list every tool, and the build count stays
// at one; a catalog change builds it once more and tells the sessions.
// Under the race detector, which makes each listing ten times slower, the
// catalog is 1,500 tools (two pages); .ci/run lists 5,000 without it.
func TestFullListBuiltOnce(t *testing.T) {
	t.Parallel()
	n := 5000
	if raceEnabled {
		n = 1500
	}
	last := fmt.Sprintf("many__gadget_%05d", n-1)
	g := startGateway(t, writeConfig(t, map[string]any{
		"many": map[string]any{"type": "http", "url": manyToolsServer(t, n)},
		"echo": roleServer(t, "echo"),
	}, nil))
	waitState(t, g, "many", 60*time.Second, StateReady)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("full"))
	before := metricValue(t, srv.URL, "toolsearch_full_list_builds_total")
	var clients []*client
	for i := range 10 {
		c := connectHTTP(t, srv.URL+"/mcp/full", nil)
		clients = append(clients, c)
		names := c.toolNames(t)
		if len(names) < n || !strings.Contains(strings.Join(names, " "), last) {
			t.Fatalf("session %d lists %d tools", i, len(names))
		}
	}
	if builds := metricValue(t, srv.URL, "toolsearch_full_list_builds_total"); builds-before > 1 {
		t.Errorf("the full list was built %d times for 10 sessions of one catalog", builds-before)
	}
	// A tool added upstream: one more build, and every session is told.
	if text, isErr := clients[0].call(t, "echo__grow", map[string]any{"name": "late_tool"}); isErr {
		t.Fatalf("grow: %s", text)
	}
	waitFor(t, "every session to hear of the change", 20*time.Second, func() bool {
		for _, c := range clients {
			if c.changed.Load() == 0 {
				return false
			}
		}
		return true
	})
	names := clients[3].toolNames(t)
	if !strings.Contains(strings.Join(names, " "), "echo__late_tool") || strings.Contains(strings.Join(names, " "), listPlaceholder.Name) {
		t.Errorf("after the change: %d tools, late_tool listed: %v", len(names), strings.Contains(strings.Join(names, " "), "echo__late_tool"))
	}
	if text, isErr := clients[5].call(t, "echo__late_tool", map[string]any{"widget": "w"}); isErr || text != "frobnicated" {
		t.Errorf("calling the new tool: %q %v", text, isErr)
	}
	if text, _ := clients[5].call(t, listPlaceholder.Name, map[string]any{}); !strings.Contains(text, "unknown tool") {
		t.Errorf("calling the placeholder: %q", text)
	}
	if builds := metricValue(t, srv.URL, "toolsearch_full_list_builds_total"); builds-before > 3 {
		t.Errorf("the full list was built %d times for two catalog versions", builds-before)
	}
}

// BenchmarkFullInitialize measures one session's initialize and first
// page of tools/list in full exposure over a catalog of 20,000 tools, once
// the catalog's list is built (by a first session, before the timer).
func BenchmarkFullInitialize(b *testing.B) {
	g := startGateway(b, writeConfig(b, map[string]any{"many": map[string]any{"type": "http", "url": manyToolsServer(b, 20000)}},
		map[string]any{"http": map[string]any{"maxSessions": 100000}}))
	waitState(b, g, "many", 120*time.Second, StateReady)
	srv := serveHTTP(b, g.Handler("full"))
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	rawPost(b, srv.URL+"/mcp/full", "", initializeBody)
	b.ResetTimer()
	for range b.N {
		resp, _ := rawPost(b, srv.URL+"/mcp/full", "", initializeBody)
		id := resp.Header.Get("Mcp-Session-Id")
		rawPost(b, srv.URL+"/mcp/full", id, initialized)
		if _, body := rawPost(b, srv.URL+"/mcp/full", id, list); !bytes.Contains([]byte(body), []byte("gadget_00000")) {
			b.Fatalf("tools/list: %.200s", body)
		}
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp/full", nil)
		req.Header.Set("Mcp-Session-Id", id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}
