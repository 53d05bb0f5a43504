package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// callingModel calls the tool named call with empty input, then ends the
// turn with "Done: " and the text of the result it got.
func callingModel(call string) func(*anthropictest.Request) anthropictest.Reply {
	return func(req *anthropictest.Request) anthropictest.Reply {
		last := req.Messages[len(req.Messages)-1]
		for _, b := range last.Blocks {
			if b.Type == "tool_result" && b.ToolUseID == "toolu_call" {
				var text strings.Builder
				for _, c := range b.Inner {
					text.WriteString(c.Text)
				}
				return anthropictest.Reply{StopReason: "end_turn", Content: []any{map[string]any{"type": "text", "text": "Done: " + text.String()}}}
			}
		}
		return anthropictest.Reply{StopReason: "tool_use", Content: []any{
			map[string]any{"type": "tool_use", "id": "toolu_call", "name": call, "input": map[string]any{}},
		}}
	}
}

// clientView is what a client got: its blocks' types and tool names, its
// text, and the stop reason, read from a message or from a stream.
type clientView struct {
	uses []string // names of tool_use blocks
	text string
	stop string
}

func readClientView(t *testing.T, stream bool, body []byte) clientView {
	t.Helper()
	var v clientView
	if !stream {
		var m struct {
			Content []struct {
				Type, Name, Text string
			}
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("the answer is not a message: %v: %.300s", err, body)
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				v.uses = append(v.uses, b.Name)
			}
			v.text += b.Text
		}
		v.stop = m.StopReason
		return v
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type         string
			ContentBlock struct{ Type, Name, Text string } `json:"content_block"`
			Delta        struct {
				Text       string
				StopReason string `json:"stop_reason"`
			}
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		switch e.Type {
		case "content_block_start":
			if e.ContentBlock.Type == "tool_use" {
				v.uses = append(v.uses, e.ContentBlock.Name)
			}
			v.text += e.ContentBlock.Text
		case "content_block_delta":
			v.text += e.Delta.Text
		case "message_delta":
			v.stop = e.Delta.StopReason
		case "error":
			t.Fatalf("the stream ended with an error: %s", data)
		}
	}
	return v
}

// TestAttackCallOfToolNotGiven: under server-side search emulation, a
// model that calls a tool it was not given — a deferred tool no search
// loaded, a name no tool has, a name that differs from a tool's only in
// case or by a look-alike letter, no name, a huge name — does not get the
// call relayed to the client to run, nor the tool loaded: the proxy
// answers the call with an error that says what to do, the model's turn
// goes on, and the client gets its end. A call of a tool the model was
// given still reaches the client.
func TestAttackCallOfToolNotGiven(t *testing.T) {
	t.Parallel()
	const listIssues = "mcp__github__list_issues" // deferred, never searched
	tests := []struct {
		name, call string
		// relayed: the client gets the call (a tool the model was given).
		relayed bool
		want    string // in the model's error, echoed in the client's text
	}{
		{"deferred, never searched", listIssues, false, `Tool "mcp__github__list_issues" is deferred and has not been loaded: load it with tool_search_tool_bm25 first (query "select:mcp__github__list_issues")`},
		{"no such tool", "mcp__github__delete_repository", false, `There is no tool named "mcp__github__delete_repository". Use only the tools you were given`},
		{"a deferred tool's name in other case", strings.ToUpper(listIssues), false, `Did you mean the deferred tool "mcp__github__list_issues"?`},
		{"a given tool's name in other case", "bash", false, `There is no tool named "bash" (tool names are exact). Did you mean "Bash"?`},
		{"a look-alike letter (Cyrillic i)", "mcp__github__l\u0456st_issues", false, "There is no tool named"},
		{"no name", "", false, `There is no tool named ""`},
		{"a name of 64 KiB", strings.Repeat("x", 64<<10), false, "There is no tool named"},
		{"a given tool", "Bash", true, ""},
	}
	for _, stream := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if stream {
				name += ", streamed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true, Model: callingModel(tt.call)}})
				_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate})
				body := mustMarshal(t, map[string]any{
					"model": "claude-test", "max_tokens": 256, "stream": stream,
					"tools":    []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(`{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`), json.RawMessage(deferredTools[3])},
					"messages": []json.RawMessage{json.RawMessage(`{"role":"user","content":"list the issues of toolsearch"}`)},
				})
				status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", nil, body)
				if status != http.StatusOK {
					t.Fatalf("status %d, want 200: %.400s", status, out)
				}
				v := readClientView(t, stream, out)
				if tt.relayed {
					if len(v.uses) != 1 || v.uses[0] != tt.call || v.stop != "tool_use" {
						t.Fatalf("the call of a given tool: client got tool_use %q, stop %q; want [%q], tool_use", v.uses, v.stop, tt.call)
					}
					return
				}
				if len(v.uses) != 0 {
					t.Fatalf("the client got the call to run: tool_use %.100q", v.uses)
				}
				if v.stop != "end_turn" || !strings.HasPrefix(v.text, "Done: ") || !strings.Contains(v.text, tt.want) {
					t.Fatalf("stop %q, text %.400q; want end_turn and the error %q", v.stop, v.text, tt.want)
				}
				if len(v.text) > 1024 {
					t.Fatalf("the error echoes %d bytes of the name; want it clipped", len(v.text))
				}
				for i, r := range up.Requests() {
					var sent struct {
						Tools []struct {
							Name  string
							Defer bool `json:"defer_loading"`
						}
					}
					_ = json.Unmarshal(r.Body, &sent)
					for _, tl := range sent.Tools {
						if tl.Name == listIssues && !tl.Defer {
							t.Fatalf("upstream call %d: the deferred tool was loaded without a search", i)
						}
					}
				}
			})
		}
	}
}
