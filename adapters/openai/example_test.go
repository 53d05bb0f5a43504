package openai_test

import (
	"context"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/adapters/openai/openaitest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// An agent loop on the Responses API: the catalog's functions are deferred
// behind tool_search, the library answers the model's searches, and the
// loop routes the function calls it is left with to the tools' servers.
// Here the API is the local stand-in (package openaitest), with its
// scripted model; with a real key, drop option.WithBaseURL.
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
	ts, err := openai.NewToolset(openai.Source{Snapshot: snap, Index: search.Build(snap)}, openai.Config{})
	if err != nil {
		panic(err)
	}

	api := openaitest.Start(openaitest.Options{})
	defer api.Close()
	client := oai.NewClient(option.WithBaseURL(api.URL+"/v1"), option.WithAPIKey("stand-in"), option.WithMaxRetries(0))

	ctx := context.Background()
	conv := &openai.Conversation{}
	conv.Input = append(conv.Input, openai.UserMessage("Open an issue in the bug tracker about the login bug"))
	for i := range 5 {
		turn, resp, err := ts.Send(ctx, &client.Responses, conv, responses.ResponseNewParams{Model: "gpt-5.4"})
		if err != nil {
			panic(err)
		}
		// tools holds the tool_search tool; the functions found are loaded
		// by its answers.
		fmt.Printf("request %d: strategy %s, tools sent: %d\n", i+1, turn.Strategy, turn.ToolsSent)
		conv.Input = append(conv.Input, openai.OutputItems(resp)...)
		// The searches are answered by the library; the function calls are
		// the host's to run.
		items, calls, err := ts.AnswerSearches(ctx, resp)
		if err != nil {
			panic(err)
		}
		conv.Input = append(conv.Input, items...)
		for _, item := range resp.Output {
			if item.Type == "tool_search_call" {
				args, _ := json.Marshal(item.AsToolSearchCall().Arguments)
				fmt.Println("  model searches:", string(args))
			}
		}
		for _, call := range calls {
			t, err := ts.Resolve(call.Namespace, call.Name)
			if err != nil {
				conv.Input = append(conv.Input, openai.FunctionCallOutput(call.CallID, "Error: "+err.Error()))
				continue
			}
			// Here a host calls the tool on its server (t.Server).
			fmt.Printf("  model calls %s on server %s\n", t.Name, t.Server)
			conv.Input = append(conv.Input, openai.FunctionCallOutput(call.CallID, "issue #1 opened"))
		}
		if len(items)+len(calls) == 0 {
			fmt.Println("  model says:", resp.OutputText())
			break
		}
	}
	// Output:
	// request 1: strategy tool_search, tools sent: 1
	//   model searches: {"query":"Open an issue in the bug tracker about the login bug"}
	// request 2: strategy tool_search, tools sent: 1
	//   model calls create_issue on server tracker
	// request 3: strategy tool_search, tools sent: 1
	//   model says: Done: issue #1 opened
}
