package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestStatusAndCheck(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	mem := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", ".bin", "mcp-server-memory")
	servers := map[string]any{"broken": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")}}
	haveNode := false
	if _, err := os.Stat(mem); err == nil {
		haveNode = true
		servers["memory"] = map[string]any{"command": mem, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.jsonl")}}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": map[string]any{"limits": map[string]any{"startTimeout": "30s"}}})
	cfg := filepath.Join(t.TempDir(), "ts.json")
	os.WriteFile(cfg, b, 0o644)
	for _, args := range [][]string{{"status", "-c", cfg, "--state-dir", t.TempDir()}, {"serve", "--check", "-c", cfg, "--state-dir", t.TempDir()}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		out := stdout.String()
		if code != 1 || !strings.Contains(out, "broken") || !strings.Contains(out, "failed") || !strings.Contains(out, "exposure auto would pick: full") {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, stderr.String())
		}
		if haveNode && !strings.Contains(out, "memory") {
			t.Errorf("%v: no memory row\n%s", args, out)
		}
	}
}

func TestServeFlagsOverride(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ts.json")
	os.WriteFile(cfg, []byte(`{"toolsearch": {"exposure": "full", "threshold": 5}}`), 0o644)
	var stderr bytes.Buffer
	f := newServeFlags("serve", "", &stderr)
	if err := f.fs.Parse([]string{"-c", cfg, "--exposure", "search", "--threshold", "20%", "--http", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	c, found, err := f.load(&stderr)
	if err != nil || !found {
		t.Fatal(err)
	}
	if c.Gateway.Exposure != "search" || c.Gateway.ThresholdPercent != 20 || c.Gateway.Listen != "127.0.0.1:0" {
		t.Errorf("gateway %+v", c.Gateway)
	}
	f = newServeFlags("serve", "", &stderr)
	f.fs.Parse([]string{"-c", cfg, "--exposure", "bogus"})
	if _, _, err := f.load(&stderr); err == nil {
		t.Error("bad --exposure accepted")
	}
}
