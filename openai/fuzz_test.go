package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolsearch/toolsearch/catalog/demo"
	"github.com/toolsearch/toolsearch/openai"
)

// FuzzReadHistory feeds arbitrary JSON items and messages to the history
// readers: nothing panics, and every loaded name is a tool of the catalog.
func FuzzReadHistory(f *testing.F) {
	f.Add(`{"type":"tool_search_output","call_id":"c","tools":[{"type":"namespace","name":"codehost__issue","tools":[{"type":"function","name":"create_issue"}]}]}`)
	f.Add(`{"type":"tool_search_output","tools":[{"type":"function","name":"teamchat__postMessage"},{"type":"namespace","name":"x__y","tools":[{"name":"z"}]}]}`)
	f.Add(`{"role":"developer","content":"<deferred-tools>\nadded:\na__b\n</deferred-tools>"}`)
	f.Add(`{"role":"tool","tool_call_id":"1","content":"Loaded tools: a__b"}`)
	ts := toolset(f, demo.Snapshot(), openai.Config{})
	f.Fuzz(func(t *testing.T, item string) {
		if !json.Valid([]byte(item)) {
			return
		}
		for _, e := range ts.ReadResponses([]json.RawMessage{json.RawMessage(item)}) {
			for _, n := range e.Names {
				if _, ok := ts.Route("", n); !ok {
					t.Fatalf("loaded %q, not a catalog tool", n)
				}
			}
		}
		openai.ReadChat([]json.RawMessage{json.RawMessage(`{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"tool_search"}}]}`), json.RawMessage(item)}, "tool_search")
	})
}

// FuzzToolSearchArguments answers arbitrary arguments: nothing panics and
// the items are valid JSON.
func FuzzToolSearchArguments(f *testing.F) {
	f.Add(`{"query":"create issue","max_results":3}`)
	f.Add(`"{\"query\":\"select:codehost__create_issue\"}"`)
	f.Add(`{"query":"(?i)^kube__.*pod"}`)
	f.Add(`{"max_results":-1}`)
	f.Add(`{"query":"scale a deployment","queries":["select:teamchat__postMessage","pod logs","pod logs",""],"max_results":2}`)
	f.Add(`{"queries":["a","b","c","d","e","f","g","h","i"]}`)
	f.Add(`{"queries":[null,"^kube__"]}`)
	ts := toolset(f, demo.Snapshot(), openai.Config{})
	f.Fuzz(func(t *testing.T, args string) {
		ans, err := ts.AnswerToolSearch(context.Background(), "call_1", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ans.Items)
		if err != nil || !json.Valid(b) {
			t.Fatalf("items %s: %v", b, err)
		}
		chat, err := ts.AnswerChatSearch(context.Background(), "call_1", args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(chat.Message); err != nil {
			t.Fatal(err)
		}
	})
}
