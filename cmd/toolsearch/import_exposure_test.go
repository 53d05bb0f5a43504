package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestImportExposure checks the exposure import writes: full for Claude
// Code, which searches MCP tools itself (a second search in front would
// make the model search twice), auto for every other client; and that the
// output says which and why.
func TestImportExposure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		from     func(dir string) []string // import's arguments naming the source
		file     string                    // the source, relative to dir
		want     string
		wantSays string
	}{
		{"claude code", func(dir string) []string { return []string{"--from", "claude-code", "--project", dir} }, ".mcp.json",
			config.ExposureFull, "own tool search"},
		{"a config file", func(dir string) []string { return []string{"--from", filepath.Join(dir, "cursor.json")} }, "cursor.json",
			config.ExposureAuto, "fit in 10% of the context window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := `{"mcpServers": {"notes": {"command": "notes-mcp", "args": ["--dir", "x"]}}}`
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "gw.json")
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"import"}, c.from(dir)...), "-o", out)
			if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			cfg, err := config.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Gateway.Exposure != c.want {
				t.Errorf("exposure %q, want %q", cfg.Gateway.Exposure, c.want)
			}
			if !strings.Contains(stderr.String(), "Exposure "+c.want+": ") || !strings.Contains(stderr.String(), c.wantSays) {
				t.Errorf("output does not say the exposure and why:\n%s", stderr.String())
			}
			if len(cfg.Servers) == 0 || cfg.Servers[0].Key != "notes" {
				t.Errorf("servers %v", cfg.Servers)
			}
		})
	}
}
