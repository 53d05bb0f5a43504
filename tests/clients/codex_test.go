package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexVersion is the version package.json pins.
const codexVersion = "0.171.0"

var (
	codexOnce sync.Once
	codexPath string
	codexWhy  string
)

// codexBin returns Codex's native binary, from the platform package npm
// installs beside @openai/codex, or skips the test.
func codexBin(t testing.TB) string {
	t.Helper()
	codexOnce.Do(func() {
		triple := map[string]string{"linux/amd64": "x86_64-unknown-linux-musl", "linux/arm64": "aarch64-unknown-linux-musl",
			"darwin/amd64": "x86_64-apple-darwin", "darwin/arm64": "aarch64-apple-darwin"}[runtime.GOOS+"/"+runtime.GOARCH]
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
		p := filepath.Join(repoRoot(t), "node_modules", "@openai", "codex-"+runtime.GOOS+"-"+arch, "vendor", triple, "bin", "codex")
		if _, err := os.Stat(p); err != nil {
			codexWhy = "Codex CLI is not installed (" + p + " is absent): run `npm ci` at the repository root"
			return
		}
		codexPath = p
	})
	if codexPath == "" {
		t.Skip(codexWhy)
	}
	return codexPath
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // JSON string escapes are valid TOML ones
	return string(b)
}

// codexConfig writes CODEX_HOME/config.toml: the stand-in as the model
// provider, the gateway as the only MCP server, its tools approved, and
// Codex's other traffic off (the test's egress proxy checks that none is
// left).
func codexConfig(t testing.TB, home, baseURL, cmd string, args []string, env map[string]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "model = %s\nmodel_provider = \"standin\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n", tomlString("gpt-standin"))
	// Codex's other traffic: update checks, the curated plugin sync
	// (GitHub) and the apps and plugin services (ChatGPT).
	b.WriteString("check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n")
	b.WriteString("[features]\nplugins = false\nremote_plugin = false\napps = false\nin_app_updates = false\n\n")
	fmt.Fprintf(&b, "[model_providers.standin]\nname = \"Stand-in\"\nbase_url = %s\nwire_api = \"responses\"\nenv_key = \"STANDIN_API_KEY\"\n\n", tomlString(baseURL+"/v1"))
	fmt.Fprintf(&b, "[mcp_servers.gw]\ncommand = %s\nargs = [", tomlString(cmd))
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(a))
	}
	b.WriteString("]\nstartup_timeout_sec = 30\ntool_timeout_sec = 60\ndefault_tools_approval_mode = \"approve\"\n\n[mcp_servers.gw.env]\n")
	for k, v := range env {
		fmt.Fprintf(&b, "%s = %s\n", k, tomlString(v))
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// codexNamespace is the namespace Codex puts the gateway's tools in (its
// MCP server is called gw); codexTools are what the gateway lists in
// search exposure, whatever the servers behind: no built-in tools, since
// Codex has its own (gateway/builtinclient.go).
const codexNamespace = "mcp__gw"

var codexTools = []string{"call_tool", "search_tools"}

// codexModel is the scripted model behind the Responses stand-in: it
// searches with the gateway's search_tools, calls what it found through
// call_tool, and ends the turn with the call's result.
func codexModel(req *respRequest) []any {
	calls := map[string]string{} // call_id → function name
	items := req.items()
	for _, it := range items {
		if it.Type == "function_call" {
			calls[it.CallID] = it.Name
		}
	}
	if last := items[len(items)-1]; last.Type == "function_call_output" {
		out := outputText(last.Output)
		switch calls[last.CallID] {
		case "call_tool":
			return []any{respText("Done: " + out)}
		case "search_tools":
			if !strings.Contains(out, "memory__create_entities") {
				return []any{respText("the search did not find create_entities: " + out)}
			}
			args, _ := json.Marshal(map[string]any{"name": "memory__create_entities", "arguments": ccEntities})
			return []any{respCall{Namespace: codexNamespace, Name: "call_tool", Arguments: string(args)}}
		}
		return []any{respText("unexpected output: " + out)}
	}
	return []any{respText("I will look for a tool."),
		respCall{Namespace: codexNamespace, Name: "search_tools", Arguments: `{"query":"select:memory__create_entities"}`}}
}

// outputText returns a function_call_output's output as text: a string,
// or the text of its content items.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// namespaceTools returns the names of the functions in a request's
// namespace.
func namespaceTools(req respRequest, ns string) []string {
	var out []string
	for _, tl := range req.Tools {
		if tl.Type == "namespace" && tl.Name == ns {
			for _, m := range tl.Tools {
				out = append(out, m.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestCodexThroughGateway runs `codex exec` with the gateway in search
// exposure as its only MCP server, on a first launch, against the
// Responses stand-in, and checks what Codex was shown (the gateway's
// constant list in an mcp__gw namespace), the search and the call it
// relayed, and what the memory server did.
func TestCodexThroughGateway(t *testing.T) {
	t.Parallel()
	codex := codexBin(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	st := newResponsesStandin(t, codexModel)
	memFile := filepath.Join(dir, "memory.jsonl")
	writeJSON(t, filepath.Join(dir, "gateway.json"), map[string]any{"mcpServers": map[string]any{"memory": memoryServer(t, memFile)},
		"toolsearch": map[string]any{"exposure": "search", "stateDir": filepath.Join(dir, "state")}})
	cmd, args, env := gatewayCommand(t, filepath.Join(dir, "gateway.json"), filepath.Join(dir, "sent.jsonl"), filepath.Join(dir, "gateway.log"))
	codexConfig(t, home, st.URL, cmd, args, env)
	out := newEgress(t)
	stdout, stderr, err := run(t, 90*time.Second, dir,
		append([]string{"HOME=" + dir, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "STANDIN_API_KEY=sk-standin", "RUST_LOG=warn"}, out.env()...),
		codex, "exec", "--skip-git-repo-check", "--json", "--ephemeral", "--color", "never", ccTask)
	logb, _ := os.ReadFile(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatalf("codex exec: %v\nstdout: %s\nstderr: %s\ngateway log: %s", err, tail(stdout, 3000), tail(stderr, 3000), tail(logb, 3000))
	}

	if hosts := out.attempts(); len(hosts) > 0 {
		t.Errorf("Codex tried to reach other hosts: %q", hosts)
	}
	for _, r := range st.all() {
		if !strings.HasSuffix(r.Path, "/v1/responses") {
			t.Errorf("Codex sent the stand-in a request for %s", r.Path)
		}
	}

	// What Codex sent to the model API.
	var reqs []respRequest
	for _, r := range st.requests() {
		var req respRequest
		if err := json.Unmarshal(r.Body, &req); err != nil {
			t.Fatalf("a request Codex sent is not JSON: %v", err)
		}
		var top struct {
			Input  []json.RawMessage `json:"input"`
			Stream bool              `json:"stream"`
		}
		_ = json.Unmarshal(r.Body, &top)
		req.Input = top.Input
		if !top.Stream || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Codex did not ask for a stream: stream %v, Accept %q", top.Stream, r.Header.Get("Accept"))
		}
		reqs = append(reqs, req)
	}
	if len(reqs) != 3 {
		t.Fatalf("Codex sent %d model requests, want 3 (search, call, answer)\nstdout: %s", len(reqs), tail(stdout, 3000))
	}
	for i, r := range reqs {
		if got := namespaceTools(r, codexNamespace); !slices.Equal(got, codexTools) {
			t.Errorf("request %d shows the gateway's tools %v, want the constant %v", i, got, codexTools)
		}
	}
	var outputs []string
	for _, it := range reqs[2].items() {
		if it.Type == "function_call_output" {
			outputs = append(outputs, outputText(it.Output))
		}
	}
	if len(outputs) != 2 || !strings.Contains(outputs[0], `"name": "memory__create_entities"`) || !strings.Contains(outputs[1], "Ada Lovelace") {
		t.Errorf("the tool outputs Codex relayed: %q", outputs)
	}

	// What Codex sent to the gateway, and what the upstream did.
	var calls []string
	for _, c := range toolCalls(recorded(t, filepath.Join(dir, "sent.jsonl"))) {
		calls = append(calls, c.Name)
		if c.Name == "call_tool" && !strings.Contains(string(c.Arguments), `"name":"memory__create_entities"`) {
			t.Errorf("call_tool's arguments: %s", c.Arguments)
		}
	}
	if !slices.Equal(calls, []string{"search_tools", "call_tool"}) {
		t.Errorf("Codex called the gateway's %v, want [search_tools call_tool]", calls)
	}
	if mem, _ := os.ReadFile(memFile); !strings.Contains(string(mem), `"name":"Ada Lovelace"`) {
		t.Errorf("the memory server did not record the entity: %q", mem)
	}
	if !strings.Contains(string(logb), `client=codex-mcp-client client_version=`+codexVersion) {
		t.Errorf("the gateway's log does not name the client:\n%s", tail(logb, 2000))
	}
	// Codex's own account of the turn: the final message holds the result.
	var final string
	for _, line := range strings.Split(string(stdout), "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			final = ev.Item.Text
		}
	}
	if !strings.HasPrefix(final, "Done: ") || !strings.Contains(final, "Ada Lovelace") {
		t.Errorf("Codex's last message %q does not hold the memory server's answer\nstdout: %s", final, tail(stdout, 3000))
	}
}
