package clients

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// claudeCodeVersion is the version package.json pins as
// @anthropic-ai/claude-code; claudeCodePrevious the one it pins beside it
// as claude-code-previous.
const (
	claudeCodeVersion  = "2.1.332"
	claudeCodePrevious = "2.1.328"
)

var (
	claudeMu    sync.Mutex
	claudePaths = map[string]string{} // version → binary, or "" with the reason in claudeWhys
	claudeWhys  = map[string]string{}
)

// claudeBin returns the native binary of Claude Code of the given version
// (claudeCodeVersion when none is given), or skips the test. The newest
// is the top-level @anthropic-ai/claude-code with its platform package
// beside it; the previous one is claude-code-previous, with its platform
// package nested under it.
func claudeBin(t testing.TB, version ...string) string {
	t.Helper()
	want := claudeCodeVersion
	if len(version) > 0 && version[0] != "" {
		want = version[0]
	}
	claudeMu.Lock()
	defer claudeMu.Unlock()
	if p, ok := claudePaths[want]; ok {
		if p == "" {
			t.Skip(claudeWhys[want])
		}
		return p
	}
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	nm := filepath.Join(repoRoot(t), "node_modules")
	pkg := filepath.Join(nm, "@anthropic-ai", "claude-code")
	platforms := filepath.Join(nm, "@anthropic-ai")
	if want != claudeCodeVersion {
		pkg = filepath.Join(nm, "claude-code-previous")
		platforms = filepath.Join(pkg, "node_modules", "@anthropic-ai")
	}
	candidates := []string{
		filepath.Join(platforms, "claude-code-"+runtime.GOOS+"-"+arch, "claude"),
		filepath.Join(platforms, "claude-code-"+runtime.GOOS+"-"+arch+"-musl", "claude"),
		filepath.Join(pkg, "bin", "claude.exe"),
	}
	why := "Claude Code " + want + " is not installed (looked for " + strings.Join(candidates, ", ") + "): run `npm ci` at the repository root"
	for _, c := range candidates {
		if _, err := os.Stat(c); err != nil {
			continue
		}
		out, err := exec.Command(c, "--version").Output()
		if err != nil || !strings.Contains(string(out), want) {
			why = c + " is not Claude Code " + want + ": " + strings.TrimSpace(string(out))
			continue
		}
		claudePaths[want] = c
		return c
	}
	claudePaths[want], claudeWhys[want] = "", why
	t.Skip(why)
	return ""
}

// claudeEnv is Claude Code's environment: offline, against the stand-in at
// baseURL, in a throwaway home, with tool search on (Claude Code turns it
// off by default for a base URL that is not Anthropic's).
func claudeEnv(home, baseURL string) []string {
	return []string{
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=sk-ant-standin-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
		"ENABLE_TOOL_SEARCH=true", "MCP_TIMEOUT=30000",
	}
}

// The names Claude Code gives the gateway's tools (its MCP server is
// called gw).
const (
	ccCreate     = "mcp__gw__memory__create_entities"
	ccSearch     = "mcp__gw__search_tools"
	ccCall       = "mcp__gw__call_tool"
	ccToolSearch = "ToolSearch"
	ccTask       = "Remember that Ada Lovelace wrote the first program."
)

// ccEntities are create_entities' arguments.
var ccEntities = map[string]any{"entities": []any{map[string]any{
	"name": "Ada Lovelace", "entityType": "person", "observations": []any{"wrote the first program"}}}}

// ccModel is the scripted model behind the stand-in: it searches for the
// memory server's create_entities with whichever search it has (Claude
// Code's ToolSearch when the gateway lists every tool, the gateway's
// search_tools otherwise), calls it natively when it is loaded or through
// call_tool when it is not, and ends the turn with the call's result.
// Requests that carry none of these tools (Claude Code's own side
// requests) get a short text answer.
//
// added holds the tools the request's mid-conversation system messages
// added (tool_addition blocks, which the validating stand-in does not
// read): they are loaded as much as a tool without defer_loading.
func ccModel(req *anthropictest.Request, added map[string]bool) anthropictest.Reply {
	visible := func(name string) bool { return req.Visible[name] || added[name] }
	text := func(s string) anthropictest.Reply {
		return anthropictest.Reply{Content: []any{map[string]any{"type": "text", "text": s}}, StopReason: "end_turn"}
	}
	use := func(id, name string, input any) anthropictest.Reply {
		return anthropictest.Reply{Content: []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}, StopReason: "tool_use"}
	}
	names := map[string]bool{}
	for _, tl := range req.Tools {
		names[tl.Name] = true
	}
	if !names[ccToolSearch] && !names[ccSearch] {
		return text("ok")
	}
	used := map[string]string{} // tool_use id → tool name
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			if b.Type == "tool_use" {
				used[b.ID] = b.Name
			}
		}
	}
	last := req.Messages[len(req.Messages)-1]
	for _, b := range last.Blocks {
		if b.Type != "tool_result" {
			continue
		}
		switch used[b.ToolUseID] {
		case ccCreate, ccCall:
			return text("Done: " + resultText(b))
		case ccSearch:
			if !visible(ccCreate) {
				var out struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				}
				_ = json.Unmarshal([]byte(resultText(b)), &out)
				for _, tl := range out.Tools {
					if strings.HasSuffix(tl.Name, "create_entities") {
						return use("toolu_call_1", ccCall, map[string]any{"name": tl.Name, "arguments": ccEntities})
					}
				}
				return text("the search did not find create_entities: " + resultText(b))
			}
		}
	}
	switch {
	case visible(ccCreate):
		return use("toolu_create_1", ccCreate, ccEntities)
	case visible(ccSearch) && !slices.Contains(mapValues(used), ccSearch):
		// Free words, as a model's first search usually is: on a first
		// launch they match the starting memory server's declared tools,
		// so the search waits for it.
		return use("toolu_search_1", ccSearch, map[string]any{"query": codexQuery})
	case names[ccToolSearch] && !visible(ccSearch) && !slices.Contains(mapValues(used), ccToolSearch):
		return use("toolu_toolsearch_1", ccToolSearch, map[string]any{"query": "select:" + ccCreate, "max_results": 5})
	}
	return text("I could not find the tool.")
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// resultText joins the text of a tool_result.
func resultText(b anthropictest.Block) string {
	var parts []string
	for _, c := range b.Inner {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s
		}
	}
	return strings.Join(parts, "\n")
}

// apiRequest is the part of a Messages API request the tests read.
type apiRequest struct {
	Tools []struct {
		Name         string `json:"name"`
		DeferLoading bool   `json:"defer_loading"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// tool returns whether the request's tools hold name, and with which
// defer_loading.
func (r apiRequest) tool(name string) (present, deferred bool) {
	for _, tl := range r.Tools {
		if tl.Name == name {
			return true, tl.DeferLoading
		}
	}
	return false, false
}

// blocks returns the content blocks of every message, in order, as
// generic objects.
func (r apiRequest) blocks() []map[string]any {
	var out []map[string]any
	for _, m := range r.Messages {
		var bs []map[string]any
		if json.Unmarshal(m.Content, &bs) == nil {
			for _, b := range bs {
				b["role"] = m.Role
				out = append(out, b)
			}
		}
	}
	return out
}

// added returns the tools that the tool_addition blocks of the request's
// system messages added, less those a later tool_removal removed.
func (r apiRequest) added() map[string]bool {
	out := map[string]bool{}
	for _, m := range r.Messages {
		if m.Role != "system" {
			continue
		}
		var bs []struct {
			Type string `json:"type"`
			Tool struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tool"`
		}
		_ = json.Unmarshal(m.Content, &bs)
		for _, b := range bs {
			if b.Tool.Type != "tool_reference" {
				continue
			}
			switch b.Type {
			case "tool_addition":
				out[b.Tool.Name] = true
			case "tool_removal":
				delete(out, b.Tool.Name)
			}
		}
	}
	return out
}

// systemText returns the text of the messages with role system (Claude
// Code announces its deferred tools there).
func (r apiRequest) systemText() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role != "system" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s)
			continue
		}
		var bs []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &bs)
		for _, x := range bs {
			b.WriteString(x.Text + "\n")
		}
	}
	return b.String()
}

// claudeSession is one scripted `claude -p` through the gateway.
type claudeSession struct {
	// requests are the Messages API requests Claude Code sent that carry
	// the gateway's tools (its side requests left out).
	requests []apiRequest
	// sent is what Claude Code sent to the gateway.
	sent []rpcMessage
	// log is the gateway's log; memory the upstream's knowledge graph.
	log, memory string
	// result is claude's final answer.
	result string
}

// runClaude runs one `claude -p` of ccTask with the gateway (config gw
// under toolsearch) as its only MCP server, in front of a memory server
// started afresh, with an empty state directory.
func runClaude(t *testing.T, gw map[string]any, era string) claudeSession {
	t.Helper()
	return runClaudeWith(t, claudeRun{gw: gw, era: era, transport: transportStdio})
}

// claudeRun is how one `claude -p` runs: which Claude Code, the gateway's
// settings, the protocol era (stdio only, as for gatewayCommand), the
// transport, and whether the state directory was warmed first.
type claudeRun struct {
	version   string
	gw        map[string]any
	era       string
	transport string
	warm      bool
}

// runClaudeWith runs one `claude -p` of ccTask as o says.
func runClaudeWith(t *testing.T, o claudeRun) claudeSession {
	t.Helper()
	claude := claudeBin(t, o.version)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// The stand-in records a request before its model answers it, and
	// Claude Code sends its conversation's requests one at a time, so the
	// last recorded request with the gateway's tools is the one being
	// answered: its system messages say what tool_addition added.
	var up *proxytest.Upstream
	model := func(req *anthropictest.Request) anthropictest.Reply {
		var added map[string]bool
		bodies := up.Messages()
		for i := len(bodies) - 1; i >= 0; i-- {
			var r apiRequest
			if json.Unmarshal(bodies[i], &r) != nil {
				continue
			}
			if p, _ := r.tool(ccToolSearch); p {
				added = r.added()
				break
			}
			if p, _ := r.tool(ccSearch); p {
				added = r.added()
				break
			}
		}
		return ccModel(req, added)
	}
	up = proxytest.New(t, proxytest.Options{SystemMessages: true, Options: anthropictest.Options{SearchToolName: ccToolSearch, Model: model}})
	gwr := startGateway(t, dir, o.gw, o.transport, o.warm, o.era)
	entry := map[string]any{"type": "stdio", "command": gwr.cmd, "args": append([]string{}, gwr.args...), "env": gwr.env}
	if o.transport == transportHTTP {
		entry = map[string]any{"type": "http", "url": gwr.url}
	}
	writeJSON(t, filepath.Join(dir, "mcp.json"), map[string]any{"mcpServers": map[string]any{"gw": entry}})
	out := newEgress(t)
	stdout, stderr, err := run(t, 90*time.Second, dir, append(claudeEnv(home, up.URL), out.env()...), claude,
		"-p", ccTask, "--mcp-config", filepath.Join(dir, "mcp.json"), "--strict-mcp-config",
		"--allowedTools", "mcp__gw", "--output-format", "json", "--max-turns", "8")
	logb, _ := os.ReadFile(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s\ngateway log: %s", err, tail(stdout, 3000), tail(stderr, 3000), tail(logb, 3000))
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil || res.IsError {
		t.Fatalf("claude -p answered %v: %s", err, tail(stdout, 3000))
	}
	if hosts := out.attempts(); len(hosts) > 0 {
		t.Errorf("Claude Code tried to reach other hosts: %q", hosts)
	}
	for _, r := range up.Requests() {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URI, "/v1/messages") {
			t.Errorf("Claude Code sent the stand-in %s %s", r.Method, r.URI)
		}
	}
	if rej := up.Inner.Rejections(); len(rej) > 0 {
		t.Errorf("the stand-in refused requests Claude Code sent: %q", rej)
	}
	s := claudeSession{sent: recorded(t, filepath.Join(dir, "sent.jsonl")), log: string(logb), result: res.Result}
	for _, body := range up.Messages() {
		var r apiRequest
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("a request Claude Code sent is not JSON: %v", err)
		}
		if p, _ := r.tool(ccToolSearch); p {
			s.requests = append(s.requests, r)
		} else if p, _ := r.tool(ccSearch); p {
			s.requests = append(s.requests, r)
		}
	}
	s.memory = gwr.memory()
	if len(s.requests) == 0 {
		t.Fatalf("Claude Code sent no request with the gateway's tools; its answer: %s", res.Result)
	}
	if os.Getenv("TOOLSEARCH_CLIENTS_DUMP") != "" {
		for i, body := range up.Messages() {
			t.Logf("request %d: %s", i, body)
		}
		t.Logf("sent: %s", must(os.ReadFile(filepath.Join(dir, "sent.jsonl"))))
		t.Logf("log: %s", logb)
	}
	return s
}

// toolUses returns the names of the tool_use blocks of the last request
// (the whole conversation), in order.
func (s claudeSession) toolUses() []string {
	var out []string
	for _, b := range s.requests[len(s.requests)-1].blocks() {
		if b["type"] == "tool_use" {
			out = append(out, b["name"].(string))
		}
	}
	return out
}

// firstWith returns the index of the first request for which ok holds, or
// -1.
func (s claudeSession) firstWith(ok func(apiRequest) bool) int {
	for i, r := range s.requests {
		if ok(r) {
			return i
		}
	}
	return -1
}

// TestClaudeCodeThroughGateway runs `claude -p` with the gateway as its
// only MCP server in every exposure, on a first launch (empty state
// directory), and checks the whole path: what Claude Code was shown, the
// search, the load, the call it relayed, and what the memory server did.
func TestClaudeCodeThroughGateway(t *testing.T) {
	t.Parallel()
	claudeBin(t)
	cases := []struct {
		name string
		// era is the protocol Claude Code speaks with the gateway: ""
		// for what it negotiates (2026-07-28), or 2025-11-25, a session
		// with initialize, where auto sees the client and dynamic
		// exposure changes the session's list.
		era string
		gw  map[string]any
		// calls are the tools/call names Claude Code sends the gateway.
		calls []string
		// uses are the tool_use names in the conversation.
		uses  []string
		check func(t *testing.T, s claudeSession)
	}{
		{"full", "", map[string]any{"exposure": "full"},
			[]string{"memory__create_entities"}, []string{ccToolSearch, ccCreate}, checkDeferredByClaudeCode},
		// auto with a threshold every tool exceeds: Claude Code still
		// gets full, since it defers MCP tools itself.
		{"auto", "2025-11-25", map[string]any{"exposure": "auto", "threshold": 1, "contextWindow": 1000},
			[]string{"memory__create_entities"}, []string{ccToolSearch, ccCreate}, func(t *testing.T, s claudeSession) {
				checkDeferredByClaudeCode(t, s)
				if !strings.Contains(s.log, `client=claude-code client_version=`+claudeCodeVersion+` exposure=full`) ||
					!strings.Contains(s.log, "defers MCP tools behind its own tool search") {
					t.Errorf("the gateway's log does not say why auto gave Claude Code full:\n%s", tail([]byte(s.log), 3000))
				}
			}},
		// The same over 2026-07-28, as Claude Code negotiates: no
		// initialize, so auto goes by the clientInfo of the requests'
		// _meta.
		{"auto 2026", "", map[string]any{"exposure": "auto", "threshold": 1, "contextWindow": 1000},
			[]string{"memory__create_entities"}, []string{ccToolSearch, ccCreate}, func(t *testing.T, s claudeSession) {
				checkDeferredByClaudeCode(t, s)
				if !strings.Contains(s.log, `client=claude-code client_version=`+claudeCodeVersion+` exposure=full`) ||
					!strings.Contains(s.log, `a client speaks MCP 2026-07-28`) {
					t.Errorf("the gateway's log does not say auto gave Claude Code full over 2026-07-28:\n%s", tail([]byte(s.log), 3000))
				}
			}},
		{"search", "", map[string]any{"exposure": "search"},
			[]string{"search_tools", "call_tool"}, []string{ccSearch, ccCall}, func(t *testing.T, s claudeSession) {
				first := s.requests[0]
				for _, name := range []string{ccSearch, ccCall} {
					if p, d := first.tool(name); !p || d {
						t.Errorf("%s in the first request: present %v, deferred %v; want loaded (it carries anthropic/alwaysLoad)", name, p, d)
					}
				}
				for i, r := range s.requests {
					if p, _ := r.tool(ccCreate); p {
						t.Errorf("request %d shows %s: search exposure keeps the list constant", i, ccCreate)
					}
				}
			}},
		{"dynamic", "2025-11-25", map[string]any{"exposure": "dynamic"},
			[]string{"search_tools", "memory__create_entities"}, []string{ccSearch, ccCreate}, func(t *testing.T, s claudeSession) {
				if p, _ := s.requests[0].tool(ccCreate); p {
					t.Errorf("the first request already shows %s", ccCreate)
				}
				// The request after the search shows the found tool
				// loaded, not deferred: it joined the list with
				// anthropic/alwaysLoad, so Claude Code did not put it
				// behind its ToolSearch again.
				i := s.firstWith(func(r apiRequest) bool { p, _ := r.tool(ccCreate); return p })
				if i < 0 {
					t.Fatalf("no request shows %s after the search", ccCreate)
				}
				if i != 1 {
					t.Errorf("request %d is the first to show %s; want the one right after the search (1)", i, ccCreate)
				}
				checkLoadedWithoutSearch(t, s.requests[i])
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := runClaude(t, c.gw, c.era)
			if got := s.toolUses(); !slices.Equal(got, c.uses) {
				t.Errorf("tool_use in the conversation: %v, want %v", got, c.uses)
			}
			var calls []string
			for _, tc := range toolCalls(s.sent) {
				calls = append(calls, tc.Name)
			}
			if !slices.Equal(calls, c.calls) {
				t.Errorf("Claude Code called the gateway's %v, want %v", calls, c.calls)
			}
			// The upstream did it, and its answer came back to the model.
			if !strings.Contains(s.memory, `"name":"Ada Lovelace"`) || !strings.Contains(s.memory, "wrote the first program") {
				t.Errorf("the memory server did not record the entity: %q", s.memory)
			}
			if !strings.Contains(s.result, "Done: ") || !strings.Contains(s.result, "Ada Lovelace") {
				t.Errorf("the model did not get the memory server's answer: %q", s.result)
			}
			c.check(t, s)
		})
	}
}

// checkDeferredByClaudeCode checks a session in full exposure: Claude Code
// deferred the memory server's tools behind its ToolSearch (first launch:
// the first tools/list waited for the server, so the tool is announced
// in the first request), loaded the one it searched for with a
// tool_reference, and called it natively.
func checkDeferredByClaudeCode(t *testing.T, s claudeSession) {
	t.Helper()
	first := s.requests[0]
	if p, _ := first.tool(ccCreate); p {
		t.Errorf("the first request shows %s: Claude Code should defer it until it is searched for", ccCreate)
	}
	if !strings.Contains(first.systemText(), ccCreate) {
		t.Errorf("the first request does not announce %s among the deferred tools: the first tools/list lacked the memory server's tools\n%s",
			ccCreate, first.systemText())
	}
	i := s.firstWith(func(r apiRequest) bool { p, _ := r.tool(ccCreate); return p })
	if i < 0 {
		t.Fatalf("no request loads %s", ccCreate)
	}
	if _, d := s.requests[i].tool(ccCreate); !d {
		t.Errorf("request %d sends %s without defer_loading", i, ccCreate)
	}
	ref := false
	for _, b := range s.requests[i].blocks() {
		if b["type"] != "tool_result" {
			continue
		}
		content, _ := json.Marshal(b["content"])
		if strings.Contains(string(content), `"tool_reference"`) && strings.Contains(string(content), ccCreate) {
			ref = true
		}
	}
	if !ref {
		t.Errorf("request %d carries no tool_reference to %s", i, ccCreate)
	}
}

func must(b []byte, _ error) []byte { return b }

// checkLoadedWithoutSearch checks that a request shows ccCreate as a
// loaded tool: either in tools without defer_loading, or deferred and
// added in the same request by a tool_addition (the mid-conversation tool
// changes Claude Code announces as "ready to use"), and never among the
// tools Claude Code says must be loaded with ToolSearch first.
func checkLoadedWithoutSearch(t *testing.T, r apiRequest) {
	t.Helper()
	_, deferred := r.tool(ccCreate)
	added := false
	for _, b := range r.blocks() {
		if b["type"] != "tool_addition" {
			continue
		}
		if tl, _ := b["tool"].(map[string]any); tl["name"] == ccCreate {
			added = true
		}
	}
	if deferred && !added {
		t.Errorf("%s is deferred and no tool_addition loads it: Claude Code would have to search for it again", ccCreate)
	}
	sys := r.systemText()
	if i := strings.Index(sys, "available via ToolSearch"); i >= 0 {
		end := strings.Index(sys[i:], "\n\n")
		if end < 0 {
			end = len(sys) - i
		}
		if strings.Contains(sys[i:i+end], ccCreate) {
			t.Errorf("Claude Code lists %s among the deferred tools to load with ToolSearch", ccCreate)
		}
	}
}
