package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/proxy"
)

// searchThenFail is an upstream whose first answer calls the emulated
// search tool and whose second fails with status.
func searchThenFail(t testing.TB, status int) string {
	var n atomic.Int32
	return newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search_tool_bm25","input":{"query":"slack"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":5}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
}

// cutStream is an upstream that starts a stream and drops the connection.
func cutStream(t testing.TB) string {
	return newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	})
}

// TestErrors checks that every failure reaches the client as an error in
// the API's shape, never as a truncated success.
func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		upstream func(t testing.TB) string
		mode     proxy.Mode
		tools    []sdk.ToolUnionParam
		stream   bool
		// wantStatus is the HTTP status the SDK reports (0: a stream error).
		wantStatus int
		wantType   string
	}{
		{"unreachable, passthrough", unreachable, proxy.ModePassthrough, nil, false, 502, "api_error"},
		{"unreachable, emulate", unreachable, proxy.ModeEmulate, serverSearchTools("tool_search_tool_bm25_20251119"), false, 502, "api_error"},
		{"unreachable, emulate, stream", unreachable, proxy.ModeEmulate, serverSearchTools("tool_search_tool_bm25_20251119"), true, 502, "api_error"},
		{"second round fails", func(t testing.TB) string { return searchThenFail(t, 529) }, proxy.ModeEmulate, serverSearchTools("tool_search_tool_bm25_20251119"), false, 529, "overloaded_error"},
		{"second round fails, stream", func(t testing.TB) string { return searchThenFail(t, 529) }, proxy.ModeEmulate, serverSearchTools("tool_search_tool_bm25_20251119"), true, 0, "overloaded_error"},
		{"stream cut, passthrough", cutStream, proxy.ModePassthrough, nil, true, 0, ""},
		{"stream cut, emulate", cutStream, proxy.ModeEmulate, rawTools(bashTool, deferredTools[0]), true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			_, url := startProxy(t, proxy.Config{Upstream: tt.upstream(t), Mode: tt.mode, ToolSearch: proxy.Unsupported})
			client := goClient(url)
			params := sdk.MessageNewParams{Model: "m", MaxTokens: 10, Tools: tt.tools,
				Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("post to slack"))}}
			var err error
			if tt.stream {
				s := client.Messages.NewStreaming(ctx, params)
				m := sdk.Message{}
				for s.Next() {
					_ = m.Accumulate(s.Current())
				}
				err = s.Err()
				if err == nil {
					t.Fatalf("stream ended without error: %s", m.RawJSON())
				}
			} else {
				var m *sdk.Message
				m, err = client.Messages.New(ctx, params)
				if err == nil {
					t.Fatalf("no error: %s", m.RawJSON())
				}
			}
			var apiErr *sdk.Error
			if tt.wantStatus != 0 {
				if !asError(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
					t.Fatalf("err = %v, want status %d", err, tt.wantStatus)
				}
			}
			if tt.wantType != "" && !strings.Contains(err.Error(), tt.wantType) {
				t.Fatalf("err = %v, want %s", err, tt.wantType)
			}
		})
	}
}

// unreachable returns the URL of a loopback port nobody listens on.
func unreachable(t testing.TB) string {
	srv := newRawUpstreamServer(t)
	u := srv.URL
	srv.Close()
	return u
}

// TestBadRequestBodies checks the proxy's own 400s.
func TestBadRequestBodies(t *testing.T) {
	t.Parallel()
	up := brokenUpstream(t, "")
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported, MaxBodyBytes: 1 << 10})
	tests := []struct {
		name, body string
		status     int
		typ        string
	}{
		{"not JSON", `{"model":`, 400, "invalid_request_error"},
		{"tools not an array", `{"model":"m","tools":{}}`, 400, "invalid_request_error"},
		{"too large", `{"model":"` + strings.Repeat("x", 2<<10) + `"}`, 413, "request_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", nil, []byte(tt.body))
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type string `json:"type"`
				} `json:"error"`
			}
			if status != tt.status || json.Unmarshal(out, &e) != nil || e.Type != "error" || e.Error.Type != tt.typ {
				t.Fatalf("status %d: %s", status, out)
			}
		})
	}
}
