package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/config"
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
}

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	names := make([]string, len(clients))
	for i, c := range clients {
		names[i] = c.name
	}
	fs := newFlags("import", "--from CLIENT|FILE [-o FILE] [--force]", stderr)
	from := fs.String("from", "", "the client to import from ("+strings.Join(names, ", ")+"), or a config `file`")
	out := fs.String("o", "", "where to write the gateway config (default: "+config.DefaultPaths()[len(config.DefaultPaths())-1]+")")
	project := fs.String("project", ".", "project `dir` for project-scoped configs (.mcp.json, .cursor/mcp.json, .vscode/mcp.json)")
	force := fs.Bool("force", false, "overwrite an existing output file")
	if _, code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if *from == "" {
		fmt.Fprintf(stderr, "toolsearch import: --from is required (%s, or a file)\n", strings.Join(names, ", "))
		return exitUsage
	}
	client, sources := resolveSources(*from, *project)
	servers := map[string]json.RawMessage{}
	var read []string
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
		for k, v := range found {
			if k == "toolsearch" {
				continue // the gateway itself
			}
			if _, dup := servers[k]; !dup {
				servers[k] = v
			}
		}
	}
	if len(read) == 0 {
		fmt.Fprintf(stderr, "toolsearch import: no config found for %s (looked in %s)\n", *from, strings.Join(sources, ", "))
		return exitUsage
	}
	if len(servers) == 0 {
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
	if _, err := os.Stat(dest); err == nil && !*force {
		fmt.Fprintf(stderr, "toolsearch import: %s exists; use --force to overwrite it\n", dest)
		return exitUsage
	}
	exposure, why := importExposure(client)
	data, err := gatewayConfig(servers, exposure)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
		return 1
	}
	// Check that what we write reads back (unset variables are fine).
	if _, err := config.Parse(dest, data, os.LookupEnv); err != nil {
		fmt.Fprintf(stderr, "toolsearch import: the imported servers do not make a valid config: %v\n", err)
		return exitUsage
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
		return 1
	}
	if err := os.WriteFile(dest, data, 0o600); err != nil {
		fmt.Fprintf(stderr, "toolsearch import: %v\n", err)
		return 1
	}
	keys := sortedRawKeys(servers)
	fmt.Fprintf(stderr, "Imported %d servers (%s) from %s into %s.\n", len(keys), strings.Join(keys, ", "), strings.Join(read, ", "), dest)
	fmt.Fprintf(stderr, "Exposure %s: %s\n", exposure, why)
	fmt.Fprintf(stderr, "Replace the servers in your %s config with this one entry:\n\n", client)
	fmt.Fprintln(stdout, snippet(client, dest))
	if client == "claude-code" {
		exe := selfPath()
		fmt.Fprintf(stderr, "\nor run: claude mcp add toolsearch -- %s serve -c %s\n", exe, dest)
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
	if strings.Contains(from, ".vscode") {
		client = "vscode"
	}
	return client, []string{from}
}

// readServers reads the server entries of a client config, unexpanded. In
// ~/.claude.json it also reads the project's entry.
func readServers(path, project string) (map[string]json.RawMessage, error) {
	data, err := safefile.ReadFile(path, maxClientConfigBytes)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", path, err)
	}
	out := map[string]json.RawMessage{}
	for _, key := range []string{"mcpServers", "servers"} {
		if raw, ok := top[key]; ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("%s: %q is not an object: %w", path, key, err)
			}
			for k, v := range m {
				out[k] = v
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
						out[k] = v
					}
				}
			}
		}
	}
	return out, nil
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

// snippet is the client config entry that replaces the client's servers.
func snippet(client, cfgPath string) string {
	entry := map[string]any{"command": selfPath(), "args": []string{"serve", "-c", cfgPath}}
	key := "mcpServers"
	if client == "vscode" {
		key = "servers"
		entry["type"] = "stdio"
	}
	b, _ := json.MarshalIndent(map[string]any{key: map[string]any{"toolsearch": entry}}, "", "  ")
	return string(b)
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
