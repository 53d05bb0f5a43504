// Command gateway-agent is an agent loop on the Anthropic Messages API whose
// tools are live MCP servers: it starts the servers of a toolsearch config
// through the gateway library, lets the model search their tools, and
// routes each call the model makes back through the gateway to the server
// that has the tool (with the gateway's policy, timeouts and restarts).
//
// With ANTHROPIC_API_KEY set it talks to the real API; without it, to a local
// stand-in (package anthropictest) with a scripted model that searches,
// calls the tool it found and ends its turn.
//
//	go run ./examples/gateway-agent -c toolsearch.json -task "list the files in the project"
//	ANTHROPIC_API_KEY=sk-... go run ./examples/gateway-agent -c toolsearch.json -task "..."
//
// The config is the one toolsearch serve reads (toolsearch init writes a
// starter; toolsearch import writes one from a client's settings).
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
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// maxRequests bounds one task's requests.
const maxRequests = 10

// run starts the gateway of cfg, runs the task on the Messages API client c
// and writes a line per request to out. It returns the model's last text.
func run(ctx context.Context, cfg *config.Config, c sdk.Client, model, task string, out io.Writer) (string, error) {
	g, err := gateway.New(cfg, gateway.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return "", err
	}
	gctx, stop := context.WithCancel(ctx)
	defer func() { stop(); g.Close() }()
	g.Start(gctx)
	if err := g.WaitSettled(ctx); err != nil {
		return "", err
	}
	for _, st := range g.Statuses() {
		fmt.Fprintf(out, "server %s: %s, %d tools\n", st.Key, st.State, st.Tools)
	}

	// One client session of the gateway, in memory: every call the model
	// makes goes through it, by the tool's server/tool name.
	clientEnd, gatewayEnd := mcp.NewInMemoryTransports()
	if _, err := g.Connect(gctx, "search", gatewayEnd); err != nil {
		return "", fmt.Errorf("connecting to the gateway: %w", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway-agent", Version: "1"}, nil).Connect(gctx, clientEnd, nil)
	if err != nil {
		return "", fmt.Errorf("connecting to the gateway: %w", err)
	}
	defer cs.Close()

	// The model sees the tools the gateway lets clients see (its policy
	// applied), deferred behind a search tool.
	snap, err := visible(g)
	if err != nil {
		return "", err
	}
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: search.Build(snap)}, anthropic.Config{Model: model})
	if err != nil {
		return "", err
	}
	conv := &anthropic.Conversation{System: []sdk.TextBlockParam{{Text: "You are an agent with many tools. Use the tool search to find the right one, then call it."}}}
	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
	for i := range maxRequests {
		msg, turn, err := ts.Send(ctx, &c.Messages, conv, sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: 1024})
		if err != nil {
			return "", fmt.Errorf("request %d: %w", i+1, err)
		}
		conv.Messages = append(conv.Messages, msg.ToParam())
		fmt.Fprintf(out, "request %d (%s): %d input tokens\n", i+1, turn.Strategy, msg.Usage.InputTokens)
		var results []sdk.ContentBlockParamUnion
		var answers []anthropic.SearchAnswer
		text := ""
		for _, b := range msg.Content {
			switch {
			case b.Type == "text":
				text = b.Text
			case b.Type == "tool_use" && ts.IsClientSearch(b.Name):
				fmt.Fprintf(out, "  search %s\n", b.Input)
				a, err := ts.AnswerSearch(ctx, b.ID, b.Input)
				if err != nil {
					return "", err
				}
				answers = append(answers, a)
			case b.Type == "tool_use":
				results = append(results, callThrough(ctx, cs, ts, b, out))
			}
		}
		if len(results)+len(answers) == 0 {
			fmt.Fprintf(out, "answer: %s\n", text)
			return text, nil
		}
		conv.Messages = append(conv.Messages, anthropic.ResultsMessage(results, answers...))
	}
	return "", fmt.Errorf("no answer after %d requests", maxRequests)
}

// visible is the gateway's catalog without the tools its policy hides.
func visible(g *gateway.Gateway) (*catalog.Snapshot, error) {
	var servers []*catalog.Server
	for _, srv := range g.Snapshot().Servers() {
		cp := *srv
		cp.Tools = nil
		for _, t := range srv.Tools {
			if g.Visible(t) {
				cp.Tools = append(cp.Tools, t)
			}
		}
		servers = append(servers, &cp)
	}
	return catalog.NewSnapshot(servers...)
}

// callThrough routes one tool_use of the model to the tool's server through
// the gateway's call_tool, and turns the answer into a tool_result.
func callThrough(ctx context.Context, cs *mcp.ClientSession, ts *anthropic.Toolset, b sdk.ContentBlockUnion, out io.Writer) sdk.ContentBlockParamUnion {
	if ts.Gone(b.Name) {
		return ts.GoneResult(b.ID, b.Name)
	}
	tool, ok := ts.Resolve(b.Name)
	if !ok {
		return sdk.NewToolResultBlock(b.ID, "unknown tool "+b.Name, true)
	}
	var args map[string]any
	if err := json.Unmarshal(b.Input, &args); err != nil {
		return sdk.NewToolResultBlock(b.ID, "the tool input is not a JSON object: "+err.Error(), true)
	}
	fmt.Fprintf(out, "  call %s %s\n", tool.ID(), b.Input)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": tool.ID(), "arguments": args}})
	if err != nil {
		return sdk.NewToolResultBlock(b.ID, "the call failed: "+err.Error(), true)
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return sdk.NewToolResultBlock(b.ID, strings.Join(parts, "\n"), res.IsError)
}

func main() {
	var (
		configPath = flag.String("c", "", "toolsearch config `file` (default: "+strings.Join(config.DefaultPaths(), ", then ")+")")
		model      = flag.String("model", "claude-sonnet-4-5", "model")
		task       = flag.String("task", "List the files in the project folder.", "what to ask")
		baseURL    = flag.String("base-url", "", "API base URL (default: the real API when ANTHROPIC_API_KEY is set, else a local stand-in)")
	)
	flag.Parse()
	if err := mainErr(*configPath, *model, *task, *baseURL); err != nil {
		slog.Error("gateway-agent", "err", err)
		os.Exit(1)
	}
}

func mainErr(configPath, model, task, baseURL string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if configPath == "" {
		for _, p := range config.DefaultPaths() {
			if _, err := os.Stat(p); err == nil {
				configPath = p
				break
			}
		}
		if configPath == "" {
			return errors.New("no config file: pass -c FILE (toolsearch init writes a starter)")
		}
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	opts := []option.RequestOption{option.WithMaxRetries(2)}
	switch {
	case baseURL != "":
		opts = append(opts, option.WithBaseURL(baseURL))
	case key == "":
		srv := anthropictest.Start(anthropictest.Options{})
		defer srv.Close()
		opts = append(opts, option.WithBaseURL(srv.URL))
		key = "stand-in"
		fmt.Println("ANTHROPIC_API_KEY is not set: running against the local stand-in with a scripted model")
	}
	opts = append(opts, option.WithAPIKey(key))
	_, err = run(ctx, cfg, sdk.NewClient(opts...), model, task, os.Stdout)
	return err
}
