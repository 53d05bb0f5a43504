package openai_test

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// exampleSource is a catalog of two servers, indexed.
func exampleSource() openai.Source {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	tracker, _ := catalog.NewServer("tracker", []json.RawMessage{
		tool("create_issue", "Open an issue in the bug tracker."), tool("close_issue", "Close an issue of the bug tracker."),
	}, nil, false)
	chat, _ := catalog.NewServer("chat", []json.RawMessage{tool("post_message", "Post a message to a channel.")}, nil, false)
	snap, _ := catalog.NewSnapshot(tracker, chat)
	return openai.Source{Snapshot: snap, Index: search.Build(snap)}
}

// A turn's request is built without sending it. A model with tool_search
// gets it; one without searches through a function and gets what it finds
// in additional_tools; an endpoint that refused a feature gets the next
// strategy down, remembered for the session.
func ExampleToolset_Turn() {
	var endpoints openai.Endpoints
	endpoints.Refuse("https://compat.example.com", "gpt-5.4", openai.FeatureAdditionalTools, "unknown input item type additional_tools")
	for _, cfg := range []openai.Config{
		{},
		{NoToolSearch: true, NoToolSearchWhy: "the model predates tool_search"},
		{NoToolSearch: true, Endpoint: "https://compat.example.com", Endpoints: &endpoints},
	} {
		ts, err := openai.NewToolset(exampleSource(), cfg)
		if err != nil {
			panic(err)
		}
		conv := &openai.Conversation{Input: []responses.ResponseInputItemUnionParam{openai.UserMessage("Tell the team the deploy is done")}}
		turn, err := ts.Turn(conv, responses.ResponseNewParams{Model: "gpt-5.4"})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d tool(s) sent (%s)\n", turn.Strategy, turn.ToolsSent, turn.StrategyWhy)
	}
	// Output:
	// tool_search: 1 tool(s) sent (the model supports tool_search (Config.NoToolSearch is false))
	// additional_tools: 1 tool(s) sent (the model predates tool_search, so found tools are added by additional_tools items)
	// functions: 1 tool(s) sent (the model does not support tool_search, so found tools are added by additional_tools items; the endpoint refused additional_tools ("unknown input item type additional_tools"), so found tools are sent as functions)
}

// Namespaces group a server's tools for the model; every name leads back
// to its tool.
func ExampleToolset_Namespaces() {
	ts, err := openai.NewToolset(exampleSource(), openai.Config{})
	if err != nil {
		panic(err)
	}
	for _, ns := range ts.Namespaces() {
		fmt.Print(ns.Name, ":")
		for _, t := range ns.Tools {
			fmt.Print(" ", t.Name)
		}
		fmt.Println()
	}
	t, err := ts.Resolve("tracker", "close_issue")
	fmt.Println(t.ID(), err)
	// Output:
	// chat: post_message
	// tracker: create_issue close_issue
	// tracker/close_issue <nil>
}
