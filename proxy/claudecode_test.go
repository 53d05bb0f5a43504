package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// claudeCode returns the Claude Code binary installed in the module's
// node_modules (npm install --no-save @anthropic-ai/claude-code@2.1.332),
// or skips.
func claudeCode(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("../node_modules/@anthropic-ai/claude-code/bin/claude.exe")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Size() < 1<<20 {
		t.Skip("Claude Code is not installed: npm install --no-save @anthropic-ai/claude-code@2.1.332")
	}
	return bin
}

// TestClaudeCodeThroughProxyToStrictEndpoint runs Claude Code (tool search
// forced on, one MCP server) through the proxy in emulate mode, probing,
// to an endpoint that refuses tool_reference, defer_loading and system-role
// messages: the session finds the MCP tool, calls it and ends, and the
// endpoint refuses nothing but the proxy's probes.
func TestClaudeCodeThroughProxyToStrictEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	bin := claudeCode(t)
	memory, err := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(memory); err != nil {
		t.Skip("the memory MCP server is not installed (npm ci)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true, SearchToolName: "ToolSearch"}})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate})

	home := t.TempDir()
	cfg := filepath.Join(home, "mcp.json")
	mcpConfig := `{"mcpServers":{"memory":{"command":"` + node + `","args":["` + memory + `"],"env":{"MEMORY_FILE_PATH":"` + filepath.Join(home, "memory.jsonl") + `"}}}}`
	if err := os.WriteFile(cfg, []byte(mcpConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "create entities in the knowledge graph",
		"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__memory__create_entities,ToolSearch",
		"--model", "claude-sonnet-4-5")
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home,
		"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-test-secret", "ENABLE_TOOL_SEARCH=true",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	rej := up.Inner.Rejections()
	t.Logf("claude: %v\nstdout: %s\nstderr: %s\nrefusals: %q", err, stdout.String(), stderr.String(), rej)
	if err != nil {
		t.Fatalf("claude failed: %v", err)
	}
	// The scripted model calls the tool it found with empty input; the
	// memory server's own validation error proves the call reached it.
	if out := stdout.String(); !strings.Contains(out, "Done:") || !strings.Contains(out, "create_entities") {
		t.Fatalf("claude did not finish the task by calling the MCP tool: %s", out)
	}
	sent := false
	for _, b := range up.Messages() {
		tools, _, _ := sections(t, b)
		for _, tl := range tools {
			if strings.Contains(string(tl), `"name":"mcp__memory__create_entities"`) && !strings.Contains(string(tl), "defer_loading") {
				sent = true
			}
		}
	}
	if !sent {
		t.Fatal("the discovered MCP tool never went upstream as an ordinary tool")
	}
	if len(rej) > 2 {
		t.Fatalf("the endpoint refused more than the proxy's probes: %q", rej)
	}
	for _, r := range rej {
		if !strings.Contains(r, "Input should be 'user' or 'assistant'") && !strings.Contains(r, "defer_loading") && !strings.Contains(r, "tool_reference") {
			t.Fatalf("a refusal that is no probe's: %q", r)
		}
	}
}

// sections returns the tools, system and messages of a request body.
func sections(t testing.TB, body []byte) (tools []json.RawMessage, system json.RawMessage, messages []json.RawMessage) {
	t.Helper()
	var top struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return top.Tools, top.System, top.Messages
}

// TestGoSDKStrategiesThroughProxy runs the library's agent loop (the Go
// SDK) through the proxy in emulate mode, probing, to endpoints that each
// take one strategy and nothing richer. The library starts inline. The
// proxy emulates every strategy the endpoint lacks (inline definitions
// named by reference, system messages folded with the tool changes they
// carry applied to tools, tool search), so the library stays inline and
// never sees a refusal. Every task ends well.
func TestGoSDKStrategiesThroughProxy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts proxytest.Options
		want anthropic.Strategy
	}{
		{name: "takes inline", opts: proxytest.Options{SystemMessages: true}, want: anthropic.Inline},
		{name: "takes reference-add", opts: proxytest.Options{SystemMessages: true, Options: anthropictest.Options{NoInlineTools: true}}, want: anthropic.Inline},
		{name: "takes no system messages", opts: proxytest.Options{}, want: anthropic.Inline},
		{name: "takes no tool search", opts: proxytest.Options{Options: anthropictest.Options{NoReferences: true}}, want: anthropic.Inline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			up := proxytest.New(t, tt.opts)
			_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate})
			snap := demo.Snapshot()
			ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: search.Build(snap)},
				anthropic.Config{Strategy: anthropic.Inline, Endpoint: url, Model: "claude-test", Capabilities: &anthropic.Capabilities{}})
			if err != nil {
				t.Fatal(err)
			}
			c := goClient(url)
			conv := &anthropic.Conversation{}
			var last *anthropic.Turn
			for _, task := range []string{"Create an issue on the code host about the login bug", "post a message to the team chat channel"} {
				conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
				for i := 0; ; i++ {
					if i == 6 {
						t.Fatalf("task %q did not end", task)
					}
					msg, turn, err := ts.Send(ctx, &c.Messages, conv, sdk.MessageNewParams{Model: "claude-test", MaxTokens: 1024})
					if err != nil {
						t.Fatalf("%v (upstream refusals %q)", err, up.Inner.Rejections())
					}
					last = turn
					conv.Messages = append(conv.Messages, msg.ToParam())
					var results []sdk.ContentBlockParamUnion
					var answers []anthropic.SearchAnswer
					for _, b := range msg.Content {
						switch {
						case b.Type != "tool_use":
						case ts.IsClientSearch(b.Name):
							a, err := ts.AnswerSearch(ctx, b.ID, b.Input)
							if err != nil {
								t.Fatal(err)
							}
							answers = append(answers, a)
						default:
							tool, _ := ts.Resolve(b.Name)
							results = append(results, sdk.NewToolResultBlock(b.ID, "ok: ran "+tool.ID(), false))
						}
					}
					if len(results)+len(answers) == 0 {
						if text := msg.Content[len(msg.Content)-1].Text; !strings.HasPrefix(text, "Done: ok: ran ") {
							t.Fatalf("task %q ended with %q", task, text)
						}
						break
					}
					conv.Messages = append(conv.Messages, anthropic.ResultsMessage(results, answers...))
				}
			}
			if last.Strategy != tt.want {
				t.Fatalf("the session ended at %s (%s), want %s", last.Strategy, last.StrategyWhy, tt.want)
			}
		})
	}
}
