package gateway

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// autoEraConfig is a gateway in auto exposure whose threshold the echo
// server's tools exceed (so a client auto knows nothing of gets search,
// as 2026-07-28 clients get where dynamic would be), with one tool denied
// and one client named in toolsearch.clients.
func autoEraConfig(t *testing.T) string {
	return writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{
		"exposure": "auto", "threshold": 1, "contextWindow": 50000, // 500 tokens: below the echo tools and built-ins, with or without gopls
		"clients": map[string]string{"named-editor": "full"},
		"policy":  map[string]any{"deny": []string{"echo/delete_*"}},
		"http":    map[string]any{"exposures": []string{"auto", "full", "search"}},
		// Set explicitly, the resource tools are shown to every client, so
		// the built-ins do not vary by client here and a fixed endpoint's
		// lists stay public (TestBuiltinsPerClient covers the lists that
		// vary by the client's built-ins).
		"builtins": map[string]any{"resources": true},
	})
}

// autoWant is what auto gives each client in autoEraConfig: full lists
// the echo tools (deploy among them) and no search tool; search lists the
// search tool and not deploy.
var autoWant = []struct {
	client string
	full   bool
}{
	{"claude-code", true},  // defers MCP tools itself
	{"named-editor", true}, // toolsearch.clients
	{"plain-client", false},
}

// checkAutoList fails unless names is the list of full (or search)
// exposure of autoEraConfig, without the denied tool.
func checkAutoList(t *testing.T, client string, full bool, names []string) {
	t.Helper()
	hasDeploy := slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "deploy") })
	hasSearch := slices.Contains(names, searchToolName)
	if full && (!hasDeploy || hasSearch) || !full && (hasDeploy || !hasSearch) {
		t.Errorf("client %s (want full: %t) got %v", client, full, names)
	}
	for _, n := range names {
		if strings.Contains(n, "delete_") {
			t.Errorf("client %s is shown a denied tool: %s", client, n)
		}
	}
}

// connectNamed connects a Go SDK client of MCP 2026-07-28 that calls
// itself name.
func connectNamed(t *testing.T, tr mcp.Transport, name string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "2.1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: era2026})
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != era2026 {
		t.Fatalf("negotiated %s, want %s", got, era2026)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

func sortedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	return slices.Sorted(mapsKeys(listByName(t, cs)))
}

// TestAutoFor2026ClientsOverHTTP: on an auto endpoint each 2026-07-28
// request gets the list its own clientInfo name gives, the same every
// time whatever other clients ask in between; such lists say cacheScope
// private (they differ between clients of one endpoint), while a fixed
// endpoint's stay public; the name grants no denied tool.
func TestAutoFor2026ClientsOverHTTP(t *testing.T) {
	g := startGateway(t, autoEraConfig(t))
	waitState(t, g, "echo", 30*time.Second, StateReady)
	base := serveHTTP(t, g.Handler("")).URL

	sessions := map[string]*mcp.ClientSession{}
	for _, w := range autoWant {
		sessions[w.client] = connectNamed(t, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, w.client)
	}
	first := map[string][]string{}
	for round := range 3 { // interleaved: one client's requests do not move another's list
		for _, w := range autoWant {
			names := sortedNames(t, sessions[w.client])
			if round == 0 {
				checkAutoList(t, w.client, w.full, names)
				first[w.client] = names
			} else if !slices.Equal(names, first[w.client]) {
				t.Errorf("client %s's list changed between requests:\n%v\n%v", w.client, first[w.client], names)
			}
		}
	}

	// The name changes the shape of the list, never what may be called.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"delete_everything", "echo__delete_everything"} {
		res, err := sessions["claude-code"].CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Errorf("claude-code called the denied %s: %v", name, res.Content)
		}
	}

	// A client naming itself anew with each request makes no new server:
	// the names map to the few exposures.
	for i := range 40 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"client-%d","version":"1"}}}}`, i, era2026, i)
		if status, res := post(t, base+"/mcp", modernHeader("tools/list", "", era2026), body); status != 200 || res["result"] == nil {
			t.Fatalf("tools/list as client-%d: %d %v", i, status, res)
		}
	}
	if n := len(g.sharedSessions()); n > 2 {
		t.Errorf("%d shared servers after 40 client names; want at most 2 (auto's threshold and auto:full)", n)
	}

	for _, c := range []struct {
		path, client, scope string
	}{
		{"/mcp", "claude-code", scopePrivate},
		{"/mcp", "plain-client", scopePrivate},
		{"/mcp", "", scopePrivate}, // no clientInfo: the threshold's list
		{"/mcp/auto", "plain-client", scopePrivate},
		{"/mcp/full", "claude-code", scopePublic},
		{"/mcp/search", "plain-client", scopePublic},
	} {
		t.Run(fmt.Sprintf("cacheScope %s as %q", c.path, c.client), func(t *testing.T) {
			info := ""
			if c.client != "" {
				info = fmt.Sprintf(`,"io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"}`, c.client)
			}
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}%s}}}`, era2026, info)
			status, res := post(t, base+c.path, modernHeader("tools/list", "", era2026), body)
			r, _ := res["result"].(map[string]any)
			if status != 200 || r == nil {
				t.Fatalf("tools/list: %d %v", status, res)
			}
			if got := r["cacheScope"]; got != c.scope {
				t.Errorf("cacheScope %v, want %s", got, c.scope)
			}
			if c.client != "" && c.path == "/mcp" {
				var want bool
				for _, w := range autoWant {
					if w.client == c.client {
						want = w.full
					}
				}
				checkAutoList(t, c.client, want, rawToolNames(res))
			}
		})
	}
}

// TestAutoFor2026ClientsOverStdio: over stdio a 2026-07-28 connection's
// first request decides auto by its clientInfo name, each client gets its
// list every time, and a later request naming another client does not
// change the connection's list.
func TestAutoFor2026ClientsOverStdio(t *testing.T) {
	cfg := autoEraConfig(t)
	for _, w := range autoWant {
		t.Run(w.client, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(self(t))
			cmd.Env = append(os.Environ(), roleEnv+"=gateway-stdio", "TOOLSEARCH_TEST_CONFIG="+cfg, "TOOLSEARCH_TEST_MODE=auto")
			cmd.Stderr = os.Stderr
			cs := connectNamed(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, w.client)
			// The echo server may still be starting at the first list
			// (then the catalog is small, and fits under the threshold).
			settled := func(names []string) bool {
				return slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "deploy") }) == w.full &&
					slices.Contains(names, searchToolName) != w.full
			}
			deadline := time.Now().Add(20 * time.Second)
			names := sortedNames(t, cs)
			for !settled(names) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				names = sortedNames(t, cs)
			}
			checkAutoList(t, w.client, w.full, names)
			if again := sortedNames(t, cs); !slices.Equal(again, names) {
				t.Errorf("the list changed between requests:\n%v\n%v", names, again)
			}
		})
	}
	t.Run("one connection, two names", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, cfg)
		waitState(t, g, "echo", 30*time.Second, StateReady)
		r := connectRawStdio(t, g, "auto")
		as := func(name string) string {
			return fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"}}}`, era2026, name)
		}
		first := rawToolNames(r.call(t, "tools/list", as("claude-code")))
		checkAutoList(t, "claude-code", true, first)
		if later := rawToolNames(r.call(t, "tools/list", as("plain-client"))); !slices.Equal(later, first) {
			t.Errorf("a later request naming another client changed the connection's list:\n%v\n%v", first, later)
		}
	})
}
