package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// policyPair is a tool that policy denies and a tool of the same server that
// it allows, with the arguments and the answers that show a call went
// through.
type policyPair struct {
	rule             string // the rule that denies
	server           string
	denied, allowed  string
	deniedArgs       map[string]any
	deniedAnswerWord string // in the denied tool's answer, were it ever called
	// allowedCall returns the arguments of a call of the allowed tool and
	// what its answer must contain (new each time: memory answers only
	// with the entities it did not have).
	allowedCall func() (map[string]any, string)
}

var policyCalls atomic.Int64

func fixedCall(args map[string]any, answer string) func() (map[string]any, string) {
	return func() (map[string]any, string) { return args, answer }
}

func (p policyPair) wire(tool string) string { return p.server + "__" + tool }

// policyPairs: one pair for each way a tool is denied (a global deny glob, a
// server's deny glob, a server's allow list that leaves the tool out, and a
// global deny of a built-in resource tool), over real servers.
var policyPairs = []policyPair{
	{rule: `global deny "*/get-e*"`, server: "everything", denied: "get-env", allowed: "get-sum",
		deniedArgs: map[string]any{}, deniedAnswerWord: "PATH",
		allowedCall: fixedCall(map[string]any{"a": 2, "b": 3}, "5")},
	{rule: `server memory: deny "delete_*"`, server: "memory", denied: "delete_entities", allowed: "create_entities",
		deniedArgs: map[string]any{"entityNames": []string{"policy-test-1"}}, deniedAnswerWord: "deleted",
		allowedCall: func() (map[string]any, string) {
			name := fmt.Sprintf("policy-test-%d", policyCalls.Add(1))
			return map[string]any{"entities": []any{map[string]any{"name": name, "entityType": "test", "observations": []string{"kept"}}}}, name
		}},
	{rule: `server tester: allow ["echo", "deploy", "slow"]`, server: "tester", denied: "delete_everything", allowed: "slow",
		deniedArgs: map[string]any{}, deniedAnswerWord: "DELETED",
		allowedCall: fixedCall(map[string]any{"millis": 4}, "done")},
	{rule: `global deny "builtin/read_resource"`, server: "builtin", denied: "read_resource", allowed: "list_resources",
		deniedArgs: map[string]any{"server": "everything", "uri": "demo://resource/static/document/architecture.md"}, deniedAnswerWord: "architecture",
		allowedCall: fixedCall(map[string]any{}, "everything")},
}

// queryForms are every form of search query, as a function of the pair and
// the tool looked for (some forms name both tools of the pair: the allowed
// one must be found by it, the denied one not).
var queryForms = []struct {
	name string
	q    func(g *Gateway, p policyPair, tool string) string
}{
	{"keywords from the description", func(g *Gateway, p policyPair, tool string) string {
		t, ok := g.Snapshot().Tool(p.server + "/" + tool)
		if !ok {
			return tool
		}
		words := strings.Fields(t.Description)
		return strings.Join(words[:min(len(words), 8)], " ")
	}},
	{"+required name words", func(g *Gateway, p policyPair, tool string) string {
		return "+" + strings.Join(strings.FieldsFunc(tool, func(r rune) bool { return r == '_' || r == '-' }), " +")
	}},
	{"exact bare name", func(g *Gateway, p policyPair, tool string) string { return tool }},
	{"exact wire name", func(g *Gateway, p policyPair, tool string) string { return p.wire(tool) }},
	{"exact mcp__ name", func(g *Gateway, p policyPair, tool string) string { return "mcp__" + p.wire(tool) }},
	{"exact server/tool", func(g *Gateway, p policyPair, tool string) string { return p.server + "/" + tool }},
	{"select: wire name", func(g *Gateway, p policyPair, tool string) string { return "select:" + p.wire(tool) }},
	{"select: bare name", func(g *Gateway, p policyPair, tool string) string { return "select:" + tool }},
	{"select: server/tool", func(g *Gateway, p policyPair, tool string) string { return "select:" + p.server + "/" + tool }},
	{"SELECT: mcp__ name", func(g *Gateway, p policyPair, tool string) string { return "SELECT:mcp__" + p.wire(tool) }},
	{"select: both", func(g *Gateway, p policyPair, tool string) string {
		return "select:" + p.wire(p.denied) + "," + p.wire(p.allowed)
	}},
	{"server name", func(g *Gateway, p policyPair, tool string) string { return p.server }},
	{"server prefix", func(g *Gateway, p policyPair, tool string) string { return p.server + "__" }},
	{"mcp__ server prefix", func(g *Gateway, p policyPair, tool string) string { return "mcp__" + p.server }},
	{"regex of the name", func(g *Gateway, p policyPair, tool string) string {
		return "^" + regexp.QuoteMeta(tool[:len(tool)-2]) + ".*$"
	}},
	{"regex of both", func(g *Gateway, p policyPair, tool string) string {
		return "(" + regexp.QuoteMeta(p.denied) + "|" + regexp.QuoteMeta(p.allowed) + ")"
	}},
}

// policyGateway starts the gateway over everything, memory and the echo
// server (as "tester") with the rules of policyPairs, plus an ask rule on
// tester/deploy. With alwaysLoad, every tool is always loaded and auto picks dynamic.
func policyGateway(t *testing.T, alwaysLoad bool) *Gateway {
	t.Helper()
	echo := roleServer(t, "echo")
	echo["allow"] = []string{"echo", "deploy", "slow"}
	servers := map[string]any{
		"everything": map[string]any{"command": npmBin(t, "mcp-server-everything")},
		"memory": map[string]any{"command": npmBin(t, "mcp-server-memory"), "deny": []string{"delete_*"},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"tester": echo,
	}
	gw := map[string]any{
		"limits": map[string]any{"startTimeout": "60s"},
		"policy": map[string]any{"deny": []string{"*/get-e*", "builtin/read_resource"}, "ask": []string{"tester/deploy"}},
	}
	if alwaysLoad {
		for _, s := range servers {
			s.(map[string]any)["alwaysLoad"] = true
		}
		gw["builtins"] = map[string]any{"resources": map[string]any{"alwaysLoad": true}}
		gw["contextWindow"], gw["threshold"] = 1000, 1
	}
	g := startGateway(t, writeConfig(t, servers, gw))
	for k := range servers {
		waitState(t, g, k, 60*time.Second, StateReady)
	}
	for _, p := range policyPairs {
		for _, tool := range []string{p.denied, p.allowed} {
			if _, ok := g.Snapshot().Tool(p.server + "/" + tool); !ok {
				t.Fatalf("the catalog lacks %s/%s: the test would prove nothing", p.server, tool)
			}
		}
	}
	return g
}

// searchAll runs search_tools and returns every name it gave (with and
// without schema), or the error text.
func searchAll(t *testing.T, c *client, query string) ([]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": query, "max_results": 50}})
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, b.String()
	}
	var out searchOutput
	if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
		t.Fatalf("search %q: %v in %s", query, err, b.String())
	}
	var names []string
	for _, h := range append(out.Tools, out.More...) {
		names = append(names, h.Name)
	}
	return names, ""
}

// directCall calls a tool by its own name.
func directCall(c *client, name string, args map[string]any) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// checkPath asserts, for one path, that the denied tool of every pair is
// not reachable and the allowed one is. reach reports whether the tool is
// reachable by the path, with a detail for the failure message.
func checkPath(t *testing.T, path string, reach func(p policyPair, tool string) (bool, string)) {
	t.Helper()
	for _, p := range policyPairs {
		if ok, detail := reach(p, p.denied); ok {
			t.Errorf("%s: denied tool %s (%s) is reachable: %s", path, p.wire(p.denied), p.rule, detail)
		}
		if ok, detail := reach(p, p.allowed); !ok {
			t.Errorf("%s: allowed tool %s (same server as %s) is not reachable: %s", path, p.wire(p.allowed), p.denied, detail)
		}
	}
}

// callReach is a reach function for a call: the allowed tool must answer
// with its answer; the denied one must fail without a trace of its answer.
func callReach(call func(p policyPair, tool string, args map[string]any) (string, bool)) func(p policyPair, tool string) (bool, string) {
	return func(p policyPair, tool string) (bool, string) {
		if tool == p.allowed {
			args, answer := p.allowedCall()
			text, isErr := call(p, tool, args)
			return !isErr && strings.Contains(text, answer), text
		}
		text, isErr := call(p, tool, p.deniedArgs)
		return !isErr || strings.Contains(text, p.deniedAnswerWord), text
	}
}

func listReach(t *testing.T, c *client) func(p policyPair, tool string) (bool, string) {
	names := c.toolNames(t)
	return func(p policyPair, tool string) (bool, string) {
		return slices.Contains(names, p.wire(tool)), strings.Join(names, ", ")
	}
}

// TestPolicyEveryPath enumerates every path by which a client can list,
// find or call a tool (tools/list in every exposure mode, search_tools in
// every query form, the dynamic list after a search, call_tool by every
// form of the name, a direct call in full and dynamic mode and of an
// always-loaded tool, the built-in resource tools) and proves that a denied
// tool is reachable by none while an allowed tool of the same server is
// reachable by each. Ask rules refuse with the reason when the client
// cannot ask the user, on every call path.
//
// Policy rules are about tools; resources and prompts are not tools and
// are not filtered by them (a server whose resources must stay hidden is
// disabled instead). The built-in resource tools are tools, and are.
func TestPolicyEveryPath(t *testing.T) {
	t.Parallel()
	t.Run("deferred", func(t *testing.T) {
		t.Parallel()
		g := policyGateway(t, false)
		srv := serveHTTP(t, g.Handler(""))
		if m, _ := g.Exposure(); m != "full" {
			t.Fatalf("auto picks %s; this run wants full", m)
		}

		full := connectHTTP(t, srv.URL+"/mcp/full", nil)
		checkPath(t, "tools/list (full)", listReach(t, full))
		checkPath(t, "tools/list (auto, which is full)", listReach(t, connectHTTP(t, srv.URL+"/mcp/auto", nil)))
		checkPath(t, "direct call (full)", callReach(func(p policyPair, tool string, args map[string]any) (string, bool) {
			return directCall(full, p.wire(tool), args)
		}))

		searcher := connectHTTP(t, srv.URL+"/mcp/search", nil)
		for _, f := range queryForms {
			checkPath(t, "search_tools, "+f.name, func(p policyPair, tool string) (bool, string) {
				q := f.q(g, p, tool)
				hits, errText := searchAll(t, searcher, q)
				return slices.Contains(hits, p.wire(tool)), q + " → " + strings.Join(hits, ", ") + errText
			})
		}
		for _, form := range []struct {
			name string
			f    func(p policyPair, tool string) string
		}{
			{"wire name", func(p policyPair, tool string) string { return p.wire(tool) }},
			{"mcp__ name", func(p policyPair, tool string) string { return "mcp__" + p.wire(tool) }},
			{"server/tool", func(p policyPair, tool string) string { return p.server + "/" + tool }},
			{"bare name", func(p policyPair, tool string) string { return tool }},
			{"name in spaces", func(p policyPair, tool string) string { return " " + p.wire(tool) + " " }},
		} {
			checkPath(t, "call_tool by "+form.name, callReach(func(p policyPair, tool string, args map[string]any) (string, bool) {
				return callTool(searcher, form.f(p, tool), args, 30*time.Second)
			}))
		}

		// Dynamic: no search loads a denied tool into the list, in any
		// form; every search for the allowed one does.
		dyn := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
		for _, f := range queryForms {
			checkPath(t, "dynamic tools/list after search_tools, "+f.name, func(p policyPair, tool string) (bool, string) {
				q := f.q(g, p, tool)
				hits, errText := searchAll(t, dyn, q)
				var names []string
				deadline := time.Now().Add(5 * time.Second)
				for {
					names = dyn.toolNames(t)
					if slices.Contains(names, p.wire(tool)) || tool == p.denied || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				return slices.Contains(names, p.wire(tool)), q + " found " + strings.Join(hits, ", ") + errText + "; list: " + strings.Join(names, ", ")
			})
		}
		checkPath(t, "direct call (dynamic, after search)", callReach(func(p policyPair, tool string, args map[string]any) (string, bool) {
			if _, errText := searchAll(t, dyn, "select:"+p.wire(tool)); errText != "" {
				return errText, true
			}
			return directCall(dyn, p.wire(tool), args)
		}))

		// Ask: listed and found (ask is not deny), refused on every call
		// path when the client cannot ask, allowed once the user agrees.
		if !slices.Contains(full.toolNames(t), "tester__deploy") {
			t.Error("the ask tool tester__deploy is not listed in full mode")
		}
		if hits, _ := searchAll(t, searcher, "select:tester__deploy"); !slices.Contains(hits, "tester__deploy") {
			t.Errorf("select:tester__deploy found %v", hits)
		}
		for path, call := range map[string]func() (string, bool){
			"call_tool":          func() (string, bool) { return callTool(searcher, "tester__deploy", nil, 30*time.Second) },
			"direct call (full)": func() (string, bool) { return directCall(full, "tester__deploy", nil) },
			"direct call (dynamic)": func() (string, bool) {
				searchAll(t, dyn, "select:tester__deploy")
				return directCall(dyn, "tester__deploy", nil)
			},
			"call_tool by server/tool":   func() (string, bool) { return callTool(searcher, "tester/deploy", nil, 30*time.Second) },
			"call_tool by the bare name": func() (string, bool) { return callTool(searcher, "deploy", nil, 30*time.Second) },
		} {
			text, isErr := call()
			if !isErr || strings.Contains(text, "deployed") || !strings.Contains(text, "approval") ||
				!strings.Contains(text, "elicitation") || !strings.Contains(text, "tester/deploy") {
				t.Errorf("ask without elicitation, %s: %q, error %v", path, text, isErr)
			}
		}
		asker := connectHTTP(t, srv.URL+"/mcp/search", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
		})
		if text, isErr := callTool(asker, "tester__deploy", nil, 30*time.Second); isErr || text != "deployed" {
			t.Errorf("ask with elicitation, approved: %q, %v", text, isErr)
		}
	})

	t.Run("always-loaded", func(t *testing.T) {
		t.Parallel()
		g := policyGateway(t, true)
		srv := serveHTTP(t, g.Handler(""))
		if m, _ := g.Exposure(); m != "dynamic" {
			t.Fatalf("auto picks %s; this run wants dynamic", m)
		}
		for _, mode := range []string{"full", "search", "dynamic", "auto"} {
			c := connectHTTP(t, srv.URL+"/mcp/"+mode, nil)
			checkPath(t, "tools/list ("+mode+", always-loaded tools)", listReach(t, c))
			checkPath(t, "direct call ("+mode+", always-loaded tools)", callReach(func(p policyPair, tool string, args map[string]any) (string, bool) {
				return directCall(c, p.wire(tool), args)
			}))
		}
	})
}
