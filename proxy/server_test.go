package proxy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/proxy"
)

// TestServerSideSearchGoSDK runs the whole search → load → call cycle of
// the API's server-side tool search through the proxy in emulate mode,
// against an upstream that refuses tool search, with the Go SDK as client,
// streaming and not.
func TestServerSideSearchGoSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		typ    string
		stream bool
	}{
		{"bm25", "tool_search_tool_bm25_20251119", false},
		{"bm25 streaming", "tool_search_tool_bm25_20251119", true},
		{"regex", "tool_search_tool_regex_20251119", false},
		{"regex streaming", "tool_search_tool_regex_20251119", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			searchName := strings.TrimSuffix(tc.typ, "_20251119")
			up := brokenUpstream(t, searchName)
			_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
			client := goClient(url)
			task := "post a message to the slack channel"
			if tc.typ == "tool_search_tool_regex_20251119" {
				task = "slack.*post_message"
			}
			params := sdk.MessageNewParams{
				Model:     "claude-standin",
				MaxTokens: 1024,
				Tools:     serverSearchTools(tc.typ),
				Messages:  []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(task))},
			}
			send := func() *sdk.Message {
				t.Helper()
				if !tc.stream {
					m, err := client.Messages.New(ctx, params)
					if err != nil {
						t.Fatalf("Messages.New: %v (upstream rejections %q)", err, up.Inner.Rejections())
					}
					return m
				}
				s := client.Messages.NewStreaming(ctx, params)
				m := &sdk.Message{}
				for s.Next() {
					if err := m.Accumulate(s.Current()); err != nil {
						t.Fatalf("Accumulate: %v", err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("stream: %v (upstream rejections %q)", err, up.Inner.Rejections())
				}
				return m
			}
			m := send()
			want := []string{"server_tool_use", "tool_search_tool_result", "text", "tool_use"}
			if got := blockTypes(m); !slices.Equal(got, want) {
				t.Fatalf("blocks = %v, want %v\n%s", got, want, m.RawJSON())
			}
			if !strings.HasPrefix(m.Content[0].ID, "srvtoolu_") || m.Content[0].Name != searchName {
				t.Errorf("server_tool_use = %s", m.Content[0].RawJSON())
			}
			res := m.Content[1].AsToolSearchToolResult()
			if res.ToolUseID != m.Content[0].ID {
				t.Errorf("tool_search_tool_result.tool_use_id = %q, want %q", res.ToolUseID, m.Content[0].ID)
			}
			refs := res.Content.AsResponseToolSearchToolSearchResultBlock().ToolReferences
			if len(refs) == 0 || refs[0].ToolName != "mcp__slack__post_message" {
				t.Fatalf("tool_references = %s", m.Content[1].RawJSON())
			}
			call := m.Content[3]
			if call.Name != "mcp__slack__post_message" || m.StopReason != "tool_use" {
				t.Fatalf("call = %s, stop %q", call.RawJSON(), m.StopReason)
			}
			if m.Usage.InputTokens == 0 {
				t.Errorf("usage not summed: %s", m.Usage.RawJSON())
			}

			// The client runs the tool and sends everything back, search
			// blocks included.
			params.Messages = append(params.Messages, m.ToParam(),
				sdk.NewUserMessage(sdk.NewToolResultBlock(call.ID, "posted", false)))
			m2 := send()
			if len(m2.Content) == 0 || !strings.HasPrefix(m2.Content[0].Text, "Done: posted") {
				t.Fatalf("final turn = %s", m2.RawJSON())
			}
			if rej := up.Inner.Rejections(); len(rej) > 0 {
				t.Fatalf("the upstream refused %q", rej)
			}
			// What the upstream saw: no tool search anywhere, and the
			// found tool sent in full.
			for i, body := range up.Messages() {
				for _, bad := range []string{`"defer_loading"`, `"tool_reference"`, `"server_tool_use"`, `"tool_search_tool_result"`, `_20251119`} {
					if strings.Contains(string(body), bad) {
						t.Errorf("upstream request %d holds %s", i, bad)
					}
				}
			}
			last := up.Messages()[len(up.Messages())-1]
			var sent struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(last, &sent); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range sent.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "mcp__slack__post_message") || slices.Contains(names, "mcp__jira__create_ticket") {
				t.Errorf("last upstream tools = %v", names)
			}
		})
	}
}

// TestServerSideStreamEvents checks the event sequence of an emulated
// server-side search turn: the API's event types in order, indexes
// counting from 0 without gaps.
func TestServerSideStreamEvents(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := brokenUpstream(t, "tool_search_tool_bm25")
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	body := mustMarshal(t, map[string]any{
		"model": "claude-standin", "max_tokens": 100, "stream": true,
		"tools":    json.RawMessage(toolsJSON(t, serverSearchTools("tool_search_tool_bm25_20251119"))),
		"messages": []any{map[string]any{"role": "user", "content": "post a message to the slack channel"}},
	})
	status, hdr, out := postJSON(ctx, t, url+"/v1/messages", nil, body)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q: %s", status, hdr.Get("Content-Type"), out)
	}
	var seq []string
	for _, line := range strings.Split(string(out), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
			} `json:"content_block"`
			Delta struct {
				Type string `json:"type"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		s := ev.Type
		switch ev.Type {
		case "content_block_start":
			s += ":" + ev.ContentBlock.Type + ":" + itoa(ev.Index)
		case "content_block_delta":
			s += ":" + ev.Delta.Type + ":" + itoa(ev.Index)
		case "content_block_stop":
			s += ":" + itoa(ev.Index)
		}
		seq = append(seq, s)
	}
	want := []string{
		"message_start", "ping",
		"content_block_start:server_tool_use:0", "content_block_delta:input_json_delta:0", "content_block_stop:0",
		"content_block_start:tool_search_tool_result:1", "content_block_stop:1",
		"content_block_start:text:2", "content_block_delta:text_delta:2", "content_block_stop:2",
		"content_block_start:tool_use:3", "content_block_delta:input_json_delta:3", "content_block_stop:3",
		"message_delta", "message_stop",
	}
	if !slices.Equal(seq, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func toolsJSON(t testing.TB, tools []sdk.ToolUnionParam) []byte {
	return mustMarshal(t, tools)
}

// TestServerSideSearchInlineRefused: on an endpoint without tool search,
// a request whose history holds a tool_addition with a whole definition
// (inline tools) is refused by an upstream that does not know inline
// tools either. The emulated search folds the system messages, the added
// tool going into tools as an ordinary tool, and answers; the next
// request of the model is folded at once.
func TestServerSideSearchInlineRefused(t *testing.T) {
	t.Parallel()
	const typ = "tool_search_tool_bm25_20251119"
	tools := []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(`{"type":"` + typ + `","name":"tool_search_tool_bm25"}`)}
	for _, d := range deferredTools {
		tools = append(tools, json.RawMessage(d))
	}
	body := mustMarshal(t, map[string]any{
		"model": "claude-standin", "max_tokens": 256, "tools": tools,
		"messages": []json.RawMessage{
			json.RawMessage(`{"role":"user","content":"post a message to the slack channel"}`),
			json.RawMessage(`{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":` + slackDef + `}}]}`),
		},
	})
	header := http.Header{"Anthropic-Beta": {betaToolChanges + "," + betaInlineTools}}
	backend := brokenUpstream(t, "tool_search_tool_bm25")
	front, seen := refusingFront(t, backend.URL, func(b []byte) (string, bool) {
		return "messages.1.content.0: Input tag 'tool_definition' found using 'type' does not match any of the expected tags",
			bytes.Contains(b, []byte(`"tool_definition"`))
	})
	_, url := startProxy(t, proxy.Config{Upstream: front, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	for turn := range 2 {
		before := len(seen())
		status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", header, body)
		if status != http.StatusOK {
			t.Fatalf("turn %d: status %d: %s", turn, status, out)
		}
		calls := seen()[before:]
		// The first turn costs one refused request; the second none.
		if refused := len(calls) > 0 && bytes.Contains(calls[0], []byte(`"tool_definition"`)); refused != (turn == 0) {
			t.Errorf("turn %d: first upstream request refused = %v", turn, refused)
		}
		last := calls[len(calls)-1]
		for _, bad := range []string{`"tool_definition"`, `"tool_addition"`, `"role":"system"`, `"defer_loading"`} {
			if bytes.Contains(last, []byte(bad)) {
				t.Errorf("turn %d: the request that got through still carries %s: %s", turn, bad, last)
			}
		}
		var sent struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(last, &sent); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(sent.Tools, func(x struct {
			Name string `json:"name"`
		}) bool {
			return x.Name == "mcp__slack__post_message"
		}) {
			t.Errorf("turn %d: the added tool is not among the tools sent: %s", turn, last)
		}
	}
}
