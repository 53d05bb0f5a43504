package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readPoll passes stream through a pollBody in fragments of at most step
// bytes and reports the delays it ended the client's stream with.
func readPoll(t testing.TB, stream string, step int) []time.Duration {
	t.Helper()
	var got []time.Duration
	b := newPollBody(io.NopCloser(strings.NewReader(stream)), func(a mcp.CloseSSEStreamArgs) { got = append(got, a.RetryAfter) })
	buf := make([]byte, max(step, 1))
	var out bytes.Buffer
	for {
		n, err := b.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	if out.String() != stream {
		t.Fatalf("the stream changed on its way through:\n got %q\nwant %q", out.String(), stream)
	}
	return got
}

func TestPollBody(t *testing.T) {
	t.Parallel()
	const answer = `data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n\n"
	const progress = `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"result":"x"}}` + "\n\n"
	tests := []struct {
		name   string
		stream string
		want   []time.Duration // nil: the client's stream is left alone
	}{
		{"no retry, answered", "id: 1\ndata: \n\n" + answer, nil},
		{"no retry, cut short", "id: 1\ndata: \n\n", nil},
		{"retry then end, unanswered", "id: 1\ndata: \n\nevent: close\nretry: 250\n\n", []time.Duration{250 * time.Millisecond}},
		{"retry on the priming event, then answered", "id: 1\nretry: 500\ndata: \n\n" + progress + answer, nil},
		{"retry, a notification, end", "id: 1\nretry: 500\ndata: \n\n" + progress, []time.Duration{500 * time.Millisecond}},
		{"CRLF line ends", "id: 1\r\ndata: \r\n\r\nevent: close\r\nretry: 40\r\n\r\n", []time.Duration{40 * time.Millisecond}},
		{"CR line ends", "id: 1\rdata: \r\revent: close\rretry: 40\r\r", []time.Duration{40 * time.Millisecond}},
		{"no space after the colon", "retry:75\n\n", []time.Duration{75 * time.Millisecond}},
		{"last line without its end", "id: 1\ndata: \n\nretry: 30", []time.Duration{30 * time.Millisecond}},
		{"a delay past the bound is cut to it", "retry: 86400000\n\n", []time.Duration{maxPollRetry}},
		{"a retry that is not digits is ignored", "retry: 5s\n\nretry: -1\n\nretry: 1e3\n\n", nil},
		{"a retry too long is ignored", "retry: 12345678901234567890123\n\n", nil},
		{"a field named like retry is not one", "retryx: 10\n\nretr: 10\n\n", nil},
		{"a comment is not a field", ": retry: 10\n\n", nil},
		{"an answer split over data lines", "retry: 10\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n", nil},
		{"an error answer counts as the answer", "retry: 10\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}\n\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The same for any fragmentation of the stream.
			for _, step := range []int{1, 2, 3, 7, len(tc.stream)} {
				got := readPoll(t, tc.stream, step)
				if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
					t.Fatalf("read %d bytes at a time: ended the client's stream with %v, want %v", step, got, tc.want)
				}
			}
		})
	}
}

// FuzzPollBody checks that any stream passes through unchanged, in any
// fragments, ends the client's stream at most once, with a delay within
// the bound, and the same whatever the fragments.
func FuzzPollBody(f *testing.F) {
	for _, s := range []string{
		"id: 1\ndata: \n\nevent: close\nretry: 250\n\n",
		"retry: 10\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n",
		"retry:\n\n", ":\n", "\r\r\n\n", "data: {\n", "retry: 99999999999\n",
	} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, stream string, step int) {
		step = 1 + abs(step)%64
		whole := readPoll(t, stream, len(stream)+1)
		parts := readPoll(t, stream, step)
		if len(whole) > 1 || len(parts) != len(whole) || (len(whole) == 1 && parts[0] != whole[0]) {
			t.Fatalf("whole %v, in fragments of %d %v", whole, step, parts)
		}
		for _, d := range whole {
			if d < 0 || d > maxPollRetry {
				t.Fatalf("delay %v outside [0, %v]", d, maxPollRetry)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

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
