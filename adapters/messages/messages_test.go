package messages_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

func raws(t testing.TB, msgs ...string) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		if !json.Valid([]byte(m)) {
			t.Fatalf("message %d is not JSON: %s", i, m)
		}
		out[i] = json.RawMessage(m)
	}
	return out
}

// A conversation whose second search added a tool inline.
var inlineConversation = []string{
	`{"role":"user","content":"post to slack"}`,
	`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"tool_search","input":{"query":"slack"}}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Loaded tools: slack_post"}]}`,
	`{"role":"system","content":[{"type":"text","text":"note"},{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"slack_post","input_schema":{"type":"object"}}}}]}`,
}

// TestRenderHistory renders one history for each strategy: what each
// keeps and what it must never send.
func TestRenderHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		strat       messages.Strategy
		sent        bool // the found tool is in tools
		want, never []string
		changed     bool
	}{
		{strat: messages.Inline, want: []string{`"tool_definition"`, `"role":"system"`}},
		{strat: messages.ReferenceAdd, sent: true, changed: true,
			want: []string{`"tool_addition"`, `{"name":"slack_post","type":"tool_reference"}`, `"role":"system"`}, never: []string{`"tool_definition"`}},
		{strat: messages.ReferenceAdd, sent: false, changed: true,
			want: []string{`"role":"system"`, `"note"`}, never: []string{`"tool_definition"`, `"tool_addition"`}},
		{strat: messages.Classic, sent: true, changed: true,
			want: []string{"<system-reminder>\\nnote\\n</system-reminder>"}, never: []string{`"tool_addition"`, `"role":"system"`}},
		{strat: messages.Plain, sent: true, changed: true,
			want: []string{"<system-reminder>"}, never: []string{`"tool_addition"`, `"role":"system"`}},
	} {
		t.Run(tc.strat.String(), func(t *testing.T) {
			t.Parallel()
			in := raws(t, inlineConversation...)
			out, changed := messages.RenderHistory(in, tc.strat, func(n string) bool { return tc.sent && n == "slack_post" }, func(string) bool { return false })
			all := string(mustJoin(t, out))
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			for _, s := range tc.want {
				if !strings.Contains(all, s) {
					t.Errorf("rendered history lacks %s: %s", s, all)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(all, s) {
					t.Errorf("rendered history carries %s: %s", s, all)
				}
			}
			// The messages before the tool change keep their bytes.
			for i := range 3 {
				if string(out[i]) != inlineConversation[i] && tc.strat != messages.Classic && tc.strat != messages.Plain {
					t.Errorf("message %d changed: %s", i, out[i])
				}
			}
		})
	}
}

// TestRenderCompaction: a compaction block's tool_changes under each
// strategy. Inline keeps them; ReferenceAdd names a tool that is sent by
// reference and leaves out one that is not (the API would refuse a
// reference to a tool it lacks); a hidden tool goes under every strategy.
func TestRenderCompaction(t *testing.T) {
	t.Parallel()
	compaction := `{"role":"assistant","content":[{"type":"compaction","content":"summary","tool_changes":[` +
		`{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"slack_post","input_schema":{"type":"object"}}}},` +
		`{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"unsent_tool","input_schema":{"type":"object"}}}},` +
		`{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"hidden_tool","input_schema":{"type":"object"}}}},` +
		`{"type":"tool_removal","tool":{"type":"tool_reference","name":"old_tool"}}]}]}`
	conv := []string{`{"role":"user","content":"hi"}`, compaction, `{"role":"user","content":"go on"}`}
	sent := func(n string) bool { return n == "slack_post" || n == "hidden_tool" }
	hidden := func(n string) bool { return n == "hidden_tool" }
	for _, tc := range []struct {
		strat       messages.Strategy
		want, never []string
	}{
		{strat: messages.Inline,
			want:  []string{`"name":"slack_post","input_schema"`, `"name":"unsent_tool"`, `"old_tool"`},
			never: []string{`"hidden_tool"`}},
		{strat: messages.ReferenceAdd,
			want:  []string{`{"tool":{"name":"slack_post","type":"tool_reference"},"type":"tool_addition"}`, `"old_tool"`, `"summary"`},
			never: []string{`"tool_definition"`, `"unsent_tool"`, `"hidden_tool"`}},
	} {
		t.Run(tc.strat.String(), func(t *testing.T) {
			t.Parallel()
			out, changed := messages.RenderHistory(raws(t, conv...), tc.strat, sent, hidden)
			if !changed {
				t.Error("nothing changed, with a hidden tool in the compaction")
			}
			all := string(mustJoin(t, out))
			for _, s := range tc.want {
				if !strings.Contains(all, s) {
					t.Errorf("rendered history lacks %s: %s", s, all)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(all, s) {
					t.Errorf("rendered history carries %s: %s", s, all)
				}
			}
		})
	}
}

// mustJoin joins messages as a JSON array, bytes as they are.
func mustJoin(t testing.TB, msgs []json.RawMessage) []byte {
	t.Helper()
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		if !json.Valid(m) {
			t.Fatalf("rendered message %d is not JSON: %s", i, m)
		}
		parts[i] = string(m)
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

// TestRefusalOfLevels: each refused feature maps to the richest strategy
// that does without it.
func TestRefusalOfLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg     string
		feature string
		below   messages.Strategy
	}{
		{"messages.3.content.0.tool: Input tag 'tool_definition' found using 'type' does not match any of the expected tags", "tool_definition", messages.ReferenceAdd},
		{"Unexpected value(s) `inline-tools-2026-09-15` for the `anthropic-beta` header.", messages.BetaInlineTools, messages.ReferenceAdd},
		{"messages.3.content.0: Input tag 'tool_addition' found using 'type' does not match any of the expected tags", "tool_addition", messages.Classic},
		{"messages.3.role: Input should be 'user' or 'assistant'", "system message", messages.Classic},
		{"tools.2.defer_loading: Extra inputs are not permitted", "defer_loading", messages.Plain},
	} {
		r, ok := messages.RefusalOf(tc.msg)
		if !ok || r.Feature != tc.feature || r.Below != tc.below {
			t.Errorf("RefusalOf(%q) = %+v, %v; want %s below %s", tc.msg, r, ok, tc.feature, tc.below)
		}
	}
	if r, ok := messages.RefusalOf("messages.2: Tool reference 'x' not found in available tools"); ok {
		t.Errorf("a dangling reference read as a refusal: %+v", r)
	}
}

// FuzzRenderHistory: any messages array renders to JSON messages under
// every strategy, never panicking, and the plain strategies leave no
// system message.
func FuzzRenderHistory(f *testing.F) {
	f.Add(`[` + strings.Join(inlineConversation, ",") + `]`)
	f.Add(`[{"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"x"}}]},{"role":"assistant","content":[{"type":"compaction","tool_changes":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"x"}}]}]}]`)
	f.Add(`[{"role":"system","content":"text"},{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":7}}]}]`)
	f.Add(`[{"role":"system"},1,"x",null]`)
	f.Fuzz(func(t *testing.T, in string) {
		var msgs []json.RawMessage
		if json.Unmarshal([]byte(in), &msgs) != nil {
			return
		}
		for _, s := range []messages.Strategy{messages.Inline, messages.ReferenceAdd, messages.Classic, messages.Plain} {
			out, _ := messages.RenderHistory(msgs, s, func(string) bool { return true }, func(string) bool { return false })
			for i, m := range out {
				if !json.Valid(m) {
					t.Fatalf("%s: message %d is not JSON: %s", s, i, m)
				}
				if (s == messages.Classic || s == messages.Plain) && messages.IsSystemMessage(m) {
					t.Fatalf("%s left a system message: %s", s, m)
				}
			}
		}
	})
}
