package anthropic_test

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
)

// TestCallableOnlyWhatTheModelWasShown: a model's tool_use of a tool the
// request did not show it — a deferred tool no search loaded, a name no
// tool has, a tool's name in other case or with a look-alike letter, no
// name — is not callable, with an error saying what to do; Resolve alone
// would route the deferred tool's call. A tool loaded by a search in the
// history, or by the API's own search in the reply itself, is callable.
func TestCallableOnlyWhatTheModelWasShown(t *testing.T) {
	t.Parallel()
	const deferred = "codehost__create_issue"
	ts := toolset(t, demoSnap(), anthropic.Config{})
	if _, ok := ts.Resolve(deferred); !ok {
		t.Fatalf("%s is not in the demo catalog", deferred)
	}
	turnOf := func(t *testing.T, msgs ...string) *anthropic.Turn {
		t.Helper()
		conv := &anthropic.Conversation{}
		for _, m := range msgs {
			conv.Messages = append(conv.Messages, param.Override[sdk.MessageParam](json.RawMessage(m)))
		}
		turn, err := ts.Turn(conv, sdk.MessageNewParams{Model: "claude-test", MaxTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	const ask = `{"role":"user","content":[{"type":"text","text":"open an issue"}]}`
	loadedHistory := []string{ask,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"issue"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"` + deferred + `"}]}]}`,
	}
	var serverReply sdk.Message
	if err := json.Unmarshal([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use","content":[`+
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"issue"}},`+
		`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"`+deferred+`"}]}},`+
		`{"type":"tool_use","id":"toolu_2","name":"`+deferred+`","input":{}}]}`), &serverReply); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		history []string
		reply   *sdk.Message
		call    string
		want    string // "" when callable, else in the error
	}{
		{"the search tool", []string{ask}, nil, "tool_search", ""},
		{"a tool sent without defer_loading", []string{ask}, nil, "files__read_file", ""},
		{"deferred, never searched", []string{ask}, nil, deferred, `tool "codehost__create_issue" is deferred and has not been loaded: search for it with tool_search first`},
		{"deferred, in other case", []string{ask}, nil, strings.ToUpper(deferred), `did you mean the deferred tool "codehost__create_issue"?`},
		{"a shown tool in other case", []string{ask}, nil, "Files__Read_File", `did you mean "files__read_file"?`},
		{"a look-alike letter (Cyrillic i)", []string{ask}, nil, "codehost__create_\u0456ssue", "there is no tool named \"codehost__create_\u0456ssue\""},
		{"no such tool", []string{ask}, nil, "codehost__delete_everything", `there is no tool named "codehost__delete_everything"`},
		{"no name", []string{ask}, nil, "", `there is no tool named ""`},
		{"a name of 64 KiB", []string{ask}, nil, strings.Repeat("x", 64<<10), "there is no tool named"},
		{"loaded by a search in the history", loadedHistory, nil, deferred, ""},
		{"loaded by the API's search in the reply", []string{ask}, &serverReply, deferred, ""},
		{"the reply loads another tool, not this one", []string{ask}, &serverReply, "codehost__list_issues", `tool "codehost__list_issues" is deferred and has not been loaded`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := turnOf(t, tt.history...).Callable(tt.call, tt.reply)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Callable(%.40q) = %v, want callable", tt.call, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Callable(%.40q) = %v, want an error with %q", tt.call, err, tt.want)
			case err != nil && len(err.Error()) > 512:
				t.Fatalf("the error echoes %d bytes of the name", len(err.Error()))
			}
		})
	}
}
