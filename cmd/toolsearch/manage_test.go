package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// runIn runs a command and returns its exit code, stdout and stderr.
func runIn(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestInitAddRemoveList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "ts.json")
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	steps := []struct {
		name string
		args []string
		code int
		out  []string
		err  []string
	}{
		{"init", []string{"init", "-c", path}, exitOK, []string{"wrote " + path}, nil},
		{"init again", []string{"init", "-c", path}, exitUsage, nil, []string{"exists; pass --force"}},
		{"init forced", []string{"init", "--config", path, "--force"}, exitOK, nil, nil},
		{"add stdio", []string{"add", "-c", path, "memory", "--env", "MEMORY_FILE_PATH=/tmp/m.json", "--", "npx", "-y", "server-memory", "--flag"}, exitOK, []string{"added memory in " + path}, nil},
		{"add remote", []string{"add", "-c", path, "docs", "--url", "https://example.com/mcp", "--header", "Authorization=Bearer ${DOCS_TOKEN}"}, exitOK, []string{"added docs"}, nil},
		{"add sse", []string{"add", "-c", path, "old", "--url", "https://example.com/sse", "--transport", "sse", "--disabled"}, exitOK, nil, nil},
		{"add a duplicate", []string{"add", "-c", path, "memory", "--", "node", "x.js"}, exitUsage, nil, []string{`already has a server named "memory"; pass --force`}},
		{"replace", []string{"add", "-c", path, "memory", "--force", "--", "node", "mem.js"}, exitOK, []string{"replaced memory"}, nil},
		{"no name", []string{"add", "-c", path}, exitUsage, nil, []string{"name the server"}},
		{"no command", []string{"add", "-c", path, "x"}, exitUsage, nil, []string{"give the command after --"}},
		{"both url and command", []string{"add", "-c", path, "x", "--url", "http://h/mcp", "--", "node"}, exitUsage, nil, []string{"either --url or a command"}},
		{"env on a remote", []string{"add", "-c", path, "x", "--url", "http://h/mcp", "--env", "A=1"}, exitUsage, nil, []string{"--env is for stdio servers"}},
		{"header on stdio", []string{"add", "-c", path, "x", "--header", "A=1", "--", "node"}, exitUsage, nil, []string{"--header and --transport are for remote servers"}},
		{"bad transport", []string{"add", "-c", path, "x", "--url", "http://h/mcp", "--transport", "ws"}, exitUsage, nil, []string{`--transport "ws"`}},
		{"bad env", []string{"add", "-c", path, "x", "--env", "novalue", "--", "node"}, exitUsage, nil, []string{"want KEY=VALUE"}},
		{"a url that is not http", []string{"add", "-c", path, "x", "--url", "ftp://h/mcp"}, exitUsage, nil, []string{"would make the config invalid, so nothing was written"}},
		{"list", []string{"list", "-c", path}, exitOK, []string{"3 servers", "memory", "stdio", "node mem.js", "docs", "https://example.com/mcp", "old", "disabled"}, nil},
		{"remove a missing one", []string{"remove", "-c", path, "memory", "nope"}, exitUsage, nil, []string{`no server named "nope" (it has: docs, memory, old); nothing was removed`}},
		{"remove", []string{"remove", "-c", path, "old"}, exitOK, []string{"removed old"}, nil},
		{"remove nothing", []string{"remove", "-c", path}, exitUsage, nil, []string{"name the server"}},
	}
	for _, st := range steps {
		before := ""
		if _, err := os.Stat(path); err == nil {
			before = read()
		}
		code, out, errs := runIn(t, st.args...)
		checkCLI(t, code, st.code, out, errs, st.out, st.err)
		if st.code != exitOK && before != "" && read() != before {
			t.Errorf("%s: a refused command changed the file", st.name)
		}
	}
	text := read()
	if !strings.Contains(text, "// toolsearch gateway configuration.") || !strings.Contains(text, `"exposure": "auto"`) {
		t.Errorf("the comments or the settings of the starter config were lost:\n%s", text)
	}
	cfg, err := config.Parse(path, []byte(text), func(string) (string, bool) { return "tok", true })
	if err != nil {
		t.Fatalf("the edited config does not parse: %v\n%s", err, text)
	}
	got := map[string]*config.Server{}
	for _, s := range cfg.Servers {
		got[s.Key] = s
	}
	if m := got["memory"]; m == nil || m.Command != "node" || strings.Join(m.Args, " ") != "mem.js" {
		t.Errorf("memory = %+v, want node mem.js", m)
	}
	if d := got["docs"]; d == nil || d.Transport != config.TransportHTTP || d.Headers["Authorization"] != "Bearer tok" {
		t.Errorf("docs = %+v", d)
	}
	if _, ok := got["old"]; ok || len(got) != 2 {
		t.Errorf("servers after remove: %v", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the config's mode is %v, want 0600 (it may hold secrets)", st.Mode().Perm())
	}

	// list --json, with a secret in an argument.
	if code, _, errs := runIn(t, "add", "-c", path, "keyed", "--", "server", "--api-key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"); code != exitOK {
		t.Fatal(errs)
	}
	code, out, errs := runIn(t, "list", "-c", path, "--json")
	checkCLI(t, code, exitOK, out, errs, []string{`"name": "keyed"`, "[REDACTED]"}, nil)
	if strings.Contains(out, "sk-ant-api03") {
		t.Errorf("list shows a key passed as an argument:\n%s", out)
	}
	var doc struct {
		Servers []map[string]any `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Servers) != 3 {
		t.Errorf("list --json: %v\n%s", err, out)
	}
}

// TestAddToBrokenOrMissingConfig: add creates a config that is missing,
// and refuses, naming the line, one it cannot read, changing nothing.
func TestAddToBrokenOrMissingConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.json")
	code, out, errs := runIn(t, "add", "-c", fresh, "memory", "--", "npx", "-y", "server-memory")
	checkCLI(t, code, exitOK, out, errs, []string{"added to a new config memory", fresh}, nil)
	if cfg, err := config.Load(fresh); err != nil || len(cfg.Servers) != 1 {
		t.Fatalf("the new config: %v", err)
	}

	broken := filepath.Join(dir, "broken.json")
	text := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n"
	if err := os.WriteFile(broken, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"add", "-c", broken, "b", "--", "node"},
		{"remove", "-c", broken, "a"},
		{"list", "-c", broken},
	} {
		code, out, errs := runIn(t, args...)
		checkCLI(t, code, exitUsage, out, errs, nil, []string{"line 3, column 26"})
		if b, _ := os.ReadFile(broken); string(b) != text {
			t.Errorf("%v changed a file it could not read", args)
		}
	}

	// A name that is not a valid server key (a path, an empty name) is
	// refused before anything is read or written.
	for _, name := range []string{"../escape", "a/b", ""} {
		code, out, errs := runIn(t, "add", "-c", fresh, name, "--", "node")
		if code != exitUsage {
			t.Errorf("add %q: exit %d, want %d\n%s%s", name, code, exitUsage, out, errs)
		}
	}
	if code, _, errs := runIn(t, "list", "-c", filepath.Join(dir, "none.json")); code != exitUsage || !strings.Contains(errs, "no config file") {
		t.Errorf("list of a missing file: exit %d: %s", code, errs)
	}
}

// TestCallThroughGateway calls a real server's tools from the shell: the
// call goes through the gateway (policy included) and starts only the
// server it names.
func TestCallThroughGateway(t *testing.T) {
	t.Parallel()
	memory := npmBin(t, "mcp-server-memory")
	dir := t.TempDir()
	marker := filepath.Join(dir, "other-started")
	cfgPath := filepath.Join(dir, "ts.json")
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"memory": map[string]any{"command": memory, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "mem.jsonl")}},
			// A server that would leave a mark if it were started.
			"other": map[string]any{"command": "sh", "args": []string{"-c", "touch " + marker + "; sleep 5"}},
		},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state"),
			"policy": map[string]any{"deny": []string{"memory/delete_entities"}}},
	}
	writeConfigJSON(t, cfgPath, cfg)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string
		err  []string
	}{
		{"create", []string{"call", "-c", cfgPath, "memory/create_entities", `{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]}]}`}, exitOK, []string{`"name": "Ada"`}, nil},
		{"read back", []string{"call", "--config", cfgPath, "memory/read_graph"}, exitOK, []string{"wrote the first program"}, nil},
		{"a tool error", []string{"call", "-c", cfgPath, "memory/create_entities", `{"entities": 5}`}, exitNoResult, nil, nil},
		{"denied by policy", []string{"call", "-c", cfgPath, "memory/delete_entities", `{"entityNames":["Ada"]}`}, exitUsage, nil, []string{`unknown tool "delete_entities"`}},
		{"unknown server", []string{"call", "-c", cfgPath, "nope/x"}, exitUsage, nil, []string{`no server named "nope"`, "memory, other"}},
		{"misspelt server", []string{"call", "-c", cfgPath, "memroy/read_graph"}, exitUsage, nil, []string{`no server named "memroy"`, `did you mean "memory/read_graph"?`}},
		{"misspelt tool", []string{"call", "-c", cfgPath, "memory/read_grahp"}, exitUsage, nil, []string{`server memory has no tool "read_grahp"; did you mean "memory/read_graph"?`}},
		{"unknown tool lists the tools", []string{"call", "-c", cfgPath, "memory/frobnicate"}, exitUsage, nil, []string{`server memory has no tool "frobnicate"; it has: create_entities,`}},
		// A near miss of a denied tool suggests nothing that reveals it.
		{"near a denied tool", []string{"call", "-c", cfgPath, "memory/delete_entitie"}, exitUsage, nil, []string{`no tool "delete_entitie"`}},
		{"no slash", []string{"call", "-c", cfgPath, "read_graph"}, exitUsage, nil, []string{"want SERVER/TOOL"}},
		{"arguments not JSON", []string{"call", "-c", cfgPath, "memory/read_graph", "{x"}, exitUsage, nil, []string{"must be one JSON object"}},
		{"arguments an array", []string{"call", "-c", cfgPath, "memory/read_graph", "[1]"}, exitUsage, nil, []string{"must be one JSON object"}},
		{"two objects", []string{"call", "-c", cfgPath, "memory/read_graph", "{} {}"}, exitUsage, nil, []string{"more follows it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runIn(t, tc.args...)
			checkCLI(t, code, tc.code, out, errs, tc.out, tc.err)
		})
	}
	if code, out, errs := runIn(t, "call", "-c", cfgPath, "memory/read_graph"); code != exitOK || !strings.Contains(out, `"Ada"`) {
		t.Errorf("the denied delete went through (exit %d): %s%s", code, out, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("call started a server it did not name")
	}
	if _, _, errs := runIn(t, "call", "-c", cfgPath, "memory/delete_entitie"); strings.Contains(errs, "delete_entities") {
		t.Errorf("a denied tool was named to the caller: %s", errs)
	}
}

// TestCallHelpListsItsOwnFlags: call's help shows the flags call reads,
// not serve's.
func TestCallHelpListsItsOwnFlags(t *testing.T) {
	t.Parallel()
	code, out, errs := runCLI(t, "call", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		flag string
		want bool
	}{{"-c file", true}, {"-timeout", true}, {"-state-dir", true}, {"-log-level", true},
		{"-http", false}, {"-exposure", false}, {"-threshold", false}, {"-lazy", false}, {"-hints", false}, {"-context-window", false}} {
		if strings.Contains(out, "  "+c.flag) != c.want {
			t.Errorf("call --help lists %s: %v, want %v\n%s", c.flag, !c.want, c.want, out)
		}
	}
}

// TestStarterConfigSaysWhatAutoDoes: the config init writes reads back,
// and what its comment says auto does is what the gateway does with it:
// full for a client that defers tools itself (Claude Code), full under
// the threshold for any other.
func TestStarterConfigSaysWhatAutoDoes(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("starter.json", []byte(starterConfig), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the starter config does not read back: %v", err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mode, reason := g.Exposure()
	for _, c := range []struct{ comment, behaviour string }{
		{`"auto", decided for each client as it connects`, ""},
		{"full\n    // for one that defers MCP tools behind its own search (Claude Code)", "claude-code gets full"},
		{"full while every tool definition fits under the\n    // threshold", "fit under the threshold"},
		{"dynamic past it", ""},
	} {
		if !strings.Contains(starterConfig, c.comment) {
			t.Errorf("the starter config no longer says %q", c.comment)
		}
		if c.behaviour != "" && !strings.Contains(reason, c.behaviour) {
			t.Errorf("auto's reason %q does not say %q", reason, c.behaviour)
		}
	}
	if mode != config.ExposureFull {
		t.Errorf("auto picks %s for an empty catalog, want full", mode)
	}
}
