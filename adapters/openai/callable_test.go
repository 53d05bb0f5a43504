package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
)

// TestCallableOnlyWhatTheModelWasShown: a function_call of a tool the
// request did not show the model — a deferred tool no search loaded, a
// name no tool has, a tool's name in other case or with a look-alike
// letter, no name — is not callable, with an error saying what to do;
// Route alone would route the deferred tool's call. A tool loaded by a
// tool_search_output of the reply itself is callable.
func TestCallableOnlyWhatTheModelWasShown(t *testing.T) {
	t.Parallel()
	const deferred = "codehost__create_issue"
	ts := toolset(t, demo.Snapshot(), openai.Config{})
	if _, ok := ts.Route("", deferred); !ok {
		t.Fatalf("%s does not route", deferred)
	}
	conv := &openai.Conversation{Input: []responses.ResponseInputItemUnionParam{openai.UserMessage("open an issue")}}
	turn, err := ts.Turn(conv, responses.ResponseNewParams{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Decision.SearchOn || !turn.Decision.IsDeferred(deferred) {
		t.Fatalf("%s is not deferred in this turn", deferred)
	}
	var reply responses.Response
	if err := json.Unmarshal([]byte(`{"id":"resp_1","object":"response","model":"gpt-test","output":[`+
		`{"type":"tool_search_call","id":"tsc_1","call_id":"call_1","execution":"server","status":"completed","arguments":{"query":"issue"}},`+
		`{"type":"tool_search_output","id":"tso_1","call_id":"call_1","execution":"server","status":"completed","tools":[{"type":"namespace","name":"codehost","description":"","tools":[{"type":"function","name":"create_issue","parameters":{"type":"object"},"defer_loading":true}]}]},`+
		`{"type":"function_call","id":"fc_1","call_id":"call_2","namespace":"codehost","name":"create_issue","arguments":"{}"}]}`), &reply); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, namespace, call string
		reply                 *responses.Response
		want                  string // "" when callable, else in the error
	}{
		{"deferred, never searched", "", deferred, nil, `the tool "codehost__create_issue" is deferred and has not been loaded`},
		{"deferred, never searched, by namespace", "codehost", "create_issue", nil, `the tool "codehost__create_issue" is deferred and has not been loaded`},
		{"deferred, in other case", "", strings.ToUpper(deferred), nil, `did you mean the deferred tool "codehost__create_issue"?`},
		{"a look-alike letter (Cyrillic i)", "", "codehost__create_\u0456ssue", nil, "codehost__create_\u0456ssue"},
		{"no such tool", "", "codehost__delete_everything", nil, "codehost__delete_everything"},
		{"no name", "", "", nil, "no tool named"},
		{"a name of 64 KiB", "", strings.Repeat("x", 64<<10), nil, "no tool named"},
		{"loaded by the reply's search", "codehost", "create_issue", &reply, ""},
		{"the reply loads another tool, not this one", "", "codehost__list_issues", &reply, "is deferred and has not been loaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := turn.Callable(tt.namespace, tt.call, tt.reply)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Callable(%q, %.40q) = %v, want callable", tt.namespace, tt.call, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Callable(%q, %.40q) = %v, want an error with %q", tt.namespace, tt.call, err, tt.want)
			case err != nil && len(err.Error()) > 512:
				t.Fatalf("the error echoes %d bytes of the name", len(err.Error()))
			}
		})
	}
}
