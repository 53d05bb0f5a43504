package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cliProcess is the test binary run as the toolsearch command (role cli)
// in dir, with a home and config folder of its own so that no default
// config of the machine is found.
func cliProcess(t *testing.T, ctx context.Context, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), roleEnv+"=cli", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	return cmd
}

// exitCode is the exit code of a finished command, or -1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestServeNeedsServers: serve, as a process of its own, exits 2 with a
// message that says how to make a config when there is none, and when the
// config names no mcpServers; an explicit empty mcpServers serves (the
// built-ins only) with a log line that says so, to a real MCP client.
func TestServeNeedsServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string // written as toolsearch.json in the folder serve runs in, when not ""
		named   bool   // passed with -c rather than found at the default path
		refused []string
		logged  string
	}{
		{name: "no config anywhere", refused: []string{"no config file", "toolsearch.json", "toolsearch import --from", "toolsearch init"}},
		{name: "empty object", file: `{}`, named: true, refused: []string{"toolsearch.json has no \"mcpServers\"", "toolsearch add -c", "toolsearch import --from"}},
		{name: "settings only", file: `{"toolsearch": {"exposure": "search"}}`, refused: []string{"has no \"mcpServers\""}},
		{name: "null servers", file: `{"mcpServers": null}`, named: true, refused: []string{"has no \"mcpServers\""}},
		{name: "explicit empty servers, default path", file: `{"mcpServers": {}}`, logged: "is empty: no MCP server will be served"},
		{name: "explicit empty VS Code servers", file: `{"servers": {}}`, named: true, logged: "servers is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"serve", "--state-dir", filepath.Join(dir, "state")}
			if tc.file != "" {
				p := filepath.Join(dir, "toolsearch.json")
				if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				if tc.named {
					args = append(args, "-c", p)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := cliProcess(t, ctx, dir, args...)
			if tc.refused != nil {
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				cmd.Stdin = strings.NewReader("")
				err := cmd.Run()
				if code := exitCode(err); code != exitUsage {
					t.Fatalf("serve exited %d (%v), want %d:\n%s", code, err, exitUsage, stderr.String())
				}
				for _, want := range tc.refused {
					if !strings.Contains(stderr.String(), want) {
						t.Errorf("the message lacks %q:\n%s", want, stderr.String())
					}
				}
				return
			}
			var logs syncBuffer
			cmd.Stderr = &logs
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, logs.String())
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v\n%s", err, logs.String())
			}
			for _, tool := range res.Tools {
				if !strings.HasPrefix(tool.Name, "builtin__") && tool.Name != "search_tools" && tool.Name != "call_tool" {
					t.Errorf("an empty mcpServers serves %s", tool.Name)
				}
			}
			cs.Close()
			if !strings.Contains(logs.String(), tc.logged) {
				t.Errorf("the log lacks %q:\n%s", tc.logged, logs.String())
			}
		})
	}
}
