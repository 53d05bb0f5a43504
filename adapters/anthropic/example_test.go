package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// An agent loop on the Messages API: the catalog's tools wait behind one
// search tool, the model finds the one it needs and calls it, and the loop
// routes the call to the tool's server. Here the API is the local stand-in
// (package anthropictest), with its scripted model; with a real key, drop
// option.WithBaseURL.
func Example() {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc,
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}}})
		return b
	}
	tracker, _ := catalog.NewServer("tracker", []json.RawMessage{
		tool("create_issue", "Open an issue in the bug tracker with a title and a body."),
		tool("close_issue", "Close an issue of the bug tracker."),
	}, nil, false)
	chat, _ := catalog.NewServer("chat", []json.RawMessage{
		tool("post_message", "Post a message to a channel of the team chat."),
	}, nil, false)
	snap, err := catalog.NewSnapshot(tracker, chat)
	if err != nil {
		panic(err)
	}
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: search.Build(snap)}, anthropic.Config{})
	if err != nil {
		panic(err)
	}

	api := anthropictest.Start(anthropictest.Options{})
	defer api.Close()
	client := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("stand-in"), option.WithMaxRetries(0))

	ctx := context.Background()
	conv := &anthropic.Conversation{}
	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock("Open an issue in the bug tracker about the login bug")))
	for i := range 5 {
		msg, turn, err := ts.Send(ctx, &client.Messages, conv, sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024})
		if err != nil {
			panic(err)
		}
		conv.Messages = append(conv.Messages, msg.ToParam())
		// Under the inline strategy, tools holds only the search tool;
		// the definitions found are added in the conversation.
		fmt.Printf("request %d: strategy %s, %d definition in tools, %d added inline\n", i+1, turn.Strategy, turn.ToolsSent, turn.ToolsInline)
		var results []sdk.ContentBlockParamUnion
		var answers []anthropic.SearchAnswer
		for _, b := range msg.Content {
			switch {
			case b.Type == "text":
				fmt.Println("  model says:", b.Text)
			case b.Type == "tool_use" && ts.IsClientSearch(b.Name):
				fmt.Println("  model searches:", string(b.Input))
				a, err := ts.AnswerSearch(ctx, b.ID, b.Input)
				if err != nil {
					panic(err)
				}
				answers = append(answers, a)
			case b.Type == "tool_use":
				t, ok := ts.Resolve(b.Name)
				if !ok {
					results = append(results, sdk.NewToolResultBlock(b.ID, "unknown tool "+b.Name, true))
					continue
				}
				// Here a host calls the tool on its server (t.Server).
				fmt.Printf("  model calls %s on server %s\n", t.Name, t.Server)
				results = append(results, sdk.NewToolResultBlock(b.ID, "issue #1 opened", false))
			}
		}
		if len(results)+len(answers) == 0 {
			break // the model ended its turn
		}
		conv.Messages = append(conv.Messages, anthropic.ResultsMessage(results, answers...))
	}
	// Output:
	// request 1: strategy inline, 1 definition in tools, 0 added inline
	//   model searches: {"query":"Open an issue in the bug tracker about the login bug"}
	// request 2: strategy inline, 1 definition in tools, 2 added inline
	//   model says: Calling tracker__create_issue.
	//   model calls create_issue on server tracker
	// request 3: strategy inline, 1 definition in tools, 0 added inline
	//   model says: Done: issue #1 opened
}
