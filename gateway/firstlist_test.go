package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestFirstListWaitsForStartingServers starts the gateway with an empty
// state directory and a server that comes up late, and checks the first
// tools/list: in full exposure it waits for the server up to
// limits.firstListWait (and then holds its tools), or gives up at the
// bound and logs which server it did not wait for; in search exposure it
// answers at once with its constant list, and a search naming the server
// waits for it.
func TestFirstListWaitsForStartingServers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		mode     string
		client   string        // clientInfo name; "" is test-client
		wait     string        // limits.firstListWait; "" is the default
		openIn   time.Duration // when the server comes up
		wantEcho bool          // the first list holds the server's tools
		maxList  time.Duration // the first list is answered within
		wantLog  string
	}{
		{"full waits", config.ExposureFull, "", "", 600 * time.Millisecond, true, 4 * time.Second, `first tools/list: waited for the servers starting" servers=[slow]`},
		{"full gives up at the bound", config.ExposureFull, "", "300ms", 4 * time.Second, false, 2 * time.Second, `did not wait longer for servers still starting; search_tools and call_tool reach their tools meanwhile, and their tools come with list_changed" not_waited_for=[slow]`},
		{"full does not wait when told", config.ExposureFull, "", "0", 4 * time.Second, false, time.Second, `not_waited_for=[slow]`},
		// Codex goes on without a list not answered within about a
		// second: it is answered sooner, with search_tools and call_tool.
		{"full answers a quick lister soon", config.ExposureFull, "codex-mcp-client", "", 4 * time.Second, false, time.Second, `not_waited_for=[slow]`},
		{"search lists at once", config.ExposureSearch, "", "", 600 * time.Millisecond, false, 500 * time.Millisecond, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			slow, open := gatedServer(t, "slow-start")
			gw := map[string]any{"exposure": c.mode, "stateDir": t.TempDir()}
			if c.wait != "" {
				gw["limits"] = map[string]any{"firstListWait": json.RawMessage(`"` + c.wait + `"`)}
				if c.wait == "0" {
					gw["limits"] = map[string]any{"firstListWait": 0}
				}
			}
			cfg, err := config.Load(writeConfig(t, map[string]any{"slow": slow}, gw))
			if err != nil {
				t.Fatal(err)
			}
			var logs lockedBuffer
			g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			g.Start(ctx)
			t.Cleanup(func() { stopGateway(t, g, cancel) })
			timer := time.AfterFunc(c.openIn, open)
			t.Cleanup(func() { timer.Stop() })
			client := c.client
			if client == "" {
				client = "test-client"
			}
			cs := connectAs(t, g, c.mode, client, nil)
			start := time.Now()
			tools := listByName(t, cs)
			took := time.Since(start)
			if _, ok := tools["echo"]; ok != c.wantEcho {
				t.Errorf("first list holds echo: %v, want %v (%d tools, after %v)", ok, c.wantEcho, len(tools), took)
			}
			if took > c.maxList {
				t.Errorf("first list took %v, want at most %v", took, c.maxList)
			}
			if c.wantEcho && took < c.openIn/2 {
				t.Errorf("first list took %v: it cannot have waited for a server that came up after %v", took, c.openIn)
			}
			if c.wantLog != "" && !strings.Contains(logs.String(), c.wantLog) {
				t.Errorf("log lacks %q:\n%s", c.wantLog, logs.String())
			}
			if c.mode == config.ExposureFull {
				// A list answered before the server was up holds the
				// gateway's search and call, which reach its tools.
				_, search := tools[searchToolName]
				_, call := tools[callToolName]
				if search != !c.wantEcho || call != !c.wantEcho {
					t.Errorf("first list holds search_tools %v and call_tool %v; want %v (the server was late)", search, call, !c.wantEcho)
				}
				if !c.wantEcho {
					open()
					sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer scancel()
					res, err := cs.CallTool(sctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "echo the text"}})
					if err != nil || res.IsError {
						t.Fatalf("search through the first list's search_tools: %v %v", err, res)
					}
					if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"name": "echo"`) {
						t.Errorf("the search found nothing of the late server: %s", text)
					}
					res, err = cs.CallTool(sctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "echo", "arguments": map[string]any{"text": "late"}}})
					if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "late" {
						t.Errorf("call_tool of the late server's echo: %v %v", err, res)
					}
				}
			}
			if c.mode == config.ExposureSearch {
				if _, ok := tools[searchToolName]; !ok {
					t.Fatalf("search exposure lists no search tool: %v", tools)
				}
				sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer scancel()
				res, err := cs.CallTool(sctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "select:slow__echo"}})
				if err != nil || res.IsError {
					t.Fatalf("search: %v %v", err, res)
				}
				if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"name": "echo"`) {
					t.Errorf("a search naming the starting server did not wait for it: %s", text)
				}
				if again := listByName(t, cs); len(again) != len(tools) {
					t.Errorf("search exposure's list changed from %d to %d tools", len(tools), len(again))
				}
			}
		})
	}
}
