package anthropic_test

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// exampleSource is a catalog of two servers, indexed.
func exampleSource() anthropic.Source {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	tracker, _ := catalog.NewServer("tracker", []json.RawMessage{
		tool("create_issue", "Open an issue in the bug tracker."), tool("close_issue", "Close an issue of the bug tracker."),
	}, nil, false)
	chat, _ := catalog.NewServer("chat", []json.RawMessage{tool("post_message", "Post a message to a channel.")}, nil, false)
	snap, _ := catalog.NewSnapshot(tracker, chat)
	return anthropic.Source{Snapshot: snap, Index: search.Build(snap)}
}

// A turn's request is built without sending it: what goes in tools, which
// betas it needs and why its strategy was chosen. StrategyAuto takes
// inline additions on Anthropic's API and classic tool_reference
// anywhere else.
func ExampleToolset_Turn() {
	for _, endpoint := range []string{"", "https://llm-gateway.example.com"} {
		ts, err := anthropic.NewToolset(exampleSource(), anthropic.Config{Endpoint: endpoint})
		if err != nil {
			panic(err)
		}
		conv := &anthropic.Conversation{Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Tell the team the deploy is done"))}}
		turn, err := ts.Turn(conv, sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024})
		if err != nil {
			panic(err)
		}
		fmt.Printf("endpoint %q: %s (%s)\n", endpoint, turn.Strategy, turn.StrategyWhy)
		fmt.Printf("  tools sent %d (deferred %d), betas %v, search on: %v\n", turn.ToolsSent, turn.ToolsDeferred, turn.Betas, turn.Decision.SearchOn)
	}
	// Output:
	// endpoint "": inline (Anthropic's API: discovered definitions are added inline in system messages)
	//   tools sent 1 (deferred 0), betas [mid-conversation-tool-changes-2026-07-01 inline-tools-2026-09-15], search on: true
	// endpoint "https://llm-gateway.example.com": classic (the endpoint is not Anthropic's API: start with tool_reference, which works wherever tool search does)
	//   tools sent 1 (deferred 0), betas [], search on: true
}

// A downgrade is remembered per endpoint and model for the session, so a
// refused feature costs one request; it never raises a strategy.
func ExampleCapabilities() {
	var caps anthropic.Capabilities
	s, ok := caps.Downgrade("https://llm-gateway.example.com", "claude-sonnet-4-5", anthropic.Inline, anthropic.Classic, "tool_definition refused")
	fmt.Println(s, ok)
	s, why, _ := caps.Get("https://llm-gateway.example.com", "claude-sonnet-4-5")
	fmt.Println(s, "-", why)
	_, ok = caps.Downgrade("https://llm-gateway.example.com", "claude-sonnet-4-5", anthropic.Plain, anthropic.Plain, "no tool search")
	fmt.Println("below plain:", ok)
	// Output:
	// classic true
	// classic - downgraded from inline: tool_definition refused
	// below plain: false
}
