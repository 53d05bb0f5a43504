package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tailscale/hujson"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// starterConfig is what toolsearch init writes: JSON with comments, which
// config.Parse reads.
const starterConfig = `// toolsearch gateway configuration.
//
// "mcpServers" is the same block your MCP client's config has: copy yours
// here (or run: toolsearch import --from claude-code), or add servers with
//
//   toolsearch add memory -- npx -y @modelcontextprotocol/server-memory
//   toolsearch add docs --url https://example.com/mcp --header "Authorization=Bearer ${DOCS_TOKEN}"
//
// then point your client at the gateway alone: toolsearch serve.
// ${VAR} takes a value from the environment, so no secret need be written here.
{
  "mcpServers": {
  },
  "toolsearch": {
    // What clients see: "full" (every tool), "search" (a search tool
    // and a call tool), "dynamic" (search, and the tools found join the
    // list), or "auto", decided for each client as it connects: full
    // for one that defers MCP tools behind its own search (Claude Code);
    // for any other, full while every tool definition fits under the
    // threshold, dynamic past it (search for MCP 2026-07-28 clients;
    // a session given full moves to dynamic if the tools outgrow it).
    // "clients": {"my-agent": "search"} under toolsearch overrides it
    // by client name; toolsearch status says what auto picks and why.
    "exposure": "auto",
    // auto's switch point, in percent of the model's context window.
    "threshold": 10,
    "contextWindow": 200000
    // Built-in tools: glob, grep and lsp work in the client's MCP roots,
    // or in these; web_fetch and web_search are off until set here.
    // Claude Code, Codex and VS Code get only those set here (they have
    // their own). toolsearch status says which are on and why.
    // , "builtins": {"roots": ["~/src/project"], "web_fetch": {"allow": ["go.dev"]}}
  }
}
`

// configFlag adds -c and --config to fs: the config file to use.
func configFlag(fs *flag.FlagSet) *string {
	p := fs.String("c", "", "config `file` (mcpServers JSON with an optional toolsearch key); default: the first of "+strings.Join(config.DefaultPaths(), ", ")+" that exists")
	fs.StringVar(p, "config", "", "the long form of -c")
	return p
}

// configPath is the file a command reads and edits: the one named, else
// the first default that exists, else (when create) the last default.
func configPath(named string, create bool) (string, bool) {
	if named != "" {
		_, err := os.Stat(named)
		return named, err == nil
	}
	for _, p := range config.DefaultPaths() {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	paths := config.DefaultPaths()
	if create {
		return paths[len(paths)-1], false
	}
	return "", false
}

// writeConfigFile writes data to path through a temporary file in the same
// folder, so that a crash leaves the old file or the new one, never half.
func writeConfigFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".toolsearch-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func runInit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("init", "[-c FILE] [--force]", stderr)
	path := configFlag(fs)
	force := fs.Bool("force", false, "overwrite an existing file")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch init: takes no arguments, got %q\n", pos[0])
		return exitUsage
	}
	dest := *path
	if dest == "" {
		paths := config.DefaultPaths()
		dest = paths[len(paths)-1]
	}
	if _, err := os.Stat(dest); err == nil && !*force {
		fmt.Fprintf(stderr, "toolsearch init: %s exists; pass --force to overwrite it\n", dest)
		return exitUsage
	}
	if err := writeConfigFile(dest, []byte(starterConfig)); err != nil {
		fmt.Fprintf(stderr, "toolsearch init: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %s\nadd a server: toolsearch add NAME -- COMMAND ARGS...\n", dest)
	return exitOK
}

// kvFlag is a repeatable KEY=VALUE flag.
type kvFlag struct {
	name string
	m    map[string]string
}

func (f *kvFlag) String() string { return "" }

func (f *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	if f.m == nil {
		f.m = map[string]string{}
	}
	f.m[k] = v
	return nil
}

func runAdd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("add", "[-c FILE] NAME [--env K=V]... -- COMMAND [ARGS...]   or   NAME --url URL [--transport http|sse] [--header K=V]...", stderr)
	path := configFlag(fs)
	env := &kvFlag{name: "env"}
	headers := &kvFlag{name: "header"}
	fs.Var(env, "env", "an environment variable of a stdio server, `KEY=VALUE` (repeatable; ${VAR} reads yours)")
	fs.Var(headers, "header", "an HTTP header of a remote server, `KEY=VALUE` (repeatable; ${VAR} reads yours)")
	url := fs.String("url", "", "the `url` of a remote server (streamable HTTP unless --transport sse)")
	transport := fs.String("transport", "", "http or sse, for --url (default http)")
	disabled := fs.Bool("disabled", false, "add it disabled")
	force := fs.Bool("force", false, "replace a server of the same name")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolsearch add: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) == 0 {
		return fail("name the server: toolsearch add NAME -- COMMAND ARGS...")
	}
	name, command := pos[0], pos[1:]
	if err := catalog.ValidKey(name); err != nil {
		return fail("%v", err)
	}
	// The fields in the order people write them.
	var entry struct {
		Type     string            `json:"type,omitempty"`
		Command  string            `json:"command,omitempty"`
		Args     []string          `json:"args,omitempty"`
		Env      map[string]string `json:"env,omitempty"`
		URL      string            `json:"url,omitempty"`
		Headers  map[string]string `json:"headers,omitempty"`
		Disabled bool              `json:"disabled,omitempty"`
	}
	switch {
	case *url != "" && len(command) > 0:
		return fail("give either --url or a command after --, not both")
	case *url != "":
		t := *transport
		if t == "" {
			t = "http"
		}
		if t != "http" && t != "sse" {
			return fail("--transport %q: want http or sse", t)
		}
		entry.Type, entry.URL, entry.Headers = t, *url, headers.m
		if len(env.m) > 0 {
			return fail("--env is for stdio servers; a remote server takes --header")
		}
	case len(command) > 0:
		entry.Command, entry.Args, entry.Env = command[0], command[1:], env.m
		if len(headers.m) > 0 || *transport != "" {
			return fail("--header and --transport are for remote servers (--url)")
		}
	default:
		return fail("give the command after --, e.g. toolsearch add %s -- npx -y PACKAGE, or --url URL", name)
	}
	entry.Disabled = *disabled
	dest, exists := configPath(*path, true)
	data := []byte(starterConfig)
	if exists {
		var err error
		if data, err = safefile.ReadFile(dest, maxClientConfigBytes); err != nil {
			return fail("%v", err)
		}
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return fail("%s: %v", dest, err)
	}
	if v.Find("/mcpServers") == nil {
		if err := v.Patch([]byte(`[{"op":"add","path":"/mcpServers","value":{}}]`)); err != nil {
			return fail("%s: %v", dest, err)
		}
	}
	ptr := "/mcpServers/" + jsonPointerEscape(name)
	op := "add"
	if v.Find(ptr) != nil {
		if !*force {
			return fail("%s already has a server named %q; pass --force to replace it", dest, name)
		}
		op = "replace"
	}
	patch, _ := json.Marshal([]map[string]any{{"op": op, "path": ptr, "value": entry}})
	if err := v.Patch(patch); err != nil {
		return fail("%s: %v", dest, err)
	}
	v.Format()
	out := v.Pack()
	if _, err := config.Parse(dest, out, os.LookupEnv); err != nil {
		return fail("the server would make the config invalid, so nothing was written: %v", err)
	}
	if err := writeConfigFile(dest, out); err != nil {
		return fail("%v", err)
	}
	verb := "added"
	if op == "replace" {
		verb = "replaced"
	}
	if !exists {
		verb += " to a new config"
	}
	fmt.Fprintf(stdout, "%s %s in %s\n", verb, name, dest)
	return exitOK
}

// jsonPointerEscape escapes a key for a JSON Pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func runRemove(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("remove", "[-c FILE] NAME...", stderr)
	path := configFlag(fs)
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolsearch remove: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) == 0 {
		return fail("name the server to remove")
	}
	dest, exists := configPath(*path, false)
	if !exists {
		return fail("no config file (looked in %s)", strings.Join(config.DefaultPaths(), ", "))
	}
	data, err := safefile.ReadFile(dest, maxClientConfigBytes)
	if err != nil {
		return fail("%v", err)
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return fail("%s: %v", dest, err)
	}
	var ops []map[string]any
	for _, name := range pos {
		ptr := "/mcpServers/" + jsonPointerEscape(name)
		if v.Find(ptr) == nil {
			return fail("%s has no server named %q (it has: %s); nothing was removed", dest, name, strings.Join(serverNames(v), ", "))
		}
		ops = append(ops, map[string]any{"op": "remove", "path": ptr})
	}
	patch, _ := json.Marshal(ops)
	if err := v.Patch(patch); err != nil {
		return fail("%s: %v", dest, err)
	}
	v.Format()
	if err := writeConfigFile(dest, v.Pack()); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "removed %s from %s\n", strings.Join(pos, ", "), dest)
	return exitOK
}

// serverNames lists the keys of mcpServers in a parsed file, sorted.
func serverNames(v hujson.Value) []string {
	std := v.Clone()
	std.Standardize()
	var doc struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	_ = json.Unmarshal(std.Pack(), &doc)
	names := make([]string, 0, len(doc.Servers))
	for k := range doc.Servers {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

func runList(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list", "[-c FILE] [--json]", stderr)
	path := configFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch list: takes no arguments, got %q\n", pos[0])
		return exitUsage
	}
	dest, exists := configPath(*path, false)
	if !exists {
		fmt.Fprintf(stderr, "toolsearch list: no config file (looked in %s); write one with toolsearch init or toolsearch import\n", strings.Join(config.DefaultPaths(), ", "))
		return exitUsage
	}
	cfg, err := config.Load(dest)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch list: %v\n", err)
		return exitUsage
	}
	red := redact.New(cfg.Secrets()...)
	type row struct {
		Name      string `json:"name"`
		Transport string `json:"transport"`
		Target    string `json:"target"`
		Disabled  bool   `json:"disabled,omitempty"`
	}
	var rows []row
	for _, s := range cfg.Servers {
		target := s.URL
		if s.Transport == config.TransportStdio {
			target = strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		rows = append(rows, row{s.Key, s.Transport, red.String(target), s.Disabled})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"config": dest, "servers": rows})
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: %d servers\n", dest, len(rows))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tCOMMAND OR URL\tSTATE")
	for _, r := range rows {
		state := "enabled"
		if r.Disabled {
			state = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Transport, r.Target, state)
	}
	tw.Flush()
	return exitOK
}

// callTimeout bounds a call from the shell, start of the server included,
// unless --timeout says otherwise.
const callTimeout = 2 * time.Minute

func runCall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newConfigFlags("call", "[-c FILE] [--timeout D] SERVER/TOOL ['{\"arg\": \"value\"}']", stderr)
	timeout := f.fs.Duration("timeout", callTimeout, "how long the server's start and the call may take together")
	pos, code, ok := parseFlags(f.fs, args, stdout)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolsearch call: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fail("want SERVER/TOOL and at most one JSON object of arguments")
	}
	server, tool, ok := strings.Cut(pos[0], "/")
	if !ok || server == "" || tool == "" {
		return fail("%q: want SERVER/TOOL, e.g. memory/read_graph", pos[0])
	}
	arguments := map[string]any{}
	if len(pos) == 2 {
		dec := json.NewDecoder(strings.NewReader(pos[1]))
		dec.UseNumber()
		if err := dec.Decode(&arguments); err != nil || arguments == nil {
			return fail("the arguments must be one JSON object, e.g. '{\"query\": \"x\"}': %v", errOr(err, "got null"))
		}
		if dec.More() {
			return fail("the arguments must be one JSON object; more follows it")
		}
	}
	cfg, found, err := f.load(stderr)
	if err != nil {
		return fail("%v", err)
	}
	if !found {
		return fail("no config file (looked in %s); write one with toolsearch init, then toolsearch add", strings.Join(config.DefaultPaths(), ", "))
	}
	var names []string
	var target *config.Server
	for _, s := range cfg.Servers {
		names = append(names, s.Key)
		if s.Key == server {
			target = s
		}
	}
	if target == nil {
		if near, _, ok := policy.Nearest(server, names); ok {
			return fail("no server named %q in %s; did you mean %q? (it has: %s)", server, cfg.Path, near+"/"+tool, strings.Join(names, ", "))
		}
		return fail("no server named %q in %s (it has: %s)", server, cfg.Path, strings.Join(names, ", "))
	}
	if target.Disabled {
		return fail("%s is disabled in %s", server, cfg.Path)
	}
	// Only that server starts, in full exposure, so that the tool has the
	// name the server gives it.
	cfg.Servers = []*config.Server{target}
	target.Lazy = false
	cfg.Gateway.Lazy = false
	cfg.Gateway.Exposure = config.ExposureFull
	cfg.Gateway.Enrich.Enabled = false
	red := redact.New(cfg.Secrets()...)
	stderr = red.Writer(stderr)
	log, err := f.logger(stderr)
	if err != nil {
		return fail("%v", err)
	}
	levelSet := false
	f.fs.Visit(func(fl *flag.Flag) { levelSet = levelSet || fl.Name == "log-level" })
	if !levelSet { // only errors, unless asked: the output is the result
		log, _ = newLogger(stderr, "error", *f.logFormat)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: log, Version: buildVersion()})
	if err != nil {
		return fail("%v", err)
	}
	defer g.Close()
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	g.Start(cctx)
	if err := g.WaitSettled(cctx); err != nil {
		fmt.Fprintf(stderr, "toolsearch call: %s did not start within %v\n", server, *timeout)
		return exitNoResult
	}
	for _, st := range g.Statuses() {
		if st.Key == server && st.State != gateway.StateReady {
			fmt.Fprintf(stderr, "toolsearch call: %s is %s: %s\n", server, st.State, red.String(st.Error))
			return exitNoResult
		}
	}
	if msg := unknownTool(g, server, tool); msg != "" {
		return fail("%s", msg)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := g.Connect(cctx, config.ExposureFull, st); err != nil {
		return fail("%v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsearch-call", Version: buildVersion()}, nil)
	cs, err := client.Connect(cctx, ct, nil)
	if err != nil {
		return fail("%v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch call: %s/%s: %v\n", server, tool, red.Error(err))
		if errors.Is(err, context.DeadlineExceeded) {
			return exitNoResult
		}
		return exitUsage
	}
	printToolResult(stdout, res)
	if res.IsError {
		return exitNoResult
	}
	return exitOK
}

// unknownTool says that the server lists no tool of that name, with the
// nearest name it lists, or "" when it lists the tool.
func unknownTool(g *gateway.Gateway, server, tool string) string {
	srv, ok := g.Snapshot().Server(server)
	if !ok {
		return "" // nothing listed to compare with: the call says what is wrong
	}
	names := make([]string, 0, len(srv.Tools))
	for _, t := range srv.Tools {
		if t.Name == tool {
			return "" // the call goes through, or policy refuses it
		}
		if g.Visible(t) { // a denied tool is never suggested nor listed
			names = append(names, t.Name)
		}
	}
	if near, _, ok := policy.Nearest(tool, names); ok {
		return fmt.Sprintf("server %s has no tool %q; did you mean %q?", server, tool, server+"/"+near)
	}
	more := ""
	if len(names) > 20 {
		more = fmt.Sprintf(", … (%d more)", len(names)-20)
		names = names[:20]
	}
	return fmt.Sprintf("server %s has no tool %q; it has: %s%s", server, tool, strings.Join(names, ", "), more)
}

// printToolResult prints a tool's result for a person: text as it is, any
// other content and the structured result as indented JSON.
func printToolResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			fmt.Fprintln(w, t.Text)
			continue
		}
		b, _ := json.MarshalIndent(c, "", "  ")
		fmt.Fprintln(w, string(b))
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(b))
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}
