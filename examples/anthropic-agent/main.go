// Command anthropic-agent is an agent loop on the Anthropic Messages API
// with toolsearch: the catalog's tools are deferred behind one search tool,
// the model loads what it needs, and the loop routes its calls.
//
// How found tools reach the model is the strategy (-strategy): inline
// (definitions added in system messages), reference-add (the catalog
// declared with defer_loading, found tools enabled by reference in system
// messages), classic (tool_reference blocks), plain (found tools sent as
// ordinary tools). The default, auto, picks one for the endpoint and model;
// each request prints the strategy in force and why, and an endpoint that
// refuses a strategy's blocks moves the session one strategy down, once.
//
// With ANTHROPIC_API_KEY set it talks to the real API; without it, to a local
// stand-in (package anthropictest) that speaks the same JSON and refuses
// what the API refuses, with a scripted model.
//
//	ANTHROPIC_API_KEY=sk-... go run ./examples/anthropic-agent -task "open an issue about the login bug"
//	go run ./examples/anthropic-agent -search server-bm25
//	go run ./examples/anthropic-agent -strategy reference-add
//	go run ./examples/anthropic-agent -standin-refuses inline   # watch the downgrade
//	go run ./examples/anthropic-agent -catalog ../shared/catalog/catalog.json -task "create a pull request on github"
//
// The tools are not run: the catalog is a list of definitions, not live
// servers. Each call is answered with a note saying so, which is enough for
// the model to go on.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
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
	Search   anthropic.SearchKind
	Strategy anthropic.Strategy
	// Endpoint is the base URL requests go to ("" for Anthropic's API).
	Endpoint string
	Mode     deferral.Mode
	MaxSteps int
}

// step is one request of a run.
type step struct {
	Strategy                string
	ToolsSent, ToolsVisible int
	InputTokens, Cached     int64
	Calls                   []string
	Text                    string
}

// report is what a run did.
type report struct {
	Decision string
	Steps    []step
	Final    []string // the last text of each task
}

// run drives the agent loop over the tasks, one after the other in one
// conversation, and writes a line per request to out.
func run(ctx context.Context, c sdk.Client, cfg config, out io.Writer) (*report, error) {
	// One memory of downgrades for the session: a Toolset is rebuilt on
	// every catalog change, the memory outlives it.
	caps := &anthropic.Capabilities{}
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: cfg.Snapshot, Index: search.Build(cfg.Snapshot)},
		anthropic.Config{Mode: cfg.Mode, Search: cfg.Search, Strategy: cfg.Strategy, Endpoint: cfg.Endpoint, Model: cfg.Model, Capabilities: caps})
	if err != nil {
		return nil, fmt.Errorf("toolset: %w", err)
	}
	rep := &report{Decision: ts.Decision().Why()}
	strat, why := ts.Strategy(cfg.Model)
	fmt.Fprintf(out, "%s\nstrategy: %s (%s)\n", rep.Decision, strat, why)
	conv := &anthropic.Conversation{System: []sdk.TextBlockParam{{Text: "You are an agent with many tools. Use the tool search to find the right one, then call it."}}}
	for _, task := range cfg.Tasks {
		fmt.Fprintf(out, "task: %s\n", task)
		conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
		final := ""
		for i := 0; ; i++ {
			if i == cfg.MaxSteps {
				return rep, fmt.Errorf("task %q: no answer after %d requests", task, i)
			}
			// Send builds the turn for the strategy in force, sends it with
			// the betas it needs, and moves down a strategy when the
			// endpoint refuses it.
			msg, turn, err := ts.Send(ctx, &c.Messages, conv, sdk.MessageNewParams{Model: sdk.Model(cfg.Model), MaxTokens: 1024})
			if err != nil {
				return rep, fmt.Errorf("request %d: %w", len(rep.Steps)+1, err)
			}
			if s := turn.Strategy.String(); s != strat.String() {
				fmt.Fprintf(out, "  strategy: %s (%s)\n", turn.Strategy, turn.StrategyWhy)
				strat = turn.Strategy
			}
			conv.Messages = append(conv.Messages, msg.ToParam())
			st := step{Strategy: turn.Strategy.String(), ToolsSent: turn.ToolsSent, ToolsVisible: turn.ToolsVisible,
				InputTokens: msg.Usage.InputTokens, Cached: msg.Usage.CacheReadInputTokens}
			var results []sdk.ContentBlockParamUnion
			var answers []anthropic.SearchAnswer
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					st.Text = b.Text
				case "server_tool_use":
					st.Calls = append(st.Calls, "server search "+string(b.Input))
				case "tool_use":
					st.Calls = append(st.Calls, b.Name)
					if ts.IsClientSearch(b.Name) {
						a, err := ts.AnswerSearch(ctx, b.ID, b.Input)
						if err != nil {
							return rep, err
						}
						answers = append(answers, a)
						continue
					}
					results = append(results, execute(ts, b))
				}
			}
			rep.Steps = append(rep.Steps, st)
			fmt.Fprintf(out, "  request %d: %d tools sent (%d visible), %d added inline; %d input tokens (%d cached); %s\n",
				len(rep.Steps), st.ToolsSent, st.ToolsVisible, turn.ToolsInline, st.InputTokens, st.Cached, describe(st))
			if len(results)+len(answers) == 0 {
				final = st.Text
				break
			}
			conv.Messages = append(conv.Messages, anthropic.ResultsMessage(results, answers...))
		}
		rep.Final = append(rep.Final, final)
		fmt.Fprintf(out, "  answer: %s\n", final)
	}
	return rep, nil
}

// execute answers a tool call. A real host would check its permission rules
// here and call the tool's MCP server; the catalog holds definitions only.
func execute(ts *anthropic.Toolset, b sdk.ContentBlockUnion) sdk.ContentBlockParamUnion {
	if ts.Gone(b.Name) {
		// A tool whose server left the catalog: kept for the history's
		// sake, answered with an error that says so.
		return ts.GoneResult(b.ID, b.Name)
	}
	tool, ok := ts.Resolve(b.Name)
	if !ok {
		return sdk.NewToolResultBlock(b.ID, "unknown tool "+b.Name, true)
	}
	note, _ := json.Marshal(map[string]any{"tool": tool.ID(), "input": json.RawMessage(b.Input),
		"result": "not run: this example has the tool's definition but no live server"})
	return sdk.NewToolResultBlock(b.ID, string(note), false)
}

func describe(st step) string {
	if len(st.Calls) > 0 {
		return "calls " + strings.Join(st.Calls, ", ")
	}
	return "ends its turn"
}

func main() {
	var (
		catalogPath = flag.String("catalog", "", "catalog file (default: the embedded demo catalog)")
		model       = flag.String("model", "claude-sonnet-4-5", "model")
		task        = flag.String("task", "Open an issue on the code host about the login bug, then post a note about it to the team chat.", "what to ask; several tasks separated by |")
		searchKind  = flag.String("search", "client", "client, server-bm25 or server-regex")
		strategy    = flag.String("strategy", "auto", "how found tools reach the model: auto, inline, reference-add, classic or plain")
		refuses     = flag.String("standin-refuses", "", "make the local stand-in refuse a feature: inline, tool-changes, system-messages or references")
		mode        = flag.String("mode", "on", "tool search mode: on, off, auto or auto:N")
		baseURL     = flag.String("base-url", "", "API base URL (default: the real API when ANTHROPIC_API_KEY is set, else a local stand-in)")
	)
	flag.Parse()
	if err := mainErr(*catalogPath, *model, *task, *searchKind, *strategy, *refuses, *mode, *baseURL); err != nil {
		slog.Error("anthropic-agent", "err", err)
		os.Exit(1)
	}
}

func mainErr(catalogPath, model, task, searchKind, strategyText, refuses, modeText, baseURL string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	snap := demo.Snapshot()
	if catalogPath != "" {
		var err error
		if snap, err = catalog.LoadFile(catalogPath); err != nil {
			return err
		}
	}
	kind, err := anthropic.ParseSearchKind(searchKind)
	if err != nil {
		return err
	}
	mode, err := deferral.ParseMode(modeText)
	if err != nil {
		return err
	}
	strat, err := anthropic.ParseStrategy(strategyText)
	if err != nil {
		return err
	}
	standin := anthropictest.Options{}
	switch refuses {
	case "":
	case "inline":
		standin.NoInlineTools = true
	case "tool-changes":
		standin.NoToolChanges = true
	case "system-messages":
		standin.NoSystemMessages = true
	case "references":
		standin.NoReferences, standin.NoSystemMessages = true, true
	default:
		return fmt.Errorf("-standin-refuses %q: want inline, tool-changes, system-messages or references", refuses)
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	opts := []option.RequestOption{option.WithMaxRetries(2)}
	switch {
	case baseURL != "":
		opts = append(opts, option.WithBaseURL(baseURL))
	case key == "":
		srv := anthropictest.Start(standin)
		defer srv.Close()
		opts = append(opts, option.WithBaseURL(srv.URL))
		key = "stand-in"
		fmt.Println("ANTHROPIC_API_KEY is not set: running against the local stand-in with a scripted model")
	}
	opts = append(opts, option.WithAPIKey(key))
	rep, err := run(ctx, sdk.NewClient(opts...), config{Snapshot: snap, Model: model, Tasks: strings.Split(task, "|"),
		Search: kind, Strategy: strat, Endpoint: baseURL, Mode: mode, MaxSteps: 10}, os.Stdout)
	if err != nil {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return fmt.Errorf("the API refused a request: %w", err)
		}
		return err
	}
	fmt.Printf("%d requests\n", len(rep.Steps))
	return nil
}
