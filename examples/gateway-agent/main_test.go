package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/gateway/config"
)

type issueArgs struct {
	Title string `json:"title,omitempty" jsonschema:"the issue's title"`
}

// tracker is a live MCP server over streamable HTTP on loopback that
// records the calls it gets.
type tracker struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string
}

func startTracker(t *testing.T) *tracker {
	t.Helper()
	tr := &tracker{}
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	add := func(name, desc, answer string) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc},
			func(ctx context.Context, req *mcp.CallToolRequest, a issueArgs) (*mcp.CallToolResult, any, error) {
				tr.mu.Lock()
				tr.calls = append(tr.calls, name)
				tr.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
			})
	}
	add("create_issue", "Open an issue in the bug tracker with a title.", "opened issue #7")
	add("delete_repository", "Delete the whole repository with its issues, for good.", "repository deleted")
	tr.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(tr.srv.Close)
	return tr
}

func (tr *tracker) called() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.calls...)
}

// loadConfig writes a toolsearch config for the tracker, with delete_* denied
// by policy, and loads it as the example does.
func loadConfig(t *testing.T, tr *tracker) *config.Config {
	t.Helper()
	doc := map[string]any{
		"mcpServers": map[string]any{"tracker": map[string]any{"url": tr.srv.URL, "deny": []string{"delete_*"}}},
		"toolsearch": map[string]any{
			"stateDir": t.TempDir(),
			"builtins": map[string]any{"glob": false, "grep": false, "lsp": false, "web_fetch": false, "resources": false},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "toolsearch.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestAgentCallsLiveServer: the stand-in's scripted model searches, finds
// create_issue and calls it; the call reaches the live server through the
// gateway and its answer reaches the model.
func TestAgentCallsLiveServer(t *testing.T) {
	t.Parallel()
	tr := startTracker(t)
	api := anthropictest.New(t, anthropictest.Options{})
	c := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	answer, err := run(ctx, loadConfig(t, tr), c, "claude-test", "Open an issue in the bug tracker about the login bug", &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	if got := tr.called(); len(got) != 1 || got[0] != "create_issue" {
		t.Errorf("the live server got calls %q, want one of create_issue\n%s", got, out.String())
	}
	if !strings.Contains(answer, "opened issue #7") {
		t.Errorf("answer %q lacks the server's result\n%s", answer, out.String())
	}
	if rej := api.Rejections(); len(rej) > 0 {
		t.Errorf("the stand-in refused requests: %q", rej)
	}
}

// TestAgentHostileModel: a model that names a tool the policy denies, in
// every form the gateway knows, never reaches it: the denied tool is not in
// the model's tool set, and the call is answered with an error.
func TestAgentHostileModel(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"tracker__delete_repository", "delete_repository", "tracker/delete_repository", "mcp__tracker__delete_repository"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := startTracker(t)
			asked := false
			hostile := func(req *anthropictest.Request) anthropictest.Reply {
				if !asked {
					asked = true
					return anthropictest.Reply{Content: []any{map[string]any{"type": "tool_use", "id": "toolu_evil", "name": name, "input": map[string]any{}}}, StopReason: "tool_use"}
				}
				return anthropictest.Reply{Content: []any{map[string]any{"type": "text", "text": "ok"}}, StopReason: "end_turn"}
			}
			api := anthropictest.New(t, anthropictest.Options{Model: hostile})
			c := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if _, err := run(ctx, loadConfig(t, tr), c, "claude-test", "delete the repository", &out); err != nil {
				t.Logf("run: %v", err) // the stand-in may refuse a call of a tool not in tools
			}
			if got := tr.called(); len(got) != 0 {
				t.Fatalf("a denied tool was called: %q\n%s", got, out.String())
			}
		})
	}
}
