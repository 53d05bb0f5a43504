package gateway

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPolicyWarningsWithRealServer: against the real memory server, a
// rule naming a misspelt server and one naming a misspelt tool are both
// reported, each with the name meant, and logged once every server has
// settled; rules that match stay quiet.
func TestPolicyWarningsWithRealServer(t *testing.T) {
	t.Parallel()
	memory := map[string]any{"command": npmBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"},
		"ask": []string{"delte_relations", "read_graph"}}
	g, logs := newGatewayLogged(t, map[string]any{"memory": memory},
		map[string]any{"limits": map[string]any{"startTimeout": "60s"}, "builtins": map[string]any{"lsp": false},
			"policy": map[string]any{"deny": []string{"memroy/delete_*", "memory/delete_observations", "memory/serch_*", "*/nothing_like_it", "builtin/web_fetch"}}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "memory", 60*time.Second, StateReady)

	want := map[string]string{ // pattern → what the warning must say
		"memroy/delete_*":   `did you mean "memory/delete_*"?`,
		"memory/serch_*":    `did you mean "memory/search_*"?`,
		"*/nothing_like_it": "matches none of the tools",
		"delte_relations":   `did you mean "delete_relations"?`,
	}
	got := map[string]string{}
	for _, w := range g.PolicyWarnings() {
		got[w.Pattern] = w.String()
	}
	for pat, text := range want {
		if !strings.Contains(got[pat], text) {
			t.Errorf("warning of %q = %q, want it to say %q", pat, got[pat], text)
		}
	}
	if len(got) != len(want) {
		t.Errorf("warnings %q, want only those of %d patterns", got, len(want))
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "serch_") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := logs.String()
	for pat := range want {
		if !strings.Contains(out, pat) {
			t.Errorf("the log does not name %q:\n%s", pat, out)
		}
	}
}

// TestFailedServerErrorLeadsWithCause: a real node server given a script
// that does not exist fails, and its error names the missing module
// rather than ending in node's stack frames.
func TestFailedServerErrorLeadsWithCause(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	missing := filepath.Join(t.TempDir(), "server-memory", "dist", "index.js")
	g, _ := newGatewayLogged(t, map[string]any{"memory": map[string]any{"command": node, "args": []string{missing}}},
		map[string]any{"limits": map[string]any{"startTimeout": "30s", "maxRestarts": 0}, "builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	st := waitState(t, g, "memory", 30*time.Second, StateFailed, StateRestarting)
	_, stderr, ok := strings.Cut(st.Error, "stderr: ")
	if !ok || !strings.HasPrefix(stderr, "Error: Cannot find module '"+missing+"'") {
		t.Errorf("error = %q, want its stderr part to start with node's Cannot find module line", st.Error)
	}
	if strings.Contains(st.Error, "node:internal") {
		t.Errorf("error keeps stack frames: %q", st.Error)
	}
}
