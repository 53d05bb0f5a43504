package clients

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// matrixEnv set to "all" runs the warm cases too; by default only the
// cold cases run (a first launch is where clients lose tools), which
// keeps the matrix within the test budget.
const matrixEnv = "TOOLSEARCH_CLIENTS_MATRIX"

// matrixCase is one cell of the client matrix.
type matrixCase struct {
	client, version, exposure, transport string
	warm                                 bool
}

func (c matrixCase) name() string {
	state := "cold"
	if c.warm {
		state = "warm"
	}
	return strings.Join([]string{c.client, c.version, c.exposure, c.transport, state}, "/")
}

// matrixCases are every client version × exposure × transport × cold or
// warm.
func matrixCases() []matrixCase {
	var out []matrixCase
	for _, cv := range []struct{ client, version string }{
		{"claude", claudeCodeVersion}, {"claude", claudeCodePrevious}, {"codex", codexVersion}, {"codex", codexPrevious},
	} {
		for _, exp := range []string{"auto", "full", "search", "dynamic"} {
			for _, tr := range []string{transportStdio, transportHTTP} {
				for _, warm := range []bool{false, true} {
					out = append(out, matrixCase{cv.client, cv.version, exp, tr, warm})
				}
			}
		}
	}
	return out
}

// TestClientMatrix runs each client, at each pinned version, through the
// gateway in every exposure, over stdio and HTTP, on a first launch (an
// empty state directory) and warm (toolsearch status ran first): one
// real turn against the stand-in model API, in which the scripted model
// uses the tools the client offered it (create_entities itself, or the
// gateway's search and call_tool). Each case checks what the model was
// offered, the calls the client sent the gateway, and that the memory
// server recorded the entity. The test logs one line per case and the
// whole table at the end:
//
//	go test -v -run TestClientMatrix ./tests/clients
func TestClientMatrix(t *testing.T) {
	t.Parallel()
	toolsearchBin(t)
	var mu sync.Mutex
	var rows []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(rows)
		t.Logf("client matrix (%d cases run):\n%-44s %-6s %s\n%s", len(rows), "client/version/exposure/transport/state", "result", "wall",
			strings.Join(rows, "\n"))
	})
	for _, c := range matrixCases() {
		t.Run(c.name(), func(t *testing.T) {
			if c.warm && os.Getenv(matrixEnv) != "all" {
				t.Skipf("a warm case: %s=all runs it", matrixEnv)
			}
			t.Parallel()
			start := time.Now()
			t.Cleanup(func() {
				result := "pass"
				switch {
				case t.Skipped():
					result = "skip"
				case t.Failed():
					result = "FAIL"
				}
				row := fmt.Sprintf("%-44s %-6s %v", c.name(), result, time.Since(start).Round(100*time.Millisecond))
				t.Log(row)
				mu.Lock()
				rows = append(rows, row)
				mu.Unlock()
			})
			gw := map[string]any{"exposure": c.exposure}
			switch c.client {
			case "claude":
				checkClaudeCase(t, c, runClaudeWith(t, claudeRun{version: c.version, gw: gw, transport: c.transport, warm: c.warm}))
			case "codex":
				checkCodexCase(t, c, runCodex(t, codexRun{version: c.version, gw: gw, transport: c.transport, warm: c.warm}))
			}
		})
	}
}

// checkClaudeCase checks one Claude Code case. auto gives Claude Code
// full (it defers MCP tools itself); dynamic is search for it, as it
// speaks MCP 2026-07-28.
func checkClaudeCase(t *testing.T, c matrixCase, s claudeSession) {
	t.Helper()
	var uses, calls []string
	switch c.exposure {
	case "auto", "full":
		uses, calls = []string{ccToolSearch, ccCreate}, []string{"memory__create_entities"}
	case "search", "dynamic":
		uses, calls = []string{ccSearch, ccCall}, []string{"search_tools", "call_tool"}
	}
	if got := s.toolUses(); !slices.Equal(got, uses) {
		t.Errorf("tool_use in the conversation: %v, want %v", got, uses)
	}
	var got []string
	for _, tc := range toolCalls(s.sent) {
		got = append(got, tc.Name)
	}
	if !slices.Equal(got, calls) {
		t.Errorf("Claude Code called the gateway's %v, want %v", got, calls)
	}
	switch c.exposure {
	case "auto", "full":
		// The first request announces create_entities among the
		// deferred tools: the first tools/list held the memory server's
		// tools, cold or warm.
		checkDeferredByClaudeCode(t, s)
	default:
		first := s.requests[0]
		for _, name := range []string{ccSearch, ccCall} {
			if p, d := first.tool(name); !p || d {
				t.Errorf("%s in the first request: present %v, deferred %v; want loaded (it carries anthropic/alwaysLoad)", name, p, d)
			}
		}
	}
	if !strings.Contains(s.memory, `"name":"Ada Lovelace"`) {
		t.Errorf("the memory server did not record the entity: %q", s.memory)
	}
	if !strings.Contains(s.result, "Done: ") || !strings.Contains(s.result, "Ada Lovelace") {
		t.Errorf("the model did not get the memory server's answer: %q", s.result)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", tail([]byte(s.log), 4000))
	}
}

// checkCodexCase checks one Codex case. auto gives Codex full (the
// memory server's tools fit under the threshold).
func checkCodexCase(t *testing.T, c matrixCase, s codexSession) {
	t.Helper()
	first := namespaceTools(s.requests[0], codexNamespace)
	var calls []string
	switch c.exposure {
	case "auto", "full":
		// Codex goes on about a second after it started the gateway: a
		// first list answered before the memory server was up holds the
		// gateway's search_tools and call_tool, which reach it.
		switch {
		case slices.Contains(first, codexCreate):
			calls = []string{codexCreate}
		case c.warm:
			t.Errorf("the first model request offers the gateway's %v, without %s, though the state directory was warm", first, codexCreate)
		case slices.Contains(first, "search_tools") && slices.Contains(first, "call_tool"):
			calls = []string{"search_tools", "call_tool"}
		default:
			t.Errorf("the first model request offers the gateway's %v: neither %s nor search_tools and call_tool, which reach it", first, codexCreate)
		}
		t.Logf("the first model request offers %v", first)
	case "search":
		for i, r := range s.requests {
			if got := namespaceTools(r, codexNamespace); !slices.Equal(got, codexTools) {
				t.Errorf("request %d offers the gateway's %v, want the constant %v", i, got, codexTools)
			}
		}
		calls = []string{"search_tools", "call_tool"}
	case "dynamic":
		if !slices.Equal(first, codexTools) {
			t.Errorf("the first model request offers the gateway's %v, want %v", first, codexTools)
		}
		calls = []string{"search_tools", "call_tool"}
		if slices.Contains(namespaceTools(s.requests[len(s.requests)-1], codexNamespace), codexCreate) {
			calls = []string{"search_tools", codexCreate}
		}
	}
	if got := s.calls(); !slices.Equal(got, calls) {
		t.Errorf("Codex called the gateway's %v, want %v", got, calls)
	}
	if outs := s.toolOutputs(); len(outs) == 0 || !strings.Contains(outs[len(outs)-1], "Ada Lovelace") {
		t.Errorf("the tool outputs Codex relayed: %q", outs)
	}
	if !strings.Contains(s.memory, `"name":"Ada Lovelace"`) {
		t.Errorf("the memory server did not record the entity: %q", s.memory)
	}
	if !strings.HasPrefix(s.final, "Done: ") || !strings.Contains(s.final, "Ada Lovelace") {
		t.Errorf("Codex's last message %q does not hold the memory server's answer\nstdout: %s", s.final, tail(s.stdout, 2000))
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", tail([]byte(s.log), 4000))
	}
}
