package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClient drives the gateway with the official TypeScript SDK
// client, over stdio and over streamable HTTP, in every exposure mode.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("node_modules/@modelcontextprotocol/sdk is absent: run `npm ci` at the repository root")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	// One server would keep its bare names: prefixed names are asked for,
	// as the script calls echo__echo.
	echo := roleServer(t, "echo")
	echo["naming"] = "prefixed"
	cfgPath := writeConfig(t, map[string]any{"echo": echo}, nil)
	g := startGateway(t, cfgPath)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	script := filepath.Join(repoRoot(t), "gateway", "testdata", "tsclient.mjs")
	for _, kind := range []string{"http", "stdio"} {
		for _, mode := range []string{"full", "search", "dynamic"} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				target := srv.URL + "/mcp/" + mode
				// The script waits for nothing unbounded, but a client that
				// hangs must fail the test, not stall it: the command is
				// killed at the deadline, and its pipes are let go soon
				// after even if a child it spawned still holds them.
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, node, script, kind, target, mode)
				if kind == "stdio" {
					cmd = exec.CommandContext(ctx, node, script, kind, self(t), mode)
					cmd.Env = append(os.Environ(), roleEnv+"=gateway-stdio", "TOOLSEARCH_TEST_CONFIG="+cfgPath, "TOOLSEARCH_TEST_MODE="+mode)
				}
				cmd.WaitDelay = 10 * time.Second
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("node: %v\n%s", err, stderr.String())
				}
				var out struct {
					Before, After, Found []string
					Result, Native       string
					IsError              bool
					ListChanged          int
				}
				if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
					t.Fatalf("%v: %s", err, stdout.String())
				}
				if out.Result != "from typescript" || out.IsError {
					t.Errorf("call result %q (error %v)", out.Result, out.IsError)
				}
				switch mode {
				case "full":
					if !slices.Contains(out.Before, "echo__echo") {
						t.Errorf("full list %v", out.Before)
					}
				case "search":
					// The search and call tools, and built-in tools marked
					// always-load; no upstream tool.
					upstream := slices.ContainsFunc(out.Before, func(n string) bool { return strings.HasPrefix(n, "echo__") })
					if upstream || !slices.Contains(out.Before, "call_tool") || !slices.Contains(out.Before, "search_tools") || !slices.Contains(out.Found, "echo__echo") {
						t.Errorf("search: list %v found %v", out.Before, out.Found)
					}
				case "dynamic":
					if out.ListChanged == 0 || !slices.Contains(out.After, "echo__echo") || out.Native != "natively" {
						t.Errorf("dynamic: list_changed %d, after %v, native %q", out.ListChanged, out.After, out.Native)
					}
				}
			})
		}
	}
}
