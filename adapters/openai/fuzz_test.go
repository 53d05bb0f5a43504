package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/discovery"
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzReadHistory feeds arbitrary JSON items and messages to the history
// readers and to Turn under every strategy: nothing panics, every loaded
// name is a valid wire name, and no request carries defer_loading without
// a tool_search tool.
func FuzzReadHistory(f *testing.F) {
	f.Add(`{"type":"tool_search_output","call_id":"c","tools":[{"type":"namespace","name":"codehost__issue","tools":[{"type":"function","name":"create_issue"}]}]}`)
	f.Add(`{"type":"tool_search_output","tools":[{"type":"function","name":"teamchat__postMessage"},{"type":"namespace","name":"x__y","tools":[{"name":"z"}]}]}`)
	f.Add(`{"role":"developer","content":"<deferred-tools>\nadded:\na__b\n</deferred-tools>"}`)
	f.Add(`{"role":"tool","tool_call_id":"1","content":"Loaded tools: a__b"}`)
	f.Add(`{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"gone__x","description":"d","tools":[{"type":"function","name":"y","parameters":{}}]}]}`)
	f.Add(`{"type":"tool_search_call","call_id":"c","execution":"client","arguments":"{\"query\":\"issue\"}"}`)
	f.Add(`{"type":"function_call","call_id":"c","name":"create_issue","namespace":"codehost__issue","arguments":"{}"}`)
	ts := toolset(f, demo.Snapshot(), openai.Config{})
	strategyTS := map[[2]int]*openai.Toolset{}
	for _, s := range []openai.Strategy{openai.StrategyToolSearch, openai.StrategyAdditionalTools, openai.StrategyFunctions} {
		for _, noNS := range []bool{false, true} {
			strategyTS[[2]int{int(s), boolInt(noNS)}] = toolset(f, demo.Snapshot(), openai.Config{Strategy: s, NoNamespaces: noNS})
		}
	}
	f.Fuzz(func(t *testing.T, item string) {
		if !json.Valid([]byte(item)) {
			return
		}
		for _, e := range ts.ReadResponses([]json.RawMessage{json.RawMessage(item)}) {
			for _, n := range e.Names {
				if n == "" || discovery.SafeName(n, discovery.MaxNameLen) != n {
					t.Fatalf("loaded %q, not a wire name", n)
				}
			}
		}
		for _, s := range []openai.Strategy{openai.StrategyToolSearch, openai.StrategyAdditionalTools, openai.StrategyFunctions} {
			for _, noNS := range []bool{false, true} {
				ts := strategyTS[[2]int{int(s), boolInt(noNS)}]
				conv := &openai.Conversation{Input: []responses.ResponseInputItemUnionParam{
					param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item))}}
				turn, err := ts.Turn(conv, responses.ResponseNewParams{Model: "gpt-test"})
				if err != nil {
					continue // an item the SDK cannot marshal is refused with an error
				}
				body, err := json.Marshal(turn.Params)
				if err != nil {
					t.Fatalf("%s: request does not marshal: %v", s, err)
				}
				if s != openai.StrategyToolSearch && strings.Contains(string(body), `"defer_loading":true`) && !strings.Contains(item, `"defer_loading"`) {
					t.Fatalf("%s: defer_loading without tool_search: %s", s, body)
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
