package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusBuiltins: status says which built-in tools are on and why,
// one line (or JSON object) per tool.
func TestStatusBuiltins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "src")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	p := writeConfigJSON(t, filepath.Join(dir, "ts.json"), map[string]any{"mcpServers": map[string]any{},
		"toolsearch": map[string]any{"builtins": map[string]any{"roots": []string{root}, "lsp": false}}})
	code, out, errs := runCLI(t, "status", "-c", p, "--state-dir", filepath.Join(dir, "state"))
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, want := range []string{"built-in tools", "glob", "in the configured roots", "web_fetch", "off until configured", "lsp",
		"set to false in the configuration (builtins.lsp)", "claude-code"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "status", "-c", p, "--state-dir", filepath.Join(dir, "state"), "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{}
	for _, d := range st.Builtins {
		if d.Reason == "" {
			t.Errorf("%s has no reason", d.Tool)
		}
		on[d.Tool] = d.On
	}
	if len(st.Builtins) != 7 || !on["glob"] || !on["grep"] || on["web_fetch"] || on["web_search"] || on["lsp"] {
		t.Errorf("builtins %+v", st.Builtins)
	}
}
