package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusShowsSkills: with a server that serves skills (the TypeScript
// SDK's, tests/skills/server), status says how many skills each such
// server lets clients see and what listing them costs; --json has them
// per server.
func TestStatusShowsSkills(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("..", "..", "tests", "skills", "server"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server")); err != nil {
		t.Skipf("the skills server is not installed: run `npm ci` in %s", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	servers := map[string]any{
		"alpha": map[string]any{"command": node, "args": []string{filepath.Join(dir, "serve.mjs"), filepath.Join(dir, "fixtures", "alpha")}},
		"beta":  map[string]any{"command": node, "args": []string{filepath.Join(dir, "serve.mjs"), filepath.Join(dir, "fixtures", "beta")}},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": map[string]any{"limits": map[string]any{"startTimeout": "60s"}}})
	cfg := filepath.Join(t.TempDir(), "ts.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"status", "-c", cfg, "--state-dir", t.TempDir()}, &stdout, &stderr); code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "skills: 4 (alpha 2, beta 2); a skills/list of them all costs ") {
		t.Errorf("status does not count the skills:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := run(context.Background(), []string{"status", "-c", cfg, "--state-dir", t.TempDir(), "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, stderr.String())
	}
	var out statusJSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Skills != 4 || out.SkillListTokens == 0 {
		t.Errorf("--json: skills %d, list tokens %d; want 4 and their tokens", out.Skills, out.SkillListTokens)
	}
	for _, s := range out.Servers {
		if s.Skills == nil || *s.Skills != 2 {
			t.Errorf("--json: server %s has skills %v, want 2", s.Name, s.Skills)
		}
	}
}
