package gateway

// Attacks through names and policy: a hostile upstream that lists tools
// named like another server's, tool names clients refuse, server-local
// policy globs with "__", and the prompts and resources of a server whose
// tools are all denied.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// callTool calls call_tool (or, on a full session, the tool natively when
// native is set) and returns the text and whether it is an error.
func callThrough(t *testing.T, c *client, name string, native bool) (string, bool) {
	t.Helper()
	if native {
		return c.call(t, name, map[string]any{})
	}
	return c.call(t, callToolName, map[string]any{"name": name, "arguments": map[string]any{}})
}

// TestQualifiedNameNeverReachesAnotherServer: server evil lists tools whose
// bare names are memory's qualified names. While memory's own tool is
// denied, no name form of it, in no path, may run evil's tool; evil's
// look-alikes are not listed or found at all, and the log says why.
func TestQualifiedNameNeverReachesAnotherServer(t *testing.T) {
	t.Parallel()
	memory := map[string]any{"command": npmBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"},
		"deny": []string{"delete_entities", "read_graph", "open_nodes"}}
	g, logs := newGatewayLogged(t, map[string]any{"memory": memory, "evil": attackServer(t, "impostor", "evil")},
		map[string]any{"limits": map[string]any{"startTimeout": "60s"}, "builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "memory", 60*time.Second, StateReady)
	waitState(t, g, "evil", 60*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	searching := connectHTTP(t, srv.URL+"/mcp/search", nil)

	names := full.toolNames(t)
	for _, n := range names {
		if l := strings.ToLower(n); strings.Contains(l, "delete_entities") || strings.Contains(l, "read_graph") || strings.Contains(l, "open_nodes") ||
			strings.Contains(l, "memory__create_entities") && strings.HasPrefix(n, "evil") {
			t.Errorf("the full list shows %s, a denied tool or a look-alike of one: %v", n, names)
		}
	}
	if !slices.Contains(names, "evil__evil_ok") {
		t.Errorf("evil's own tool is missing: %v", names)
	}
	forms := []string{"memory__delete_entities", "mcp__memory__delete_entities", "memory/delete_entities",
		"memory__read_graph", "mcp__memory__read_graph", "memory__open_nodes", "memory/open_nodes"}
	for _, name := range forms {
		for _, c := range []struct {
			who    string
			cl     *client
			native bool
		}{{"call_tool", searching, false}, {"native", full, true}} {
			text, isErr := callThrough(t, c.cl, name, c.native)
			if !isErr || strings.Contains(text, "evil ran") {
				t.Errorf("%s %s = %q (error %v): a call for memory ran elsewhere or was allowed", c.who, name, text, isErr)
			}
		}
		if hits := searching.search(t, "select:"+name); len(hits) > 0 {
			t.Errorf("select:%s found %v", name, hits)
		}
		if hits := searching.search(t, name); slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, "evil") }) {
			t.Errorf("searching %s found evil's look-alike: %v", name, hits)
		}
	}
	// memory's allowed tool, named exactly, is found alone: not after or
	// beside evil's case-variant look-alikes of it.
	for _, q := range []string{"select:memory__create_entities", "select:Memory__create_entities", "select:mcp__memory__create_entities"} {
		if hits := searching.search(t, q); !slices.Equal(hits, []string{"memory__create_entities"}) {
			t.Errorf("%s found %v, want memory's tool alone", q, hits)
		}
	}
	if hits := searching.search(t, "memory__create_entities"); len(hits) == 0 || hits[0] != "memory__create_entities" ||
		slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, "evil") }) {
		t.Errorf("searching memory__create_entities found %v, want memory's tool first and nothing of evil's", hits)
	}
	if text, isErr := callThrough(t, searching, "evil__evil_ok", false); isErr || text != "evil ran evil_ok" {
		t.Errorf("evil's own tool: %q (error %v)", text, isErr)
	}
	if text, isErr := callThrough(t, searching, "memory__create_entities", false); isErr && strings.Contains(text, "no tool") {
		t.Errorf("memory's allowed tool cannot be called: %q", text)
	}
	if out := logs.String(); !strings.Contains(out, "refusing a tool whose name is a qualified name of another server") ||
		!strings.Contains(out, "names_server=memory") {
		t.Errorf("the log does not say the look-alikes were refused:\n%s", out)
	}
}

// TestQualifiedNameWaitsForItsServer: while memory starts, a call of
// memory__echo waits for memory and runs memory's echo, never the evil
// server's tool of that literal name that is already listed.
func TestQualifiedNameWaitsForItsServer(t *testing.T) {
	t.Parallel()
	memory, openGate := gatedServer(t, "slow-start")
	g, _ := newGatewayLogged(t, map[string]any{"memory": memory, "evil": attackServer(t, "impostor", "evil")},
		map[string]any{"limits": map[string]any{"startTimeout": "30s"}, "builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "evil", 30*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/search", nil)

	type result struct {
		text  string
		isErr bool
	}
	done := make(chan result, 2)
	for _, name := range []string{"memory__echo", "mcp__memory__echo"} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName,
				Arguments: map[string]any{"name": name, "arguments": map[string]any{"text": "from memory"}}})
			if err != nil {
				done <- result{err.Error(), true}
				return
			}
			b, _ := json.Marshal(res.Content)
			done <- result{string(b), res.IsError}
		}()
	}
	time.Sleep(500 * time.Millisecond) // both calls are waiting for memory now
	openGate()
	for range 2 {
		r := <-done
		if r.isErr || strings.Contains(r.text, "evil ran") || !strings.Contains(r.text, "from memory") {
			t.Errorf("a call for memory during its start = %s (error %v), want memory's echo", r.text, r.isErr)
		}
	}
}

// TestInvalidToolNamesGetSafeAliases: tool names with spaces, newlines,
// 5,000 characters or non-ASCII never reach a client's list; each is
// listed under a valid alias, found by it, and callable by it, and the
// server is called with the tool's own name.
func TestInvalidToolNamesGetSafeAliases(t *testing.T) {
	t.Parallel()
	g, logs := newGatewayLogged(t, map[string]any{"evil": attackServer(t, "impostor", "evil"), "echo": roleServer(t, "echo")},
		map[string]any{"builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "evil", 30*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	searching := connectHTTP(t, srv.URL+"/mcp/search", nil)

	names := full.toolNames(t)
	for _, n := range names {
		if !catalog.ValidName(n) {
			t.Errorf("the full list holds an invalid tool name %.80q", n)
		}
	}
	v := g.cur.Load()
	for _, orig := range invalidToolNames {
		tool, ok := v.snap.Tool("evil/" + orig)
		if !ok {
			t.Fatalf("evil/%.20q is not in the catalog", orig)
		}
		alias := v.names.toolName(tool)
		if !catalog.ValidName(alias) || len(alias) > aliasLength || !strings.HasPrefix(alias, "evil__") {
			t.Errorf("%.20q is exposed as %.80q", orig, alias)
		}
		if !slices.Contains(names, alias) {
			t.Errorf("the full list lacks the alias %s", alias)
		}
		for _, native := range []bool{true, false} {
			cl := searching
			if native {
				cl = full
			}
			if text, isErr := callThrough(t, cl, alias, native); isErr || text != "evil ran "+orig {
				t.Errorf("calling %s (native %v) = %.80q (error %v), want the tool run by its own name", alias, native, text, isErr)
			}
		}
		if hits := searching.search(t, "select:evil__evil_ok,"+alias); !slices.Equal(hits, []string{"evil__evil_ok", alias}) {
			t.Errorf("select: of the alias found %v", hits)
		}
	}
	if hits := searching.search(t, "hostile test tool drop table"); !slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, "evil__drop_table_") }) {
		t.Errorf("a keyword search does not find the aliased tool: %v", hits)
	}
	if out := logs.String(); !strings.Contains(out, "not a valid MCP tool name") {
		t.Errorf("the log does not say a name was replaced:\n%s", out)
	}
}

// TestServerGlobsWithDoubleUnderscore: a server's own deny globs match its
// bare names literally, "__" and all, so the tools they name are invisible
// in every path; a pattern that can match nothing is warned of at start.
func TestServerGlobsWithDoubleUnderscore(t *testing.T) {
	t.Parallel()
	db := attackServer(t, "db", "db")
	db["deny"] = []string{"drop__table", "admin__*", "db/x/y", "mcp__other__thing"}
	g, logs := newGatewayLogged(t, map[string]any{"db": db, "echo": roleServer(t, "echo")}, map[string]any{"builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "db", 30*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	searching := connectHTTP(t, srv.URL+"/mcp/search", nil)

	names := full.toolNames(t)
	if slices.Contains(names, "db__drop__table") || slices.Contains(names, "db__admin__reset") || !slices.Contains(names, "db__select_rows") {
		t.Errorf("full list: %v", names)
	}
	for _, q := range []string{"drop table", "db__drop__table", "select:db__drop__table,db__admin__reset", "db", "admin reset"} {
		if hits := searching.search(t, q); slices.Contains(hits, "db__drop__table") || slices.Contains(hits, "db__admin__reset") {
			t.Errorf("search %q found a denied tool: %v", q, hits)
		}
	}
	for _, name := range []string{"db__drop__table", "mcp__db__drop__table", "db/drop__table", "db__admin__reset"} {
		if text, isErr := callThrough(t, searching, name, false); !isErr || strings.Contains(text, "db ran") {
			t.Errorf("call_tool %s = %q (error %v)", name, text, isErr)
		}
		if text, isErr := callThrough(t, full, name, true); !isErr || strings.Contains(text, "db ran") {
			t.Errorf("native %s = %q (error %v)", name, text, isErr)
		}
	}
	out := logs.String()
	for _, pat := range []string{"db/x/y", "mcp__other__thing"} {
		if !strings.Contains(out, "a policy pattern can match nothing") || !strings.Contains(out, pat) {
			t.Errorf("no warning of %s:\n%s", pat, out)
		}
	}
	if strings.Contains(out, "pattern=drop__table") {
		t.Errorf("a valid pattern was warned of:\n%s", out)
	}
}

// TestPolicyCoversPromptsAndResources: the prompts and resources of a
// server whose every tool is denied are neither listed nor readable in any
// path (resources/read, prompts/get, subscribe, completion, the
// read_resource tool), unless an allow glob names them; prompt and resource
// globs of their own hide the ones they name.
func TestPolicyCoversPromptsAndResources(t *testing.T) {
	t.Parallel()
	closed := attackServer(t, "db", "closed")
	closed["deny"] = []string{"*"}
	reopened := attackServer(t, "db", "reopened")
	reopened["deny"] = []string{"*"}
	reopened["resources"] = map[string]any{"allow": []string{"reopened://*"}}
	open := attackServer(t, "db", "open")
	open["prompts"] = map[string]any{"deny": []string{"open_*"}}
	g, _ := newGatewayLogged(t, map[string]any{"closed": closed, "reopened": reopened, "open": open},
		map[string]any{"builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	for _, k := range []string{"closed", "reopened", "open"} {
		waitState(t, g, k, 30*time.Second, StateReady)
	}
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/full", nil)
	lctx, lcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer lcancel()

	var uris, prompts []string
	for r, err := range c.cs.Resources(lctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	for p, err := range c.cs.Prompts(lctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	slices.Sort(uris)
	if want := []string{"open://secret", "reopened://secret"}; !slices.Equal(uris, want) {
		t.Errorf("resources listed: %v, want %v", uris, want)
	}
	if len(prompts) != 0 {
		t.Errorf("prompts listed: %v, want none (closed and reopened have every tool denied, open's are denied by name)", prompts)
	}
	for _, uri := range []string{"closed://secret", "toolsearch://closed/closed%3A%2F%2Fsecret"} {
		if res, err := c.cs.ReadResource(lctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("resources/read %s = %+v, want an error", uri, res.Contents)
		}
		if err := c.cs.Subscribe(lctx, &mcp.SubscribeParams{URI: uri}); err == nil {
			t.Errorf("resources/subscribe %s succeeded", uri)
		}
	}
	if res, err := c.cs.ReadResource(lctx, &mcp.ReadResourceParams{URI: "reopened://secret"}); err != nil || len(res.Contents) == 0 {
		t.Errorf("an allowed resource of a closed server: %v", err)
	}
	for _, name := range []string{"closed__closed_prompt", "closed_prompt", "open__open_prompt"} {
		if _, err := c.cs.GetPrompt(lctx, &mcp.GetPromptParams{Name: name}); err == nil {
			t.Errorf("prompts/get %s succeeded", name)
		}
	}
	text, isErr := c.call(t, "builtin__read_resource", map[string]any{"server": "closed", "uri": "closed://secret"})
	if !isErr || strings.Contains(text, "SECRET") {
		t.Errorf("the read_resource tool read a denied resource: %q", text)
	}
	if text, isErr := c.call(t, "builtin__read_resource", map[string]any{"server": "reopened", "uri": "reopened://secret"}); isErr || !strings.Contains(text, "SECRET") {
		t.Errorf("the read_resource tool cannot read an allowed resource: %q", text)
	}
	if text, isErr := c.call(t, "builtin__list_resources", map[string]any{}); isErr || strings.Contains(text, "closed://") || !strings.Contains(text, "open://secret") {
		t.Errorf("the list_resources tool lists: %s", text)
	}
}

// TestUnsolicitedRequestsAreRefused: a server that asks on its own, with
// no request of a client in flight, gets no sampling and no elicitation
// from any client, and no client's roots while two clients are connected;
// asked during a call, the same requests reach the caller.
func TestUnsolicitedRequestsAreRefused(t *testing.T) {
	t.Parallel()
	phisher := attackServer(t, "phisher", "ph")
	reportFile := filepath.Join(t.TempDir(), "report.json")
	phisher["env"].(map[string]string)[attackReportEnv] = reportFile
	// Both ask with requests of their own, as servers of 2025-11-25 do (on
	// 2026-07-28 their own SDK refuses to send them).
	phisher["protocolVersion"] = upstream.LegacyProtocol
	fw := roleServer(t, "forwarder")
	fw["protocolVersion"] = upstream.LegacyProtocol // it asks as a 2025-11-25 server does
	g := startGateway(t, writeConfig(t, map[string]any{"ph": phisher, "fw": fw}, nil))
	waitState(t, g, "ph", 20*time.Second, StateReady)
	waitState(t, g, "fw", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("full"))
	victim := connectFwdClient(t, srv.URL+"/mcp", true)
	other := connectFwdClient(t, srv.URL+"/mcp", true) // the newest session

	if text, isErr := victim.call(t, "ph__ask_later"); isErr || text != "scheduled" {
		t.Fatalf("ask_later = %q", text)
	}
	var report map[string]string
	waitFor(t, "the phisher's requests to be answered", 15*time.Second, func() bool {
		b, _ := os.ReadFile(reportFile)
		return json.Unmarshal(b, &report) == nil && len(report) == 3
	})
	for _, k := range []string{"elicit", "sample"} {
		if !strings.HasPrefix(report[k], "refused:") || !strings.Contains(report[k], "came on its own") {
			t.Errorf("an unsolicited %s request = %q, want it refused", k, report[k])
		}
	}
	if report["roots"] != "roots: " {
		t.Errorf("an unsolicited roots/list with two clients connected = %q, want no roots", report["roots"])
	}
	// Asked within a call, each reaches the client making it.
	for tool, want := range map[string]string{"fw__ask_elicit": "accept Ada", "fw__ask_sample": "sampled banana", "fw__ask_roots": "roots: file:///work/a"} {
		if text, isErr := other.call(t, tool); isErr || !strings.HasPrefix(text, want) {
			t.Errorf("%s within a call = %q (error %v), want %q", tool, text, isErr, want)
		}
	}
}

func TestAliasName(t *testing.T) {
	t.Parallel()
	taken := map[string]*catalog.Tool{}
	cases := []struct{ server, name, prefix string }{
		{"evil", "bad name\nwith a newline", "evil__bad_name_with_a_newline_"},
		{"evil", strings.Repeat("x", 5000), "evil__xxxx"},
		{"evil", "\n\n", "evil__tool_"},
		{"café", "a b", "caf__a_b_"},
		{"a", "émoji🙂", "a__moji_"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		got := aliasName(&catalog.Tool{Server: c.server, Name: c.name}, taken)
		if !catalog.ValidName(got) || len(got) > aliasLength || !strings.HasPrefix(got, c.prefix) || seen[got] {
			t.Errorf("aliasName(%q, %.20q) = %q: want a valid, unique name of at most %d characters starting %q", c.server, c.name, got, aliasLength, c.prefix)
		}
		seen[got] = true
	}
	// A name already taken gets a longer hash.
	tool := &catalog.Tool{Server: "evil", Name: "a b"}
	first := aliasName(tool, taken)
	taken[first] = &catalog.Tool{Server: "evil", Name: "a_b_squatter"}
	if second := aliasName(tool, taken); second == first || !catalog.ValidName(second) {
		t.Errorf("with %q taken, the alias is %q", first, second)
	}
}

// TestAliasOnlyWhatClientsRefuse: only a name clients would refuse gets an
// alias: a bare name that is valid stays, even under a server key with
// characters a tool name may not have; a valid tool name whose
// server__tool form is too long is aliased.
func TestAliasOnlyWhatClientsRefuse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 125)
	g, _ := newGatewayLogged(t, map[string]any{"café": map[string]any{"command": "unused", "naming": "bare"},
		"db": map[string]any{"command": "unused", "naming": "prefixed"}}, nil)
	v := viewOf(t, map[string][]string{"café": {"menu"}, "db": {long, "query"}}, nil)
	g.nameView(v)
	for id, want := range map[string]string{"café/menu": "menu", "db/query": "db__query"} {
		if tool, _ := v.snap.Tool(id); v.names.toolName(tool) != want {
			t.Errorf("%s is exposed as %q, want %q", id, v.names.toolName(tool), want)
		}
	}
	if tool, _ := v.snap.Tool("db/" + long); !strings.HasPrefix(v.names.toolName(tool), "db__yyy") || !catalog.ValidName(v.names.toolName(tool)) {
		t.Errorf("db's 125-character tool is exposed as %q", v.names.toolName(tool))
	}
}

// screened passes every server of v through withoutImpostors, as the
// gateway does before a server joins its catalog.
func screened(t *testing.T, g *Gateway, v *view) *view {
	t.Helper()
	var servers []*catalog.Server
	for _, s := range v.snap.Servers() {
		srv, err := g.withoutImpostors(s)
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, srv)
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	v.snap = snap
	return v
}

// TestCachedImpostorsRefused: a cached list saved before server memory was
// configured holds evil's memory__echo; once memory is configured, the
// cached tool is refused as the live one would be, before any server
// starts.
func TestCachedImpostorsRefused(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	evil := attackServer(t, "impostor", "evil")
	first, _ := newGatewayLogged(t, map[string]any{"evil": evil}, map[string]any{"stateDir": state})
	ctx, cancel := context.WithCancel(context.Background())
	first.Start(ctx)
	waitState(t, first, "evil", 30*time.Second, StateReady)
	if _, ok := first.Snapshot().Tool("evil/memory__echo"); !ok {
		t.Fatal("without a server memory, evil's memory__echo is an ordinary tool and should be listed")
	}
	stopGateway(t, first, cancel)

	memory, _ := gatedServer(t, "slow-start") // configured, never started here
	second, logs := newGatewayLogged(t, map[string]any{"evil": evil, "memory": memory}, map[string]any{"stateDir": state})
	snap := second.Snapshot()
	if _, ok := snap.Tool("evil/evil_ok"); !ok {
		t.Fatal("evil's cached tools were not loaded")
	}
	if _, ok := snap.Tool("evil/memory__echo"); ok {
		t.Error("a cached tool impersonating server memory is in the catalog")
	}
	if !strings.Contains(logs.String(), "names_server=memory") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
}
