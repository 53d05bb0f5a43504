package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// clientConfig is where one MCP client keeps its servers.
type clientConfig struct {
	name  string
	paths func(project string) []string
	// key is "mcpServers", or "servers" for VS Code.
	key string
}

func homePath(parts ...string) string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(append([]string{h}, parts...)...)
}

func userConfigPath(parts ...string) string {
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(append([]string{d}, parts...)...)
}

var clients = []clientConfig{
	{"claude-desktop", func(string) []string {
		return []string{userConfigPath("Claude", "claude_desktop_config.json")}
	}, "mcpServers"},
	{"claude-code", func(p string) []string {
		return []string{filepath.Join(p, ".mcp.json"), homePath(".claude.json")}
	}, "mcpServers"},
	{"cursor", func(p string) []string {
		return []string{filepath.Join(p, ".cursor", "mcp.json"), homePath(".cursor", "mcp.json")}
	}, "mcpServers"},
	{"vscode", func(p string) []string {
		return []string{filepath.Join(p, ".vscode", "mcp.json"), userConfigPath("Code", "User", "mcp.json")}
	}, "servers"},
	{"windsurf", func(string) []string {
		return []string{homePath(".codeium", "windsurf", "mcp_config.json")}
	}, "mcpServers"},
	{"codex", codexPaths, "mcp_servers"}, // TOML: importcodex.go
}

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	names := make([]string, len(clients))
	for i, c := range clients {
		names[i] = c.name
	}
	fs := newFlags("import", "--from CLIENT|FILE [-o|--out FILE] [--merge | --force]", stderr)
	from := fs.String("from", "", "the client to import from ("+strings.Join(names, ", ")+"), or a config `file`")
	out := outFlag(fs, "gateway config `file` to write (default: "+config.DefaultPaths()[len(config.DefaultPaths())-1]+")")
	project := fs.String("project", ".", "project `dir` for project-scoped configs (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, .codex/config.toml); "+
		"relative paths in a project's file are written absolute against its folder")
	force := fs.Bool("force", false, "replace an existing output file")
	merge := fs.Bool("merge", false, "add the servers to an existing output file, keeping everything in it (a server it already has stays as it is)")
	if _, code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if *force && *merge {
		fmt.Fprintln(stderr, "toolsearch import: --merge keeps the existing file and --force replaces it: give one of them")
		return exitUsage
	}
	if *from == "" {
		fmt.Fprintf(stderr, "toolsearch import: --from is required (%s, or a file)\n", strings.Join(names, ", "))
		return exitUsage
	}
	client, sources := resolveSources(*from, *project)
	self, _ := selfExecutable()
	servers := map[string]json.RawMessage{}
	var read, skipped []string
	for _, src := range sources {
		found, err := readServers(src, *project)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
			return exitUsage
		}
		read = append(read, src)
		for _, k := range sortedEntryKeys(found) {
			if _, dup := servers[k]; dup {
				continue
			}
			e := found[k]
			if k == "toolsearch" {
				fmt.Fprintf(stderr, "toolsearch import: leaving out server \"toolsearch\" of %s: by its name it is this gateway\n", src)
				skipped = append(skipped, k)
				continue
			}
			if e.err != nil {
				fmt.Fprintf(stderr, "toolsearch import: leaving out server %q of %s: %v\n", k, src, e.err)
				skipped = append(skipped, k)
				continue
			}
			for _, n := range e.notes {
				fmt.Fprintf(stderr, "toolsearch import: server %q of %s: %s\n", k, src, n)
			}
			entry, err := importEntry(k, e)
			var notes []string
			if err == nil {
				entry, notes, err = absolutePaths(entry, e.workspace) // importpaths.go
			}
			if err != nil {
				fmt.Fprintf(stderr, "toolsearch import: leaving out server %q of %s: %v\n", k, src, err)
				skipped = append(skipped, k)
				continue
			}
			for _, n := range notes {
				fmt.Fprintf(stderr, "toolsearch import: server %q: %s\n", k, n)
			}
			if p, ok := entryRunsSelf(self, entry); ok {
				fmt.Fprintf(stderr, "toolsearch import: leaving out server %q of %s: it runs toolsearch serve itself (%s), "+
					"and a gateway that lists itself would start itself without end\n", k, src, p)
				skipped = append(skipped, k)
				continue
			}
			servers[k] = entry
		}
	}
	if len(read) == 0 {
		fmt.Fprintf(stderr, "toolsearch import: no config found for %s (looked in %s)\n", *from, strings.Join(sources, ", "))
		return exitUsage
	}
	if len(servers) == 0 {
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "toolsearch import: every server of %s was left out (%s): nothing to write\n", strings.Join(read, ", "), strings.Join(skipped, ", "))
			return exitUsage
		}
		fmt.Fprintf(stderr, "toolsearch import: %s has no MCP servers\n", strings.Join(read, ", "))
		return exitNoResult
	}
	dest := *out
	if dest == "" {
		dest = config.DefaultPaths()[len(config.DefaultPaths())-1]
	}
	if abs, err := filepath.Abs(dest); err == nil {
		dest = abs
	}
	if real, err := filepath.EvalSymlinks(dest); err == nil {
		dest = real // a linked config (kept with dotfiles) is written where it lives, the link kept
	}
	_, statErr := os.Stat(dest)
	existing := statErr == nil
	if existing && !*force && !*merge {
		fmt.Fprintf(stderr, "toolsearch import: %s exists; use --merge to add the servers to it (keeping what it has), or --force to replace it\n", dest)
		return exitUsage
	}
	exposure, why := importExposure(client)
	var data []byte
	var err error
	var report mergeReport
	if existing && *merge {
		data, report, err = mergeServers(dest, servers) // below
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch import: %v; nothing was written\n", err)
			return exitUsage
		}
	} else if data, err = gatewayConfig(servers, exposure); err != nil {
		fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
		return 1
	}
	// Check that what we write reads back (unset variables are fine).
	if _, err := config.Parse(dest, data, os.LookupEnv); err != nil {
		fmt.Fprintf(stderr, "toolsearch import: the imported servers do not make a valid config: %v\n", err)
		return exitUsage
	}
	if err := writeConfigFile(dest, data); err != nil { // atomic: the old file or the new one
		fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
		return 1
	}
	if existing && *merge {
		report.print(stderr, strings.Join(read, ", "), dest)
	} else {
		keys := sortedRawKeys(servers)
		fmt.Fprintf(stderr, "Imported %d servers (%s) from %s into %s.\n", len(keys), strings.Join(keys, ", "), strings.Join(read, ", "), dest)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "Left out %d (%s): see above.\n", len(skipped), strings.Join(skipped, ", "))
	}
	if existing && *merge {
		fmt.Fprintf(stderr, "The toolsearch settings of %s are kept as they were.\n", dest)
	} else {
		fmt.Fprintf(stderr, "Exposure %s: %s\n", exposure, why)
	}
	fmt.Fprintf(stderr, "Replace the servers in your %s config with this one entry:\n\n", clientTitle(client))
	fmt.Fprintln(stdout, snippet(client, dest))
	switch client {
	case "claude-code":
		fmt.Fprintf(stderr, "\nor run: claude mcp add toolsearch -- %s serve -c %s\n", selfPath(), dest)
	case "codex":
		fmt.Fprintf(stderr, "\nor run: codex mcp add toolsearch -- %s serve -c %s\n", selfPath(), dest)
	}
	return exitOK
}

// resolveSources maps --from to a client name and the files to read.
func resolveSources(from, project string) (string, []string) {
	for _, c := range clients {
		if c.name == from {
			var paths []string
			for _, p := range c.paths(project) {
				if p != "" {
					paths = append(paths, p)
				}
			}
			return c.name, paths
		}
	}
	client := "mcpServers"
	if isCodexConfig(from) {
		return "codex", []string{from}
	}
	// VS Code's files: .vscode/mcp.json of a folder, and the user's
	// Code/User/mcp.json (Code - Insiders, VSCodium... alike).
	if dir := filepath.Dir(from); strings.Contains(from, ".vscode") || (filepath.Base(from) == "mcp.json" && filepath.Base(dir) == "User") {
		client = "vscode"
	}
	return client, []string{from}
}

// clientEntry is one server entry of a client config, unexpanded, with
// what its variables may refer to.
type clientEntry struct {
	raw json.RawMessage
	// workspace is the folder the entry belongs to (${workspaceFolder}):
	// the project of a project-scoped file, "" for a user-wide one.
	workspace string
	// inputs are the descriptions of the file's VS Code inputs, by id.
	inputs map[string]string
	// notes say what of a Codex entry was left out (importcodex.go); err,
	// when set, why the entry cannot be imported at all.
	notes []string
	err   error
}

// readServers reads the server entries of a client config, unexpanded:
// its "mcpServers" and VS Code's "servers", as JSON with comments and
// trailing commas (VS Code's files have them). In ~/.claude.json it also
// reads the project's entry.
func readServers(path, project string) (map[string]clientEntry, error) {
	if isCodexConfig(path) {
		return readCodexServers(path)
	}
	data, err := safefile.ReadFile(path, maxClientConfigBytes)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	std, err := hujson.Standardize(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(std, &top); err != nil || top == nil {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	inputs := map[string]string{}
	if raw, ok := top["inputs"]; ok {
		var list []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s: \"inputs\" is not a list of {\"id\", \"description\"}: %w", path, err)
		}
		for _, in := range list {
			inputs[in.ID] = in.Description
		}
	}
	ws := workspaceOf(path)
	out := map[string]clientEntry{}
	for _, key := range []string{"mcpServers", "servers"} {
		if raw, ok := top[key]; ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("%s: %q is not an object: %w", path, key, err)
			}
			for k, v := range m {
				out[k] = clientEntry{raw: v, workspace: ws, inputs: inputs}
			}
		}
	}
	if raw, ok := top["projects"]; ok {
		var projects map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if json.Unmarshal(raw, &projects) == nil {
			if abs, err := filepath.Abs(project); err == nil {
				for k, v := range projects[abs].MCPServers {
					if _, dup := out[k]; !dup {
						out[k] = clientEntry{raw: v, workspace: abs, inputs: inputs}
					}
				}
			}
		}
	}
	return out, nil
}

// workspaceOf is the folder a client config file belongs to: the project
// of .vscode/mcp.json, .cursor/mcp.json, .codex/config.toml or .mcp.json;
// "" for the others, which are the user's, in no workspace.
func workspaceOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	switch {
	case filepath.Base(abs) == ".mcp.json":
		return dir
	case filepath.Base(dir) == ".vscode" || filepath.Base(dir) == ".cursor":
		if home, err := os.UserHomeDir(); err == nil && filepath.Dir(dir) == home && filepath.Base(dir) == ".cursor" {
			return "" // ~/.cursor/mcp.json is Cursor's user-wide file
		}
		return filepath.Dir(dir)
	case filepath.Base(dir) == ".codex":
		for _, home := range []string{codexHome(), homePath(".codex")} {
			if home != "" && filepath.Clean(home) == dir {
				return "" // Codex's home holds the user-wide file
			}
		}
		return filepath.Dir(dir)
	}
	return ""
}

func sortedEntryKeys(m map[string]clientEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// importExposure is the exposure written for a client's config, and why.
// Claude Code defers MCP tools behind its own tool search, so the gateway
// must not put a second search in front of it: it gets every tool, with
// the _meta hints that keep the gateway's always-loaded tools loaded.
func importExposure(client string) (exposure, why string) {
	if client == "claude-code" {
		return config.ExposureFull, "Claude Code defers MCP tools behind its own tool search, so the gateway lists every tool " +
			"(with their _meta hints) rather than stacking its search on Claude Code's. " +
			"If tool search is off in your Claude Code (ENABLE_TOOL_SEARCH=false), set \"exposure\": \"search\" instead."
	}
	return config.ExposureAuto, "every tool while their definitions fit in 10% of the context window, the gateway's search past it " +
		"(clients known to defer MCP tools themselves get every tool)."
}

// gatewayConfig writes the servers, unchanged, with the gateway's defaults
// and the given exposure.
func gatewayConfig(servers map[string]json.RawMessage, exposure string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n  \"mcpServers\": {\n")
	for i, k := range sortedRawKeys(servers) {
		key, _ := json.Marshal(k)
		var v bytes.Buffer
		if err := json.Indent(&v, servers[k], "    ", "  "); err != nil {
			return nil, fmt.Errorf("server %q: %w", k, err)
		}
		fmt.Fprintf(&b, "    %s: %s", key, v.Bytes())
		if i < len(servers)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "  },\n  \"toolsearch\": {\n    \"exposure\": %q,\n    \"threshold\": 10,\n    \"contextWindow\": 200000\n  }\n}\n", exposure)
	return b.Bytes(), nil
}

// mergeReport is what a merge did with each imported server.
type mergeReport struct {
	// Added were new to the file; Same were in it already, unchanged;
	// Conflicting are in it with another entry, which is kept.
	Added, Same, Conflicting []string
}

func (r mergeReport) print(w io.Writer, from, dest string) {
	fmt.Fprintf(w, "Merged %s into %s: added %d (%s), already there unchanged %d (%s), conflicting %d (%s).\n", from, dest,
		len(r.Added), listOrNone(r.Added), len(r.Same), listOrNone(r.Same), len(r.Conflicting), listOrNone(r.Conflicting))
	if len(r.Conflicting) > 0 {
		fmt.Fprintf(w, "Conflicting, kept as %s had them (the imported entries differ): %s. To take an imported entry, "+
			"run toolsearch remove -c %s NAME, then import again.\n", dest, strings.Join(r.Conflicting, ", "), dest)
	}
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// mergeServers adds the servers to the config at dest, keeping its
// comments, its settings and every server it has: one it has already is
// left as it is, and reported as the same or as conflicting.
func mergeServers(dest string, servers map[string]json.RawMessage) ([]byte, mergeReport, error) {
	var r mergeReport
	data, err := safefile.ReadFile(dest, maxClientConfigBytes)
	if err != nil {
		return nil, r, err
	}
	if _, err := config.Parse(dest, data, os.LookupEnv); err != nil {
		return nil, r, fmt.Errorf("cannot merge into %s, which is not a valid config: %w", dest, err)
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return nil, r, fmt.Errorf("%s: %w", dest, err)
	}
	key := "/mcpServers"
	if v.Find(key) == nil && v.Find("/servers") != nil {
		key = "/servers" // VS Code's spelling, as the file has it
	}
	if v.Find(key) == nil {
		if err := v.Patch([]byte(`[{"op":"add","path":"/mcpServers","value":{}}]`)); err != nil {
			return nil, r, fmt.Errorf("%s: %w", dest, err)
		}
	}
	for _, k := range sortedRawKeys(servers) {
		ptr := key + "/" + jsonPointerEscape(k)
		if have := v.Find(ptr); have != nil {
			if sameJSON(have.Pack(), servers[k]) {
				r.Same = append(r.Same, k)
			} else {
				r.Conflicting = append(r.Conflicting, k)
			}
			continue
		}
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": ptr, "value": servers[k]}})
		if err := v.Patch(patch); err != nil {
			return nil, r, fmt.Errorf("%s: server %q: %w", dest, k, err)
		}
		r.Added = append(r.Added, k)
	}
	v.Format()
	return v.Pack(), r, nil
}

// sameJSON reports whether two JSON values (comments allowed) are equal.
func sameJSON(a, b []byte) bool {
	var x, y any
	sa, err1 := hujson.Standardize(bytes.Clone(a))
	sb, err2 := hujson.Standardize(bytes.Clone(b))
	if err1 != nil || err2 != nil || json.Unmarshal(sa, &x) != nil || json.Unmarshal(sb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// outFlag adds -o and --out to fs: where a command writes its file, one
// spelling of it in every command that writes one.
func outFlag(fs *flag.FlagSet, usage string) *string {
	out := fs.String("out", "", usage+"; -o is the short form")
	fs.StringVar(out, "o", "", "the short form of --out (a `file`)")
	return out
}

// snippet is the client config entry that replaces the client's servers.
func snippet(client, cfgPath string) string {
	if client == "codex" {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) } // a TOML basic string is a JSON string
		return fmt.Sprintf("[mcp_servers.toolsearch]\ncommand = %s\nargs = [\"serve\", \"-c\", %s]", q(selfPath()), q(cfgPath))
	}
	entry := map[string]any{"command": selfPath(), "args": []string{"serve", "-c", cfgPath}}
	key := "mcpServers"
	if client == "vscode" {
		key = "servers"
		entry["type"] = "stdio"
	}
	b, _ := json.MarshalIndent(map[string]any{key: map[string]any{"toolsearch": entry}}, "", "  ")
	return string(b)
}

// clientTitle is how a client is named in a sentence.
func clientTitle(client string) string {
	switch client {
	case "codex":
		return "Codex"
	case "vscode":
		return "VS Code"
	}
	return client
}

func selfPath() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, os.TempDir()) || strings.HasSuffix(exe, ".test") {
		return "toolsearch"
	}
	return exe
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
