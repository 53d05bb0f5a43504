package main

// Codex CLI keeps its MCP servers in TOML: $CODEX_HOME/config.toml
// (~/.codex/config.toml) for the user and .codex/config.toml for a
// project, one [mcp_servers.NAME] table a server. import reads them and
// writes each as the gateway's entry:
//
//	command, args, cwd, env     the same keys
//	env_vars = ["NAME", ...]    envPassthrough: the variables passed on
//	url                         url
//	http_headers                headers
//	env_http_headers            headers, each value ${VAR} of the variable named
//	bearer_token_env_var = "V"  headers: Authorization = "Bearer ${V}"
//	enabled = false             disabled: true
//	startup_timeout_sec (_ms)   startTimeout, in seconds
//	enabled_tools, disabled_tools  allow, deny: the tools policy lets through
//
// A key with no counterpart in the gateway (tool_timeout_sec, OAuth's
// settings, required) is left out with a note that names it; a value of
// the wrong type leaves the server out, with an error that names the key.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// codexHome is Codex's folder for the user's settings: $CODEX_HOME, else
// ~/.codex ("" when neither is known).
func codexHome() string {
	if home := os.Getenv("CODEX_HOME"); home != "" {
		return home
	}
	return homePath(".codex")
}

// codexPaths are the Codex configs import reads for --from codex: the
// project's, then the user's.
func codexPaths(project string) []string {
	paths := []string{filepath.Join(project, ".codex", "config.toml")}
	if home := codexHome(); home != "" {
		paths = append(paths, filepath.Join(home, "config.toml"))
	}
	return paths
}

// isCodexConfig reports whether path is a Codex config (TOML).
func isCodexConfig(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".toml")
}

// codexUnused are the keys of a Codex server table that have no
// counterpart in the gateway, with why.
var codexUnused = map[string]string{
	"tool_timeout_sec":             "the gateway bounds every call with toolsearch.limits.callTimeout",
	"required":                     "the gateway starts without a server that fails, and says so in status",
	"scopes":                       "the gateway does not sign in to servers with OAuth",
	"oauth":                        "the gateway does not sign in to servers with OAuth",
	"oauth_resource":               "the gateway does not sign in to servers with OAuth",
	"supports_parallel_tool_calls": "the gateway passes calls on as they come",
}

// readCodexServers reads the [mcp_servers] tables of the Codex config at
// path, each written as the gateway's entry, with notes on what was left
// out of it.
func readCodexServers(path string) (map[string]clientEntry, error) {
	data, err := safefile.ReadFile(path, maxClientConfigBytes)
	if err != nil {
		return nil, err
	}
	return codexServers(data, path)
}

// codexServers reads the [mcp_servers] tables of data, the Codex config
// at path.
func codexServers(data []byte, path string) (map[string]clientEntry, error) {
	var top map[string]any
	if _, err := toml.Decode(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))), &top); err != nil {
		return nil, fmt.Errorf("%s: not valid TOML: %w", path, err)
	}
	ws := workspaceOf(path)
	out := map[string]clientEntry{}
	raw, ok := top["mcp_servers"]
	if !ok {
		return out, nil
	}
	tables, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: mcp_servers is %s, not a table of servers", path, tomlType(raw))
	}
	for name, v := range tables {
		t, ok := v.(map[string]any)
		if !ok {
			out[name] = clientEntry{err: fmt.Errorf("mcp_servers.%s is %s, not a table", name, tomlType(v)), workspace: ws}
			continue
		}
		entry, notes, err := codexEntry(t)
		if err != nil {
			out[name] = clientEntry{err: fmt.Errorf("mcp_servers.%s: %w", name, err), workspace: ws}
			continue
		}
		b, err := json.Marshal(entry)
		if err != nil {
			return nil, fmt.Errorf("%s: mcp_servers.%s: %w", path, name, err)
		}
		out[name] = clientEntry{raw: b, workspace: ws, notes: notes}
	}
	return out, nil
}

// codexEntry writes one Codex server table as the gateway's entry.
func codexEntry(t map[string]any) (map[string]any, []string, error) {
	e := map[string]any{}
	var notes []string
	headers := map[string]string{}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := t[k]
		var err error
		switch k {
		case "command", "cwd", "url":
			e[k], err = tomlString(k, v)
		case "args":
			e[k], err = tomlStrings(k, v)
		case "env":
			e[k], err = tomlStringTable(k, v)
		case "env_vars":
			var names []string
			if names, err = tomlStrings(k, v); err == nil && len(names) > 0 {
				e["envPassthrough"] = names
			}
		case "http_headers":
			var h map[string]string
			if h, err = tomlStringTable(k, v); err == nil {
				for name, val := range h {
					headers[name] = val
				}
			}
		case "env_http_headers":
			var h map[string]string
			if h, err = tomlStringTable(k, v); err == nil {
				for name, variable := range h {
					headers[name] = "${" + variable + "}"
				}
			}
		case "bearer_token_env_var":
			var variable string
			if variable, err = tomlString(k, v); err == nil {
				headers["Authorization"] = "Bearer ${" + variable + "}"
			}
		case "enabled":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("enabled is %s, not true or false", tomlType(v))
			} else if !b {
				e["disabled"] = true
			}
		case "startup_timeout_sec", "startup_timeout_ms":
			var secs float64
			if secs, err = tomlNumber(k, v); err == nil {
				if k == "startup_timeout_ms" {
					secs /= 1000
				}
				if _, set := t["startup_timeout_sec"]; k == "startup_timeout_sec" || !set {
					e["startTimeout"] = secs
				}
			}
		case "enabled_tools":
			e["allow"], err = tomlStrings(k, v)
		case "disabled_tools":
			e["deny"], err = tomlStrings(k, v)
		default:
			if why, ok := codexUnused[k]; ok {
				notes = append(notes, fmt.Sprintf("%s left out: %s", k, why))
			} else {
				notes = append(notes, fmt.Sprintf("%s left out: the gateway has no such setting", k))
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(headers) > 0 {
		e["headers"] = headers
	}
	_, cmd := e["command"]
	_, url := e["url"]
	switch {
	case cmd && url:
		return nil, nil, errors.New("it has both command and url: one server is either a program to start or an address")
	case !cmd && !url:
		return nil, nil, errors.New("it has neither command nor url")
	case url && slices.ContainsFunc([]string{"args", "env", "envPassthrough", "cwd"}, func(k string) bool { _, ok := e[k]; return ok }):
		return nil, nil, errors.New("it has a url and the settings of a program to start (args, env, env_vars or cwd)")
	}
	return e, notes, nil
}

func tomlString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is %s, not a string", key, tomlType(v))
	}
	return s, nil
}

func tomlStrings(key string, v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a list of strings", key, tomlType(v))
	}
	out := make([]string, 0, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is %s, not a string", key, i, tomlType(x))
		}
		out = append(out, s)
	}
	return out, nil
}

func tomlStringTable(key string, v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a table of strings", key, tomlType(v))
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s is %s, not a string", key, k, tomlType(x))
		}
		out[k] = s
	}
	return out, nil
}

func tomlNumber(key string, v any) (float64, error) {
	switch n := v.(type) {
	case int64:
		if n >= 0 {
			return float64(n), nil
		}
	case float64:
		if n >= 0 {
			return n, nil
		}
	default:
		return 0, fmt.Errorf("%s is %s, not a number", key, tomlType(v))
	}
	return 0, fmt.Errorf("%s is %v: it must be at least 0", key, v)
}

// tomlType names the TOML type of a decoded value, with its article, for
// errors.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}
