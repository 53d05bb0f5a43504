package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// TestAPIVersion20261021PassesThrough: a client on API version 2026-10-21
// sends "anthropic-version: 2026-10-21" and its key as "Authorization:
// Bearer"; that version refuses temperature, top_p and top_k. Whatever the
// proxy does to the request (nothing, a retry at a lower level, tool search
// emulated client-side or server-side), every upstream call carries both
// headers as the client sent them, no x-api-key, and none of the three
// sampling fields.
func TestAPIVersion20261021PassesThrough(t *testing.T) {
	t.Parallel()
	const (
		version = "2026-10-21"
		auth    = "Bearer sk-ant-test-bearer"
	)
	user := `{"role":"user","content":"post a message to the slack channel"}`
	system := `{"role":"system","content":"The user prefers short answers."}`
	tests := []struct {
		name string
		mode proxy.Mode
		opts proxytest.Options
		body string
	}{
		{"passthrough", proxy.ModePassthrough, proxytest.Options{SystemMessages: true},
			`{"model":"m","max_tokens":64,"messages":[` + user + `]}`},
		{"emulate, as sent", proxy.ModeEmulate, proxytest.Options{SystemMessages: true},
			`{"model":"m","max_tokens":64,"messages":[` + user + `]}`},
		{"emulate, system refused and folded", proxy.ModeEmulate, proxytest.Options{SystemRefusal: func(int) (int, string) {
			return 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: unexpected role 'system'"}}`
		}}, `{"model":"m","max_tokens":64,"messages":[` + system + `,` + user + `]}`},
		{"emulate, client-side search", proxy.ModeEmulate, proxytest.Options{Options: anthropictest.Options{NoReferences: true}},
			`{"model":"m","max_tokens":64,"tools":[` + searchToolDef + `,` + deferredTools[0] + `],"messages":[` + user + `]}`},
		{"emulate, server-side search", proxy.ModeEmulate, proxytest.Options{Options: anthropictest.Options{NoReferences: true}},
			`{"model":"m","max_tokens":64,"tools":[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},` + deferredTools[0] + `],"messages":[` + user + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := proxytest.New(t, tt.opts)
			_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: tt.mode})
			h := http.Header{"Anthropic-Version": {version}, "Authorization": {auth}}
			status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", h, []byte(tt.body))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, out)
			}
			calls := up.Requests()
			if len(calls) == 0 {
				t.Fatal("nothing went upstream")
			}
			for i, c := range calls {
				if got := c.Header.Values("Anthropic-Version"); len(got) != 1 || got[0] != version {
					t.Errorf("call %d: anthropic-version %q, want %q", i, got, version)
				}
				if got := c.Header.Values("Authorization"); len(got) != 1 || got[0] != auth {
					t.Errorf("call %d: Authorization %q, want the client's", i, got)
				}
				if got := c.Header.Get("X-Api-Key"); got != "" {
					t.Errorf("call %d: x-api-key added", i)
				}
				var top map[string]json.RawMessage
				if err := json.Unmarshal(c.Body, &top); err != nil {
					t.Fatalf("call %d: body %s: %v", i, c.Body, err)
				}
				for _, k := range []string{"temperature", "top_p", "top_k"} {
					if _, ok := top[k]; ok {
						t.Errorf("call %d: the proxy added %s: %s", i, k, c.Body)
					}
				}
			}
		})
	}
}

// TestToolSearchRefusalNoLevelHelps: an upstream that refuses a part of
// tool search the proxy cannot drop (a tool-search beta in the body's
// anthropic_beta, as Bedrock's clients send it) gets one retry with tool
// search emulated; refused again, the client gets a clean 400 in the API's
// shape naming the feature and defer_loading, the answer on which Claude
// Code sends the request again without tool search.
func TestToolSearchRefusalNoLevelHelps(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	upstream := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"detail":[{"loc":["body","anthropic_beta",0],"msg":"tool-search-tool-2025-10-19 is not supported","type":"value_error"}]}`)
	})
	_, url := startProxy(t, proxy.Config{Upstream: upstream, Mode: proxy.ModeEmulate})
	body := `{"model":"m","max_tokens":64,"anthropic_beta":["tool-search-tool-2025-10-19"],"tools":[` + searchToolDef + `,` + deferredTools[0] + `],` +
		`"messages":[{"role":"user","content":"post to slack"}]}`
	status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", nil, []byte(body))
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != http.StatusBadRequest || json.Unmarshal(out, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" {
		t.Fatalf("status %d: %s", status, out)
	}
	for _, want := range []string{"tool-search-tool-2025-10-19", "defer_loading"} {
		if !strings.Contains(e.Error.Message, want) {
			t.Errorf("the refusal does not name %s: %s", want, e.Error.Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || strings.Contains(bodies[1], "defer_loading") {
		t.Fatalf("want the request as sent, then once with tool search emulated; the upstream got %q", bodies)
	}
}
