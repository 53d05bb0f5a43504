package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStatusShowsPolicyMistakes: status and serve --check list every
// policy pattern that matches nothing, with the name it most likely
// meant, and exit 1 even when every server is ready.
func TestStatusShowsPolicyMistakes(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	mem := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin", "mcp-server-memory")
	if _, err := os.Stat(mem); err != nil {
		t.Skip("node_modules is not installed")
	}
	cases := []struct {
		name   string
		policy map[string]any
		code   int
		want   []string
	}{
		{"clean", map[string]any{"deny": []string{"memory/delete_*"}}, 0, nil},
		{"misspelt server", map[string]any{"deny": []string{"memroy/delete_*"}}, 1,
			[]string{`deny pattern "memroy/delete_*" names server "memroy", which is not configured`, `did you mean "memory/delete_*"?`}},
		{"misspelt tool", map[string]any{"ask": []string{"memory/read_grahp"}}, 1,
			[]string{`ask pattern "memory/read_grahp" matches none of server "memory"'s`, `did you mean "memory/read_graph"?`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			servers := map[string]any{"memory": map[string]any{"command": mem, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.jsonl")}}}
			b, _ := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": map[string]any{"policy": c.policy, "limits": map[string]any{"startTimeout": "60s"}}})
			cfg := filepath.Join(t.TempDir(), "ts.json")
			if err := os.WriteFile(cfg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"status", "-c", cfg, "--state-dir", t.TempDir()}, {"serve", "--check", "-c", cfg, "--state-dir", t.TempDir()}} {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), args, &stdout, &stderr)
				out := stdout.String()
				if code != c.code {
					t.Errorf("%v: exit %d, want %d\n%s\n%s", args, code, c.code, out, stderr.String())
				}
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("%v: output lacks %q:\n%s", args, w, out)
					}
				}
				if len(c.want) == 0 && strings.Contains(out, "policy:") {
					t.Errorf("%v: a policy warning for a clean policy:\n%s", args, out)
				}
			}
			var stdout, stderr bytes.Buffer
			run(context.Background(), []string{"status", "--json", "-c", cfg, "--state-dir", t.TempDir()}, &stdout, &stderr)
			var st statusJSON
			if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
				t.Fatalf("status --json: %v\n%s", err, stdout.String())
			}
			if len(st.Policy) != len(c.want)/2 {
				t.Errorf("status --json policy_warnings = %+v, want %d", st.Policy, len(c.want)/2)
			}
		})
	}
}

// TestStatusShowsWhyNodeFailed: a real node server given a script path
// that does not exist is shown with node's "Cannot find module" line, in
// the table and whole below it.
func TestStatusShowsWhyNodeFailed(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	missing := filepath.Join(t.TempDir(), "a-rather-long-folder-name", "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"memory": map[string]any{"command": node, "args": []string{missing}}},
		"toolsearch": map[string]any{"limits": map[string]any{"startTimeout": "30s"}}})
	cfg := filepath.Join(t.TempDir(), "ts.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"status", "-c", cfg, "--state-dir", t.TempDir()}, &stdout, &stderr)
	out := stdout.String()
	if code != 1 || !strings.Contains(out, "memory: exited during initialize") || !strings.Contains(out, "Cannot find module '"+missing+"'") {
		t.Errorf("exit %d, want 1 and node's own line in full:\n%s\n%s", code, out, stderr.String())
	}
	if strings.Contains(out, "node:internal") {
		t.Errorf("the stack frames are shown:\n%s", out)
	}
}
