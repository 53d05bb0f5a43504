package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/internal/sse"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// Claude Code's wire shapes (DESIGN.md §4).
const (
	toolSearchTool = `{"name":"ToolSearch","description":"Search deferred tools","input_schema":{"type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"number"}},"required":["query"]}}`
	ccBetas        = "claude-code-20250219,advanced-tool-use-2025-11-20,mid-conversation-system-2026-04-07,fine-grained-tool-streaming-2025-05-14"
)

func ccHeader() http.Header {
	h := http.Header{}
	h.Set("x-api-key", "sk-test-secret")
	h.Set("anthropic-version", "2023-06-01")
	h.Set("anthropic-beta", ccBetas)
	return h
}

// ccBody is a request as Claude Code sends it: streaming, the core tools
// and ToolSearch, the tools discovered so far with defer_loading, and a
// system-role message announcing the deferred names.
func ccBody(t testing.TB, discovered []string, msgs ...any) []byte {
	tools := []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(toolSearchTool)}
	for _, d := range deferredTools {
		for _, n := range discovered {
			if strings.Contains(d, `"`+n+`"`) {
				tools = append(tools, json.RawMessage(d))
			}
		}
	}
	announce := map[string]any{"role": "system", "content": "<available-deferred-tools>\nmcp__slack__post_message\nmcp__slack__list_channels\nmcp__github__create_pull_request\nmcp__github__list_issues\nmcp__jira__create_ticket\n</available-deferred-tools>"}
	all := append([]any{announce}, msgs...)
	return mustMarshal(t, map[string]any{"model": "claude-standin", "max_tokens": 512, "stream": true, "tools": tools, "messages": all})
}

// readStream accumulates a streamed message.
func readStream(t testing.TB, body io.Reader) (*sdk.Message, []string) {
	t.Helper()
	r := sse.NewReader(body)
	m := &sdk.Message{}
	var names []string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return m, names
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		names = append(names, ev.Name)
		if ev.Name == "error" {
			t.Fatalf("stream error: %s", ev.Data)
		}
		var u sdk.MessageStreamEventUnion
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			t.Fatalf("event %s: %v", ev.Data, err)
		}
		if err := m.Accumulate(u); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
}

func postStream(ctx context.Context, t testing.TB, url string, body []byte) *sdk.Message {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages?beta=true", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = ccHeader()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	m, _ := readStream(t, resp.Body)
	return m
}

// TestClientSideSearchCycle plays Claude Code through the proxy in emulate
// mode against an upstream that refuses tool_reference, defer_loading and
// system-role messages: search, load, call, answer. Configured, the proxy
// folds system messages from the start; unknown, it sends them, folds them
// after the upstream's first refusal, retries once and remembers.
func TestClientSideSearchCycle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name               string
		toolSearch, system proxy.Support
		refusals           []string
	}{
		{name: "configured", toolSearch: proxy.Unsupported, system: proxy.Unsupported},
		{name: "system messages probed", toolSearch: proxy.Unsupported, system: proxy.Unknown,
			refusals: []string{"Input should be 'user' or 'assistant'"}},
		{name: "both probed", toolSearch: proxy.Unknown, system: proxy.Unknown,
			refusals: []string{"Input should be 'user' or 'assistant'", "defer_loading: Extra inputs are not permitted"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clientSideSearchCycle(t, tt.toolSearch, tt.system, tt.refusals)
		})
	}
}

func clientSideSearchCycle(t *testing.T, toolSearch, system proxy.Support, wantRefusals []string) {
	ctx := testCtx(t)
	refusals := len(wantRefusals)
	up := brokenUpstream(t, "ToolSearch")
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: toolSearch, SystemMessages: system})
	task := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "post a message to the slack channel"}}}

	m1 := postStream(ctx, t, url, ccBody(t, nil, task))
	if len(m1.Content) != 1 || m1.Content[0].Name != "ToolSearch" {
		t.Fatalf("turn 1 = %s", m1.RawJSON())
	}
	use := m1.Content[0]
	answer := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": use.ID, "content": []any{
			map[string]any{"type": "tool_reference", "tool_name": "mcp__slack__post_message"}}},
		map[string]any{"type": "text", "text": "Tool loaded."},
	}}
	asst1 := json.RawMessage(mustMarshal(t, m1.ToParam()))
	m2 := postStream(ctx, t, url, ccBody(t, []string{"mcp__slack__post_message"}, task, asst1, answer))
	var call sdk.ContentBlockUnion
	for _, b := range m2.Content {
		if b.Type == "tool_use" {
			call = b
		}
	}
	if call.Name != "mcp__slack__post_message" {
		t.Fatalf("turn 2 = %s (rejections %q)", m2.RawJSON(), up.Inner.Rejections())
	}
	asst2 := json.RawMessage(mustMarshal(t, m2.ToParam()))
	done := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": call.ID, "content": "posted"}}}
	m3 := postStream(ctx, t, url, ccBody(t, []string{"mcp__slack__post_message"}, task, asst1, answer, asst2, done))
	if len(m3.Content) == 0 || !strings.HasPrefix(m3.Content[0].Text, "Done: posted") {
		t.Fatalf("turn 3 = %s", m3.RawJSON())
	}
	rej := up.Inner.Rejections()
	if len(rej) != refusals {
		t.Fatalf("upstream refused %q, want %d refusals", rej, refusals)
	}
	for i, r := range rej {
		if !strings.Contains(r, wantRefusals[i]) {
			t.Fatalf("refusal %d %q, want it to contain %q", i, r, wantRefusals[i])
		}
	}
	if n := len(up.Requests()); n != 3+refusals {
		t.Fatalf("%d upstream requests for 3 turns, want %d (the level is remembered)", n, 3+refusals)
	}
	probes := 0
	for i, r := range up.Requests() {
		body := string(r.Body)
		if strings.Contains(body, `"role":"system"`) || strings.Contains(body, `"defer_loading"`) {
			// A probe that carried what the client sent, and was refused.
			probes++
			continue
		}
		for _, bad := range []string{`"defer_loading"`, `"tool_reference"`, `"role":"system"`} {
			if strings.Contains(body, bad) {
				t.Errorf("upstream request %d holds %s", i, bad)
			}
		}
		if !strings.Contains(body, "<system-reminder>") {
			t.Errorf("upstream request %d lost the folded system message", i)
		}
		beta := r.Header.Get("anthropic-beta")
		// A request the upstream took before it refused tool search may
		// keep the tool-search beta; the system beta goes with the fold.
		if (toolSearch == proxy.Unsupported && strings.Contains(beta, "advanced-tool-use")) || strings.Contains(beta, "mid-conversation-system") || !strings.Contains(beta, "claude-code-20250219") {
			t.Errorf("upstream request %d anthropic-beta = %q", i, beta)
		}
		if r.Header.Get("x-api-key") != "sk-test-secret" || r.Header.Get("anthropic-version") != "2023-06-01" {
			t.Errorf("upstream request %d lost the client's credentials or version", i)
		}
		if r.URI != "/v1/messages?beta=true" {
			t.Errorf("upstream request %d URI = %q", i, r.URI)
		}
	}
	if probes != refusals {
		t.Errorf("%d requests went as the client sent them, want %d (the refused probes)", probes, refusals)
	}
}

// TestPassthroughBytes checks that passthrough changes no byte of a
// request (tool_reference, defer_loading, system-role messages, unknown
// block types) nor of the response, streamed or not.
func TestPassthroughBytes(t *testing.T) {
	t.Parallel()
	const jsonAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"future_block","x":[1,2]},{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	const sseAnswer = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"future_block\",\"x\":1}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	var got struct {
		body   []byte
		header http.Header
	}
	raw := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got.body, _ = io.ReadAll(r.Body)
		got.header = r.Header.Clone()
		if bytes.Contains(got.body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, sseAnswer)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, jsonAnswer)
	})
	for _, tc := range []struct {
		name   string
		stream bool
		want   string
	}{
		{"json", false, jsonAnswer},
		{"stream", true, sseAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: the raw upstream records one request at a time.
			ctx := testCtx(t)
			_, url := startProxy(t, proxy.Config{Upstream: raw, Mode: proxy.ModePassthrough})
			body := []byte(`{"model":"m",  "max_tokens":5,"stream":` + map[bool]string{true: "true", false: "false"}[tc.stream] +
				`,"tools":[{"name":"ToolSearch","input_schema":{"type":"object"}},{"name":"mcp__a__b","input_schema":{"type":"object"},"defer_loading":true}],` +
				`"messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_reference","tool_name":"mcp__a__b"}]},{"type":"mystery","z":"é"}]}]}`)
			status, _, out := postJSON(ctx, t, url+"/v1/messages?beta=true", ccHeader(), body)
			if status != 200 || string(out) != tc.want {
				t.Fatalf("status %d, response bytes changed:\n%s\nwant\n%s", status, out, tc.want)
			}
			if !bytes.Equal(got.body, body) {
				t.Fatalf("request bytes changed:\n%s\nwant\n%s", got.body, body)
			}
			if got.header.Get("anthropic-beta") != ccBetas || got.header.Get("x-api-key") != "sk-test-secret" {
				t.Fatalf("headers changed")
			}
		})
	}
}

// TestPassthroughSupportingUpstream runs Claude Code's second turn through
// passthrough against a stand-in that supports tool search.
func TestPassthroughSupportingUpstream(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := proxytest.New(t, proxytest.Options{SystemMessages: true})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, ToolSearch: proxy.Supported})
	task := map[string]any{"role": "user", "content": "post a message to the slack channel"}
	use := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": map[string]any{"query": "slack"}}}}
	answer := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "tool_reference", "tool_name": "mcp__slack__post_message"}}},
		map[string]any{"type": "text", "text": "Tool loaded."}}}
	body := ccBody(t, []string{"mcp__slack__post_message"}, task, use, answer)
	m := postStream(ctx, t, url, body)
	if got := up.Messages(); len(got) != 1 || !bytes.Equal(got[0], body) {
		t.Fatalf("the upstream did not get the bytes sent")
	}
	if len(m.Content) == 0 {
		t.Fatalf("empty answer")
	}
}

// TestOtherRoutes checks count_tokens (rewritten in emulate mode, as the
// upstream refuses defer_loading there too) and /v1/models (passed
// through).
func TestOtherRoutes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := brokenUpstream(t, "")
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"client-side", mustMarshal(t, map[string]any{"model": "m", "tools": []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(deferredTools[0])},
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}})},
		{"server-side", mustMarshal(t, map[string]any{"model": "m", "tools": serverSearchTools("tool_search_tool_regex_20251119"),
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}})},
	} {
		status, _, out := postJSON(ctx, t, url+"/v1/messages/count_tokens", ccHeader(), tc.body)
		if status != 200 || !strings.Contains(string(out), "input_tokens") {
			t.Errorf("count_tokens %s: %d %s", tc.name, status, out)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/models", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "claude-standin") {
		t.Errorf("models: %d %s", resp.StatusCode, b)
	}
}
