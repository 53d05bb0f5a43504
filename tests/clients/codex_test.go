package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexVersion is the version package.json pins as @openai/codex;
// codexPrevious the one it pins beside it as codex-previous.
const (
	codexVersion  = "0.171.0"
	codexPrevious = "0.169.0"
)

var (
	codexMu    sync.Mutex
	codexPaths = map[string]string{} // version → binary, or "" with the reason in codexWhys
	codexWhys  = map[string]string{}
)

// codexBin returns Codex's native binary of the given version
// (codexVersion when none is given), from the platform package npm
// installs beside @openai/codex (or, for the previous version, nested
// under codex-previous), or skips the test.
func codexBin(t testing.TB, version ...string) string {
	t.Helper()
	want := codexVersion
	if len(version) > 0 && version[0] != "" {
		want = version[0]
	}
	codexMu.Lock()
	defer codexMu.Unlock()
	if p, ok := codexPaths[want]; ok {
		if p == "" {
			t.Skip(codexWhys[want])
		}
		return p
	}
	triple := map[string]string{"linux/amd64": "x86_64-unknown-linux-musl", "linux/arm64": "aarch64-unknown-linux-musl",
		"darwin/amd64": "x86_64-apple-darwin", "darwin/arm64": "aarch64-apple-darwin"}[runtime.GOOS+"/"+runtime.GOARCH]
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	root := filepath.Join(repoRoot(t), "node_modules")
	if want != codexVersion {
		root = filepath.Join(root, "codex-previous", "node_modules")
	}
	p := filepath.Join(root, "@openai", "codex-"+runtime.GOOS+"-"+arch, "vendor", triple, "bin", "codex")
	why := ""
	if _, err := os.Stat(p); err != nil {
		why = "Codex CLI " + want + " is not installed (" + p + " is absent): run `npm ci` at the repository root"
	} else if out, err := exec.Command(p, "--version").Output(); err != nil || !strings.Contains(string(out), want) {
		why = p + " is not Codex CLI " + want + ": " + strings.TrimSpace(string(out))
	}
	if why != "" {
		codexPaths[want], codexWhys[want] = "", why
		t.Skip(why)
	}
	codexPaths[want] = p
	return p
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
func codexConfig(t testing.TB, home, baseURL string, gw *gatewayRun) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "model = %s\nmodel_provider = \"standin\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n", tomlString("gpt-standin"))
	// Codex's other traffic: update checks, the curated plugin sync
	// (GitHub) and the apps and plugin services (ChatGPT).
	// Codex starts its first turn with the MCP servers that are up by
	// then, after a short grace: on a loaded machine the gateway's own
	// start (a process, its config) can take longer than that, so the
	// grace is widened (the gateway answers Codex's first list at once
	// either way, gateway/clientmode.go).
	b.WriteString("mcp_optional_startup_grace_ms = 5000\n")
	b.WriteString("check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n")
	b.WriteString("[features]\nplugins = false\nremote_plugin = false\napps = false\nin_app_updates = false\n\n")
	fmt.Fprintf(&b, "[model_providers.standin]\nname = \"Stand-in\"\nbase_url = %s\nwire_api = \"responses\"\nenv_key = \"STANDIN_API_KEY\"\n\n", tomlString(baseURL+"/v1"))
	b.WriteString("[mcp_servers.gw]\n")
	if gw.url != "" {
		fmt.Fprintf(&b, "url = %s\n", tomlString(gw.url))
	} else {
		fmt.Fprintf(&b, "command = %s\nargs = [", tomlString(gw.cmd))
		for i, a := range gw.args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(a))
		}
		b.WriteString("]\n")
	}
	b.WriteString("startup_timeout_sec = 30\ntool_timeout_sec = 60\ndefault_tools_approval_mode = \"approve\"\n")
	if len(gw.env) > 0 {
		b.WriteString("\n[mcp_servers.gw.env]\n")
		for k, v := range gw.env {
			fmt.Fprintf(&b, "%s = %s\n", k, tomlString(v))
		}
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

// codexCreate is the memory server's create_entities as the gateway
// names it, and as Codex shows it in the gateway's namespace.
const codexCreate = "memory__create_entities"

// codexQuery is the words the scripted model searches with: it names no
// tool exactly, as a model's first search usually does not.
const codexQuery = "memory create entities"

// codexModel is the scripted model behind the Responses stand-in: it
// calls the memory server's create_entities natively when Codex shows it
// (full exposure, or dynamic once a search loaded it), and otherwise
// searches with the gateway's search_tools and calls what it found
// through call_tool; it ends the turn with the call's result.
func codexModel(req *respRequest) []any {
	calls := map[string]string{} // call_id → function name
	items := req.items()
	for _, it := range items {
		if it.Type == "function_call" {
			calls[it.CallID] = it.Name
		}
	}
	shown := namespaceTools(*req, codexNamespace)
	native := respCall{Namespace: codexNamespace, Name: codexCreate, Arguments: string(must(json.Marshal(ccEntities)))}
	if last := items[len(items)-1]; last.Type == "function_call_output" {
		out := outputText(last.Output)
		switch calls[last.CallID] {
		case "call_tool", codexCreate:
			return []any{respText("Done: " + out)}
		case "search_tools":
			if slices.Contains(shown, codexCreate) {
				return []any{native}
			}
			if !strings.Contains(out, `"name": "`+codexCreate+`"`) {
				return []any{respText("the search did not find create_entities: " + out)}
			}
			args, _ := json.Marshal(map[string]any{"name": codexCreate, "arguments": ccEntities})
			return []any{respCall{Namespace: codexNamespace, Name: "call_tool", Arguments: string(args)}}
		}
		return []any{respText("unexpected output: " + out)}
	}
	switch {
	case slices.Contains(shown, codexCreate):
		return []any{native}
	case slices.Contains(shown, "search_tools"):
		args, _ := json.Marshal(map[string]any{"query": codexQuery})
		return []any{respText("I will look for a tool."), respCall{Namespace: codexNamespace, Name: "search_tools", Arguments: string(args)}}
	}
	return []any{respText("I was shown none of the gateway's tools: " + strings.Join(shown, ", "))}
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

// codexRun is how one `codex exec` runs: which Codex, the gateway's
// settings, the transport, and whether the state directory was warmed
// first.
type codexRun struct {
	version   string
	gw        map[string]any
	transport string
	warm      bool
}

// codexSession is what one `codex exec` did.
type codexSession struct {
	// requests are the Responses API requests Codex sent.
	requests []respRequest
	// sent is what Codex sent to the gateway.
	sent []rpcMessage
	// log is the gateway's log; memory the upstream's knowledge graph.
	log, memory string
	// final is Codex's last agent message.
	final  string
	stdout []byte
}

// calls returns the names of the tools/call requests Codex sent.
func (s codexSession) calls() []string {
	var out []string
	for _, c := range toolCalls(s.sent) {
		out = append(out, c.Name)
	}
	return out
}

// runCodex runs `codex exec` of ccTask with the gateway as its only MCP
// server, against the Responses stand-in driven by codexModel, and
// checks what holds whatever the exposure: no traffic left the machine,
// every model request was a streamed POST /v1/responses, and the gateway
// knew the client by name.
func runCodex(t *testing.T, o codexRun) codexSession {
	t.Helper()
	codex := codexBin(t, o.version)
	version := o.version
	if version == "" {
		version = codexVersion
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	st := newResponsesStandin(t, codexModel)
	gwr := startGateway(t, dir, o.gw, o.transport, o.warm, "")
	codexConfig(t, home, st.URL, gwr)
	out := newEgress(t)
	stdout, stderr, err := run(t, 90*time.Second, dir,
		append([]string{"HOME=" + dir, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "STANDIN_API_KEY=sk-standin", "RUST_LOG=warn"}, out.env()...),
		codex, "exec", "--skip-git-repo-check", "--json", "--ephemeral", "--color", "never", ccTask)
	if err != nil {
		t.Fatalf("codex exec: %v\nstdout: %s\nstderr: %s\ngateway log: %s", err, tail(stdout, 3000), tail(stderr, 3000), tail([]byte(gwr.log()), 3000))
	}
	s := codexSession{sent: gwr.sent(t), log: gwr.log(), memory: gwr.memory(), stdout: stdout}
	if hosts := out.attempts(); len(hosts) > 0 {
		t.Errorf("Codex tried to reach other hosts: %q", hosts)
	}
	for _, r := range st.all() {
		if !strings.HasSuffix(r.Path, "/v1/responses") {
			t.Errorf("Codex sent the stand-in a request for %s", r.Path)
		}
	}
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
		s.requests = append(s.requests, req)
	}
	if len(s.requests) == 0 {
		t.Fatalf("Codex sent no model request\nstdout: %s\nstderr: %s", tail(stdout, 3000), tail(stderr, 3000))
	}
	if !strings.Contains(s.log, `client=codex-mcp-client client_version=`+version) {
		t.Errorf("the gateway's log does not name the client:\n%s", tail([]byte(s.log), 2000))
	}
	// Codex's own account of the turn: its last agent message.
	for _, line := range strings.Split(string(stdout), "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			s.final = ev.Item.Text
		}
	}
	return s
}

// toolOutputs returns the outputs of the function calls the last model
// request relays, in order.
func (s codexSession) toolOutputs() []string {
	var out []string
	for _, it := range s.requests[len(s.requests)-1].items() {
		if it.Type == "function_call_output" {
			out = append(out, outputText(it.Output))
		}
	}
	return out
}
