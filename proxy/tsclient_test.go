package proxy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/proxy"
)

// TestTypeScriptSDK runs the official TypeScript SDK (@anthropic-ai/sdk,
// pinned in package.json) against the proxy in emulate mode: server-side
// search streaming and not, Claude Code's client-side cycle through the
// beta API with streaming, and the error shape.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("..", "node_modules", "@anthropic-ai", "sdk", "package.json")); err != nil {
		t.Skip("node_modules/@anthropic-ai/sdk is absent: run `npm ci` at the repository root")
	}
	server := brokenUpstream(t, "tool_search_tool_bm25")
	client := brokenUpstream(t, "ToolSearch")
	_, serverURL := startProxy(t, proxy.Config{Upstream: server.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	_, clientURL := startProxy(t, proxy.Config{Upstream: client.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "tsclient.mjs"))
	cmd.Env = append(os.Environ(), "SERVER_URL="+serverURL, "CLIENT_URL="+clientURL)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		ServerSide, ServerSideStream struct {
			Types  []string `json:"types"`
			Refs   []string `json:"refs"`
			Called string   `json:"called"`
			Final  string   `json:"final"`
		}
		ClientSide struct {
			Searched, Called, Final string
		}
		Error struct {
			Status int
			Type   string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	for name, s := range map[string]struct {
		Types  []string `json:"types"`
		Refs   []string `json:"refs"`
		Called string   `json:"called"`
		Final  string   `json:"final"`
	}{"create": got.ServerSide, "stream": got.ServerSideStream} {
		if strings.Join(s.Types, ",") != "server_tool_use,tool_search_tool_result,text,tool_use" ||
			len(s.Refs) == 0 || s.Refs[0] != "mcp__slack__post_message" || s.Called != "mcp__slack__post_message" ||
			!strings.HasPrefix(s.Final, "Done: posted") {
			t.Errorf("server-side %s: %+v", name, s)
		}
	}
	if got.ClientSide.Searched != "ToolSearch" || got.ClientSide.Called != "mcp__slack__post_message" || !strings.HasPrefix(got.ClientSide.Final, "Done: posted") {
		t.Errorf("client-side: %+v", got.ClientSide)
	}
	if got.Error.Status != 400 || got.Error.Type != "invalid_request_error" {
		t.Errorf("error: %+v", got.Error)
	}
	if rej := append(server.Inner.Rejections(), client.Inner.Rejections()...); len(rej) != 1 {
		t.Errorf("upstream rejections %q (want only the max_tokens one)", rej)
	}
}
