package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// victimRequest is a tool-search request as Claude Code sends it: a
// system-role message, deferred tools, the tool-search beta. Sent as it
// is, the upstream sees defer_loading and the system message.
func victimRequest(t testing.TB) []byte {
	return mustMarshal(t, map[string]any{
		"model": "claude-standin", "max_tokens": 256,
		"tools": []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(searchToolDef), json.RawMessage(deferredTools[0])},
		"messages": []json.RawMessage{
			json.RawMessage(`{"role":"system","content":[{"type":"text","text":"Deferred tools: mcp__slack__post_message"}]}`),
			json.RawMessage(`{"role":"user","content":"post hello to the slack channel"}`),
		},
	})
}

// sentAsIs reports whether an upstream got a victim's request as the
// client sent it: its deferred tool and its system message untouched.
func sentAsIs(body []byte) bool {
	return bytes.Contains(body, []byte(`"defer_loading":true`)) && bytes.Contains(body, []byte(`"role":"system"`))
}

// TestAttackRefusalOfUnsentFeature: a client sends a request without
// tools, system messages or betas, and the upstream (or a client who can
// make it answer so) refuses it naming tool search or system messages.
// The proxy reads the refusal against the request it sent: it names
// nothing that request used, so no level is lowered, the 400 reaches that
// client after one call, and every later client's tool-search request
// still goes as sent.
func TestAttackRefusalOfUnsentFeature(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, refusal string }{
		{"tool_reference tag", "messages.0.content.0: Input tag 'tool_reference' found using 'type' does not match any of the expected tags"},
		{"tool_reference not supported", "tool_reference blocks are not supported"},
		{"defer_loading", "tools.0.defer_loading: Extra inputs are not permitted"},
		{"system role", `messages: Unexpected role "system" is not supported`},
		{"tool search beta", "Unexpected value(s) `advanced-tool-use-2025-11-20` for the `anthropic-beta` header."},
		{"server search tool", "tools.0: Input tag 'tool_search_tool_bm25_20251119' found using 'type' is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			backend := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{SearchToolName: "tool_search", Model: inputModel}, SystemMessages: true})
			front, seen := refusingFront(t, backend.URL, func(b []byte) (string, bool) {
				return tt.refusal, bytes.Contains(b, []byte(`"attacker"`))
			})
			_, url := startProxy(t, proxy.Config{Upstream: front, Mode: proxy.ModeEmulate})
			ctx := testCtx(t)
			attack := []byte(`{"model":"claude-standin","max_tokens":16,"metadata":{"user_id":"attacker"},"messages":[{"role":"user","content":"hi"}]}`)
			for range 3 {
				if status, _, out := postJSON(ctx, t, url+"/v1/messages", nil, attack); status != http.StatusBadRequest {
					t.Fatalf("the attacker's request: status %d: %s", status, out)
				}
			}
			if n := len(seen()); n != 3 {
				t.Fatalf("%d upstream calls for 3 attacker requests: a refusal of nothing they sent was retried", n)
			}
			header := http.Header{"Anthropic-Beta": {betaToolSearch}}
			status, _, out := postJSON(ctx, t, url+"/v1/messages", header, victimRequest(t))
			calls := seen()
			if status != http.StatusOK || len(calls) != 4 {
				t.Fatalf("the victim's request: status %d after %d upstream calls, want 200 after 4: %s", status, len(calls), out)
			}
			if !sentAsIs(calls[3]) {
				t.Fatalf("the victim's request was lowered after a refusal of what another request never sent: %s", calls[3])
			}
		})
	}
}

// TestAttackRefusalRememberedOnlyWhenTaken: a client's request carries a
// tool_reference and the upstream refuses every request of that client
// (the client can make it: a malformed block, a field its endpoint
// refuses). The proxy retries lower for that request, but remembers a
// lower level for the model only when the upstream takes a request sent
// at it: a refusal alone lowers nothing for the other clients.
func TestAttackRefusalRememberedOnlyWhenTaken(t *testing.T) {
	t.Parallel()
	attack := mustMarshal(t, map[string]any{
		"model": "claude-standin", "max_tokens": 256, "metadata": map[string]string{"user_id": "attacker"},
		"tools": []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(searchToolDef), json.RawMessage(deferredTools[2])},
		"messages": []json.RawMessage{
			json.RawMessage(`{"role":"user","content":"open a pull request"}`),
			json.RawMessage(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"pull request"}}]}`),
			json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__github__create_pull_request"}]}]}`),
		},
	})
	refusal := "messages.2.content.0.content.0: Input tag 'tool_reference' found using 'type' does not match any of the expected tags"
	tests := []struct {
		name string
		// refuseLowered: the upstream refuses the attacker's request at
		// the lower level too.
		refuseLowered bool
		wantStatus    int
		// wantAsSent: a later client's request goes as it was sent.
		wantAsSent bool
	}{
		{"every level refused: nothing remembered", true, http.StatusBadRequest, true},
		{"the lower level taken: remembered", false, http.StatusOK, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			backend := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{SearchToolName: "tool_search", Model: inputModel}, SystemMessages: true})
			front, seen := refusingFront(t, backend.URL, func(b []byte) (string, bool) {
				attacker := bytes.Contains(b, []byte(`"attacker"`))
				return refusal, attacker && (tt.refuseLowered || bytes.Contains(b, []byte(`"tool_reference"`)))
			})
			_, url := startProxy(t, proxy.Config{Upstream: front, Mode: proxy.ModeEmulate})
			ctx := testCtx(t)
			header := http.Header{"Anthropic-Beta": {betaToolSearch}}
			status, _, out := postJSON(ctx, t, url+"/v1/messages", header, attack)
			if status != tt.wantStatus || len(seen()) != 2 {
				t.Fatalf("the attacker's request: status %d after %d upstream calls, want %d after 2: %s", status, len(seen()), tt.wantStatus, out)
			}
			status, _, out = postJSON(ctx, t, url+"/v1/messages", header, victimRequest(t))
			calls := seen()
			if status != http.StatusOK {
				t.Fatalf("the victim's request: status %d: %s", status, out)
			}
			if got := sentAsIs(calls[len(calls)-1]); got != tt.wantAsSent {
				t.Fatalf("the victim's request sent as is: %v, want %v: %s", got, tt.wantAsSent, calls[len(calls)-1])
			}
		})
	}
}
