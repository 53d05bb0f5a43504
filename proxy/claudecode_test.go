package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// Claude Code's pinned versions, as installed in the module's
// node_modules: the newest and the one before it.
const (
	claudeCodeNewest   = "@anthropic-ai/claude-code"
	claudeCodePrevious = "claude-code-previous"
)

// claudeCode returns the Claude Code binary installed in the module's
// node_modules (npm install --no-save @anthropic-ai/claude-code@2.1.332),
// or skips.
func claudeCode(t *testing.T) string {
	t.Helper()
	return claudeCodeAt(t, claudeCodeNewest)
}

// claudeCodeAt returns the binary of the Claude Code installed under
// node_modules/dir, or skips.
func claudeCodeAt(t *testing.T, dir string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("../node_modules", dir, "bin/claude.exe"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Size() < 1<<20 {
		t.Skip("Claude Code is not installed under node_modules/" + dir + " (npm ci)")
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
	node, memory := memoryServer(t)
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true, SearchToolName: "ToolSearch"}})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate})

	stdout, stderr, err := claudeTask(t, bin, node, memory, url, "claude-sonnet-4-5", "ENABLE_TOOL_SEARCH=true")
	rej := up.Inner.Rejections()
	t.Logf("claude: %v\nstdout: %s\nstderr: %s\nrefusals: %q", err, stdout, stderr, rej)
	if err != nil {
		t.Fatalf("claude failed: %v", err)
	}
	// The scripted model calls the tool it found with empty input; the
	// memory server's own validation error proves the call reached it.
	if !strings.Contains(stdout, "Done:") || !strings.Contains(stdout, "create_entities") {
		t.Fatalf("claude did not finish the task by calling the MCP tool: %s", stdout)
	}
	if !sentAsOrdinaryTool(t, up) {
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

// memoryServer returns node and the memory MCP server's script, or skips
// the test when either is not installed.
func memoryServer(t *testing.T) (node, memory string) {
	t.Helper()
	memory, err := filepath.Abs("../node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(memory); err != nil {
		t.Skip("the memory MCP server is not installed (npm ci)")
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	return node, memory
}

// claudeTask runs Claude Code bin, in a home of its own, on the task of
// creating entities with the memory server as its only MCP server,
// talking to the Messages API at baseURL as model; env adds to its
// environment. It returns what Claude Code wrote and how it ended.
func claudeTask(t *testing.T, bin, node, memory, baseURL, model string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
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
		"--model", model)
	cmd.Dir = home
	cmd.Env = append([]string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=sk-test-secret",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
	}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// sentAsOrdinaryTool reports whether the memory server's create_entities
// went upstream as an ordinary tool (not deferred) in some request.
func sentAsOrdinaryTool(t *testing.T, up *proxytest.Upstream) bool {
	t.Helper()
	for _, b := range up.Messages() {
		tools, _, _ := sections(t, b)
		for _, tl := range tools {
			if strings.Contains(string(tl), `"name":"mcp__memory__create_entities"`) && !strings.Contains(string(tl), "defer_loading") {
				return true
			}
		}
	}
	return false
}

// systemRefusals are the words endpoints refuse a system-role message
// with (the sources are cited in proxy's TestReadRefusal), and one that
// names nothing.
var systemRefusals = []struct {
	name string
	fn   func(i int) (int, string)
}{
	{"anthropic shape, unexpected role", func(int) (int, string) {
		return 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: unexpected role 'system'"}}`
	}},
	{"fastapi 422", func(i int) (int, string) {
		return 422, fmt.Sprintf(`{"detail":[{"type":"literal_error","loc":["body","messages",%d,"role"],"msg":"Input should be 'user' or 'assistant'","input":"system","ctx":{"expected":"'user' or 'assistant'"}}]}`, i)
	}},
	{"serde, plain text", func(i int) (int, string) {
		return 400, fmt.Sprintf("Failed to deserialize the JSON body into the target type: messages[%d].role: unknown variant `system`, expected `user` or `assistant` at line 1 column 1932", i)
	}},
	{"openai shape, system message", func(int) (int, string) {
		return 400, `{"error":{"message":"System message must be at the beginning.","type":"BadRequestError","param":null,"code":400}}`
	}},
	{"names nothing", func(int) (int, string) { return 400, `Request body format invalid` }},
}

// TestClaudeCodeSystemRefusals runs both pinned Claude Code versions,
// with a current model (for which they send a {"role":"system"} message in
// every request) and tool search on by default, through the proxy in
// emulate mode to an endpoint that refuses defer_loading and tool_reference
// and refuses system-role messages in each wording of systemRefusals. Each
// session finds the MCP tool, calls it and ends; the proxy answers Claude
// Code no 4xx (it folds the system messages and emulates tool search,
// learning that from the refusals); the upstream refuses only the probes.
func TestClaudeCodeSystemRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Claude Code")
	}
	node, memory := memoryServer(t)
	for _, version := range []string{claudeCodePrevious, claudeCodeNewest} {
		bin := claudeCodeAt(t, version)
		for _, wording := range systemRefusals {
			t.Run(version+"/"+wording.name, func(t *testing.T) {
				t.Parallel() // each case has its own proxy, stand-in and home
				up := proxytest.New(t, proxytest.Options{SystemRefusal: wording.fn,
					Options: anthropictest.Options{NoReferences: true, SearchToolName: "ToolSearch", Model: taskModel}})
				p, err := proxy.New(proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, Logger: testLogger()})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var answered []int
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					rec := &statusRecorder{ResponseWriter: w}
					p.ServeHTTP(rec, r)
					if strings.HasPrefix(r.URL.Path, "/v1/messages") {
						mu.Lock()
						answered = append(answered, rec.status)
						mu.Unlock()
					}
				}))
				defer srv.Close()
				stdout, stderr, err := claudeTask(t, bin, node, memory, srv.URL, "claude-opus-5")
				refused := append(up.Refusals(), up.Inner.Rejections()...)
				mu.Lock()
				statuses := slices.Clone(answered)
				mu.Unlock()
				t.Logf("claude: %v\nstdout: %s\nrefusals upstream: %q\nstatuses to Claude Code: %v", err, stdout, refused, statuses)
				if err != nil {
					t.Fatalf("claude failed: %v\nstderr: %s", err, stderr)
				}
				if !strings.Contains(stdout, "Done:") || !strings.Contains(stdout, "create_entities") {
					t.Fatalf("claude did not finish the task by calling the MCP tool: %s", stdout)
				}
				if len(up.Refusals()) == 0 {
					t.Fatal("Claude Code sent no system-role message: the test tests nothing")
				}
				for _, s := range statuses {
					if s >= 400 {
						t.Fatalf("the proxy answered Claude Code %d (statuses %v): a refusal reached the client", s, statuses)
					}
				}
				if len(refused) > 3 {
					t.Fatalf("the endpoint refused more than the proxy's probes: %q", refused)
				}
				if !sentAsOrdinaryTool(t, up) {
					t.Fatal("the discovered MCP tool never went upstream as an ordinary tool")
				}
			})
		}
	}
}

// taskModel is the scripted model reading the user's words only: the text
// of system messages folded into user messages (Claude Code's notes on
// its sessions and tools) is not the task.
func taskModel(req *anthropictest.Request) anthropictest.Reply {
	r := *req
	r.Messages = make([]anthropictest.Message, len(req.Messages))
	for i, m := range req.Messages {
		kept := m
		kept.Blocks = nil
		for _, b := range m.Blocks {
			if b.Type == "text" && strings.HasPrefix(strings.TrimSpace(b.Text), "<"+proxy.SystemReminderTag+">") {
				continue
			}
			kept.Blocks = append(kept.Blocks, b)
		}
		r.Messages[i] = kept
	}
	return anthropictest.ScriptedModel(&r)
}

// statusRecorder records the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer, for streams.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
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
