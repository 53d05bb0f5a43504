package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
)

func TestImport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, content, wantKey string
		servers                      []string
	}{
		{"claude desktop", "claude_desktop_config.json",
			`{"mcpServers": {"gh": {"command": "npx", "args": ["-y", "gh"], "env": {"T": "${GH_TOKEN}"}}, "toolsearch": {"command": "toolsearch"}}, "globalShortcut": "x"}`,
			"mcpServers", []string{"gh"}},
		{"vscode", filepath.Join(".vscode", "mcp.json"),
			`{"servers": {"fs": {"type": "stdio", "command": "fs-mcp"}, "docs": {"type": "http", "url": "https://example.com/mcp"}}, "inputs": []}`,
			"servers", []string{"docs", "fs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := filepath.Join(dir, c.file)
			os.MkdirAll(filepath.Dir(src), 0o755)
			if err := os.WriteFile(src, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "gw", "toolsearch.json")
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{"import", "--from", src, "-o", out}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			cfg, err := config.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, s := range cfg.Servers {
				keys = append(keys, s.Key)
			}
			if strings.Join(keys, ",") != strings.Join(c.servers, ",") {
				t.Errorf("imported %v", keys)
			}
			// ${VAR} is kept for the gateway to expand, not baked in.
			data, _ := os.ReadFile(out)
			if c.name == "claude desktop" && !strings.Contains(string(data), "${GH_TOKEN}") {
				t.Errorf("variable expanded at import: %s", data)
			}
			var snip map[string]map[string]map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &snip); err != nil {
				t.Fatalf("snippet: %v\n%s", err, stdout.String())
			}
			entry := snip[c.wantKey]["toolsearch"]
			if entry == nil || !strings.Contains(stdout.String(), out) || !strings.Contains(stdout.String(), "serve") {
				t.Errorf("snippet %s", stdout.String())
			}
			// A second import does not overwrite without --force.
			if code := run(context.Background(), []string{"import", "--from", src, "-o", out}, &stdout, &stderr); code != exitUsage {
				t.Errorf("overwrite exit %d", code)
			}
		})
	}
}

func TestImportNothingFound(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"import", "--from", filepath.Join(t.TempDir(), "none.json")}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "no config found") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
