package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSSEPollingPassedOn puts the gateway in front of a Go SDK server over
// streamable HTTP whose tool ends its event stream before it answers, with
// a retry field (SSE polling), as the conformance suite's test_reconnection
// tool does. A client speaking raw HTTP sees the gateway end its stream
// too, with the same retry field, and gets the answer when it reconnects
// with Last-Event-ID; a Go SDK client, which reconnects by itself, just
// gets the answer; and a call of a tool that does not poll keeps its
// stream to the answer.
func TestSSEPollingPassedOn(t *testing.T) {
	t.Parallel()
	const retry = 120 * time.Millisecond
	s := mcp.NewServer(&mcp.Implementation{Name: "poller", Version: "1"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "slow_report", Description: "Build a slow report, ending the stream first.", InputSchema: obj},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: retry})
			time.Sleep(150 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "report ready"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "quick_report", Description: "Build a quick report.", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick ready"}}}, nil
		})
	up := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	g := startGateway(t, writeConfig(t, map[string]any{"poller": map[string]any{"type": "http", "url": up.URL, "naming": "bare"}},
		map[string]any{"exposure": "full"}))
	waitState(t, g, "poller", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))

	t.Run("raw HTTP client", func(t *testing.T) {
		t.Parallel()
		sid, version := rawInitialize(t, srv.URL+"/mcp")
		for _, tc := range []struct {
			tool      string
			wantRetry bool
			want      string
		}{
			{"slow_report", true, "report ready"},
			{"quick_report", false, "quick ready"},
		} {
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{}}}`
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", version)
			evs, retried, lastID := readEvents(t, req)
			answered := strings.Contains(strings.Join(evs, "\n"), tc.want)
			if retried != tc.wantRetry || answered == tc.wantRetry {
				t.Fatalf("%s: retry field %v (want %v), answered on the POST stream %v; events %q", tc.tool, retried, tc.wantRetry, answered, evs)
			}
			if !tc.wantRetry {
				continue
			}
			if lastID == "" {
				t.Fatalf("%s: the stream ended without an event id to resume from: %q", tc.tool, evs)
			}
			get, _ := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
			get.Header.Set("Accept", "text/event-stream")
			get.Header.Set("Mcp-Session-Id", sid)
			get.Header.Set("Mcp-Protocol-Version", version)
			get.Header.Set("Last-Event-ID", lastID)
			evs, _, _ = readEvents(t, get)
			if !strings.Contains(strings.Join(evs, "\n"), tc.want) {
				t.Fatalf("%s: reconnecting with Last-Event-ID %s gave %q, not the answer", tc.tool, lastID, evs)
			}
		}
	})
	t.Run("Go SDK client", func(t *testing.T) {
		t.Parallel()
		c := connectHTTP(t, srv.URL+"/mcp", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_report", Arguments: map[string]any{}})
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "report ready" {
			t.Fatalf("call through the gateway: %v %+v", err, res)
		}
	})
}

// rawInitialize opens a 2025-11-25 session with raw HTTP and returns its id
// and version.
func rawInitialize(t *testing.T, url string) (sid, version string) {
	t.Helper()
	version = "2025-11-25"
	post := func(body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw-poller","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if sid = resp.Header.Get("Mcp-Session-Id"); sid == "" {
		t.Fatalf("initialize: no session id (status %s)", resp.Status)
	}
	resp = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return sid, version
}

// readEvents reads an event stream to its end (within a bound) and returns
// the data of its events, whether any had a retry field, and the last id.
func readEvents(t *testing.T, req *http.Request) (data []string, retried bool, lastID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", req.Method, req.URL, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
			// A GET stream stays open after the answer: stop there.
			if req.Method == http.MethodGet && strings.Contains(value, `"result"`) {
				return data, retried, lastID
			}
		case "retry":
			retried = true
		case "id":
			lastID = value
		}
	}
	return data, retried, lastID
}
