// Command openai-agent is an agent loop on the OpenAI APIs with toolsearch.
//
// With -api responses (the default) the library picks a strategy per model
// and endpoint, and the example prints it with its reason: a
// client-executed tool_search answered with tool_search_output items of
// deferred functions in namespaces (a model with tool_search), a search
// function whose finds are added by additional_tools items
// (-no-tool-search, a model without it), or a search function whose finds
// are sent as ordinary functions (-strategy functions). When the endpoint
// refuses a feature the request is sent again one strategy down, and the
// endpoint is remembered; -refuse makes the local stand-in refuse features
// to show it. Each function_call is resolved to its catalog tool by
// namespace and name. With -api chat (Chat Completions, which has no tool
// search) the search is an ordinary function and the tools it finds are
// sent as plain functions on the next turn.
//
// With OPENAI_API_KEY set it talks to the real API; without it, to a local
// stand-in (package openaitest) that speaks the same JSON and refuses what
// the API refuses, with a scripted model.
//
//	OPENAI_API_KEY=sk-... go run ./examples/openai-agent -task "open an issue about the login bug"
//	go run ./examples/openai-agent -no-tool-search
//	go run ./examples/openai-agent -refuse tool_search,namespace
//	go run ./examples/openai-agent -api chat
//
// The tools are not run: the catalog holds definitions, not live servers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/adapters/openai/openaitest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/search"
)

// config is what one run needs.
type config struct {
	Snapshot *catalog.Snapshot
	Model    string
	Tasks    []string
	Chat     bool // Chat Completions instead of Responses
	Mode     deferral.Mode
	MaxSteps int
	// Strategy, NoToolSearch and Endpoint go to openai.Config.
	Strategy     openai.Strategy
	NoToolSearch bool
	Endpoint     string
}

// report is what a run did.
type report struct {
	Decision string
	// Strategies are the strategies used, each with its reason, in the
	// order they came into use.
	Strategies []string
	Requests   int
	Tools      []int    // tools sent per request
	Calls      []string // every call, in order
	Final      []string // the last text of each task
}

func newToolset(cfg config) (*openai.Toolset, error) {
	return openai.NewToolset(openai.Source{Snapshot: cfg.Snapshot, Index: search.Build(cfg.Snapshot)}, openai.Config{
		Mode: cfg.Mode, Strategy: cfg.Strategy, NoToolSearch: cfg.NoToolSearch,
		Endpoints: &openai.Endpoints{}, Endpoint: cfg.Endpoint})
}

// result is what the example says for a call: the tools are not run.
func result(tool *catalog.Tool, args string) string {
	b, _ := json.Marshal(map[string]any{"tool": tool.ID(), "arguments": args,
		"result": "not run: this example has the tool's definition but no live server"})
	return string(b)
}

// runResponses drives the loop on the Responses API.
func runResponses(ctx context.Context, c oai.Client, cfg config, out io.Writer) (*report, error) {
	ts, err := newToolset(cfg)
	if err != nil {
		return nil, err
	}
	rep := &report{Decision: ts.Decision().Why()}
	fmt.Fprintln(out, rep.Decision)
	conv := &openai.Conversation{Instructions: "You are an agent with many tools. Use tool search to find the right one, then call it."}
	for _, task := range cfg.Tasks {
		fmt.Fprintf(out, "task: %s\n", task)
		conv.Input = append(conv.Input, openai.UserMessage(task))
		for i := 0; ; i++ {
			if i == cfg.MaxSteps {
				return rep, fmt.Errorf("task %q: no answer after %d requests", task, i)
			}
			// Send retries once, one strategy down, when the endpoint
			// refuses a feature.
			turn, resp, err := ts.Send(ctx, &c.Responses, conv, responses.ResponseNewParams{Model: cfg.Model})
			if err != nil {
				return rep, fmt.Errorf("request %d: %w", rep.Requests+1, err)
			}
			if s := turn.Strategy.String() + ": " + turn.StrategyWhy; len(rep.Strategies) == 0 || rep.Strategies[len(rep.Strategies)-1] != s {
				rep.Strategies = append(rep.Strategies, s)
				fmt.Fprintf(out, "  strategy %s\n", s)
			}
			rep.Requests++
			rep.Tools = append(rep.Tools, turn.ToolsSent)
			conv.Input = append(conv.Input, openai.OutputItems(resp)...)
			// The searches are answered by the library; the other calls
			// are the host's to run.
			items, fnCalls, err := ts.AnswerSearches(ctx, resp)
			if err != nil {
				return rep, err
			}
			conv.Input = append(conv.Input, items...)
			var calls []string
			for _, item := range resp.Output {
				switch {
				case item.Type == "tool_search_call":
					args, _ := json.Marshal(item.AsToolSearchCall().Arguments)
					calls = append(calls, "tool_search "+string(args))
				case item.Type == "function_call" && item.AsFunctionCall().Name == ts.SearchToolName() && item.AsFunctionCall().Namespace == "":
					calls = append(calls, ts.SearchToolName()+" "+item.AsFunctionCall().Arguments)
				}
			}
			for _, call := range fnCalls {
				calls = append(calls, call.Namespace+"."+call.Name)
				// A real host checks its permission rules here.
				text := ""
				if tool, err := ts.Resolve(call.Namespace, call.Name); err != nil {
					text = "Error: " + err.Error()
				} else {
					text = result(tool, call.Arguments)
				}
				conv.Input = append(conv.Input, openai.FunctionCallOutput(call.CallID, text))
			}
			rep.Calls = append(rep.Calls, calls...)
			fmt.Fprintf(out, "  request %d: %d tools sent, %d functions loaded so far; %s\n", rep.Requests, turn.ToolsSent, turn.LoadedFunctions, describe(calls))
			if len(calls) == 0 {
				rep.Final = append(rep.Final, resp.OutputText())
				fmt.Fprintf(out, "  answer: %s\n", resp.OutputText())
				break
			}
		}
	}
	return rep, nil
}

// runChat drives the loop on Chat Completions.
func runChat(ctx context.Context, c oai.Client, cfg config, out io.Writer) (*report, error) {
	ts, err := newToolset(cfg)
	if err != nil {
		return nil, err
	}
	rep := &report{Decision: ts.ChatDecision().Why()}
	fmt.Fprintln(out, rep.Decision)
	conv := &openai.ChatConversation{Messages: []oai.ChatCompletionMessageParamUnion{
		oai.SystemMessage("You are an agent with many tools. Use tool_search to find the right one, then call it."),
	}}
	for _, task := range cfg.Tasks {
		fmt.Fprintf(out, "task: %s\n", task)
		conv.Messages = append(conv.Messages, oai.UserMessage(task))
		for i := 0; ; i++ {
			if i == cfg.MaxSteps {
				return rep, fmt.Errorf("task %q: no answer after %d requests", task, i)
			}
			turn, err := ts.ChatTurn(conv, oai.ChatCompletionNewParams{Model: cfg.Model})
			if err != nil {
				return rep, err
			}
			resp, err := c.Chat.Completions.New(ctx, turn.Params)
			if err != nil {
				return rep, fmt.Errorf("request %d: %w", rep.Requests+1, err)
			}
			rep.Requests++
			rep.Tools = append(rep.Tools, turn.ToolsSent)
			if len(resp.Choices) == 0 {
				return rep, fmt.Errorf("request %d: no choice", rep.Requests)
			}
			msg := resp.Choices[0].Message
			conv.Messages = append(conv.Messages, msg.ToParam())
			var calls []string
			for _, call := range msg.ToolCalls {
				if call.Function.Name == ts.SearchToolName() {
					ans, err := ts.AnswerChatSearch(ctx, call.ID, call.Function.Arguments)
					if err != nil {
						return rep, err
					}
					conv.Messages = append(conv.Messages, ans.Message)
					calls = append(calls, "tool_search "+call.Function.Arguments+" → "+strings.Join(ans.Loaded, ", "))
					continue
				}
				calls = append(calls, call.Function.Name)
				text := "unknown function " + call.Function.Name
				if tool, ok := ts.Route("", call.Function.Name); ok {
					text = result(tool, call.Function.Arguments)
				}
				conv.Messages = append(conv.Messages, oai.ToolMessage(text, call.ID))
			}
			rep.Calls = append(rep.Calls, calls...)
			fmt.Fprintf(out, "  request %d: %d tools sent; %s\n", rep.Requests, turn.ToolsSent, describe(calls))
			if len(calls) == 0 {
				rep.Final = append(rep.Final, msg.Content)
				fmt.Fprintf(out, "  answer: %s\n", msg.Content)
				break
			}
		}
	}
	return rep, nil
}

func describe(calls []string) string {
	if len(calls) == 0 {
		return "ends its turn"
	}
	return "calls " + strings.Join(calls, "; ")
}

func main() {
	var (
		catalogPath = flag.String("catalog", "", "catalog file (default: the embedded demo catalog)")
		model       = flag.String("model", "gpt-5.4", "model (tool_search needs a model that supports it)")
		api         = flag.String("api", "responses", "responses or chat")
		task        = flag.String("task", "Open an issue on the code host about the login bug, then post a note about it to the team chat.", "what to ask; several tasks separated by |")
		mode        = flag.String("mode", "on", "tool search mode: on, off, auto or auto:N")
		baseURL     = flag.String("base-url", "", "API base URL (default: the real API when OPENAI_API_KEY is set, else a local stand-in)")
		strategy    = flag.String("strategy", "auto", "Responses strategy: auto, tool_search, additional_tools or functions")
		noSearch    = flag.Bool("no-tool-search", false, "the model does not support tool_search (auto then uses additional_tools)")
		refuse      = flag.String("refuse", "", "features the local stand-in refuses, comma-separated: namespace, additional_tools, tool_search")
	)
	flag.Parse()
	if err := mainErr(*catalogPath, *model, *api, *task, *mode, *baseURL, *strategy, *noSearch, *refuse); err != nil {
		slog.Error("openai-agent", "err", err)
		os.Exit(1)
	}
}

func mainErr(catalogPath, model, api, task, modeText, baseURL, strategyText string, noToolSearch bool, refuse string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	snap := demo.Snapshot()
	if catalogPath != "" {
		var err error
		if snap, err = catalog.LoadFile(catalogPath); err != nil {
			return err
		}
	}
	mode, err := deferral.ParseMode(modeText)
	if err != nil {
		return err
	}
	if api != "responses" && api != "chat" {
		return fmt.Errorf("-api %q: want responses or chat", api)
	}
	strategy, err := openai.ParseStrategy(strategyText)
	if err != nil {
		return fmt.Errorf("-strategy: %w", err)
	}
	standIn, err := refusals(refuse)
	if err != nil {
		return err
	}
	key := os.Getenv("OPENAI_API_KEY")
	opts := []option.RequestOption{option.WithMaxRetries(2)}
	switch {
	case baseURL != "":
		opts = append(opts, option.WithBaseURL(baseURL))
	case key == "":
		srv := openaitest.Start(standIn)
		defer srv.Close()
		opts = append(opts, option.WithBaseURL(srv.URL+"/v1/"))
		baseURL = srv.URL + "/v1/"
		key = "stand-in"
		fmt.Println("OPENAI_API_KEY is not set: running against the local stand-in with a scripted model")
	}
	opts = append(opts, option.WithAPIKey(key))
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1/"
	}
	cfg := config{Snapshot: snap, Model: model, Tasks: strings.Split(task, "|"), Chat: api == "chat", Mode: mode, MaxSteps: 10,
		Strategy: strategy, NoToolSearch: noToolSearch, Endpoint: baseURL}
	c := oai.NewClient(opts...)
	var rep *report
	if cfg.Chat {
		rep, err = runChat(ctx, c, cfg, os.Stdout)
	} else {
		rep, err = runResponses(ctx, c, cfg, os.Stdout)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%d requests\n", rep.Requests)
	return nil
}

// refusals reads -refuse into the stand-in's options.
func refusals(list string) (openaitest.Options, error) {
	var o openaitest.Options
	for _, f := range strings.Split(list, ",") {
		switch strings.TrimSpace(f) {
		case "":
		case "namespace":
			o.RefuseNamespaces = true
		case "additional_tools":
			o.RefuseAdditionalTools = true
		case "tool_search":
			o.RefuseToolSearch = true
		default:
			return o, fmt.Errorf("-refuse: unknown feature %q (want namespace, additional_tools or tool_search)", f)
		}
	}
	return o, nil
}
