package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
)

func TestCodexEntry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, toml string
		want       map[string]any // the entry as JSON decodes it
		notes      []string       // each a substring of one note
		err        string
	}{
		{"stdio", `command = "npx"
args = ["-y", "mem"]
cwd = "/srv"
env = { TOKEN = "x" }
env_vars = ["HTTPS_PROXY", "AWS_*"]
startup_timeout_sec = 20
enabled_tools = ["read_*"]
disabled_tools = ["delete_entities"]`,
			map[string]any{"command": "npx", "args": []any{"-y", "mem"}, "cwd": "/srv", "env": map[string]any{"TOKEN": "x"},
				"envPassthrough": []any{"HTTPS_PROXY", "AWS_*"}, "startTimeout": 20.0, "allow": []any{"read_*"}, "deny": []any{"delete_entities"}},
			nil, ""},
		{"http", `url = "https://example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Team" = "search" }
env_http_headers = { "X-Key" = "DOCS_KEY" }
enabled = false`,
			map[string]any{"url": "https://example.com/mcp", "disabled": true,
				"headers": map[string]any{"Authorization": "Bearer ${DOCS_TOKEN}", "X-Team": "search", "X-Key": "${DOCS_KEY}"}},
			nil, ""},
		{"milliseconds", `command = "slow"
startup_timeout_ms = 2500`, map[string]any{"command": "slow", "startTimeout": 2.5}, nil, ""},
		{"seconds win over milliseconds", `command = "slow"
startup_timeout_ms = 2500
startup_timeout_sec = 9`, map[string]any{"command": "slow", "startTimeout": 9.0}, nil, ""},
		{"enabled stays enabled", `command = "x"
enabled = true`, map[string]any{"command": "x"}, nil, ""},
		{"unused keys noted", `command = "x"
tool_timeout_sec = 60
required = true
http_headers_helper = "h"`, map[string]any{"command": "x"},
			[]string{"http_headers_helper left out: the gateway has no such setting", "required left out", "tool_timeout_sec left out: the gateway bounds every call"}, ""},
		{"command not a string", `command = 42`, nil, nil, "command is an integer, not a string"},
		{"args not strings", `command = "x"
args = ["a", 1]`, nil, nil, "args[1] is an integer, not a string"},
		{"env not a table", `command = "x"
env = "A=b"`, nil, nil, "env is a string, not a table of strings"},
		{"env value not a string", `command = "x"
env = { A = true }`, nil, nil, "env.A is a boolean, not a string"},
		{"negative timeout", `command = "x"
startup_timeout_sec = -1`, nil, nil, "startup_timeout_sec is -1: it must be at least 0"},
		{"enabled not a boolean", `command = "x"
enabled = "no"`, nil, nil, "enabled is a string, not true or false"},
		{"both", `command = "x"
url = "https://example.com"`, nil, nil, "both command and url"},
		{"neither", `args = ["x"]`, nil, nil, "neither command nor url"},
		{"url with a program's settings", `url = "https://example.com"
env = { A = "b" }`, nil, nil, "a url and the settings of a program"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := "[mcp_servers.s]\n" + c.toml + "\n"
			got, err := codexServers([]byte(data), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			e := got["s"]
			if c.err != "" {
				if e.err == nil || !strings.Contains(e.err.Error(), c.err) || !strings.Contains(e.err.Error(), "mcp_servers.s") {
					t.Fatalf("error %v, want one with %q naming mcp_servers.s", e.err, c.err)
				}
				return
			}
			if e.err != nil {
				t.Fatal(e.err)
			}
			var entry map[string]any
			if err := json.Unmarshal(e.raw, &entry); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(entry, c.want) {
				t.Errorf("entry %v, want %v", entry, c.want)
			}
			if len(e.notes) != len(c.notes) {
				t.Fatalf("notes %q, want %d", e.notes, len(c.notes))
			}
			for i, n := range c.notes {
				if !strings.Contains(e.notes[i], n) {
					t.Errorf("note %q, want one with %q", e.notes[i], n)
				}
			}
			// What import writes is a server entry the gateway reads.
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]json.RawMessage{"s": e.raw}})
			if _, err := config.Parse("toolsearch.json", cfg, func(string) (string, bool) { return "v", true }); err != nil {
				t.Errorf("the gateway refuses the entry: %v", err)
			}
		})
	}
}

func TestCodexFileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, data, want string }{
		{"not TOML", "[mcp_servers.s\ncommand = 1", "config.toml: not valid TOML"},
		{"servers not a table", `mcp_servers = 3`, "mcp_servers is an integer, not a table of servers"},
	} {
		if _, err := codexServers([]byte(c.data), "config.toml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	got, err := codexServers([]byte("[mcp_servers]\ns = 3\n"), "config.toml")
	if err != nil || got["s"].err == nil || !strings.Contains(got["s"].err.Error(), "mcp_servers.s is an integer, not a table") {
		t.Errorf("a server that is no table: %v, %v", got, err)
	}
	if got, err := codexServers([]byte(`model = "gpt-5"`), "config.toml"); err != nil || len(got) != 0 {
		t.Errorf("a config without servers: %v, %v", got, err)
	}
}

// TestImportCodexProject imports a project's .codex/config.toml (relative
// paths written absolute against the project) and the user's, named by
// CODEX_HOME (a relative path there has nothing to resolve against).
func TestImportCodexProject(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", home)
	if err := os.MkdirAll(filepath.Join(project, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(project, ".codex", "config.toml"), "[mcp_servers.local]\ncommand = \"./bin/server\"\nargs = [\"--root\", \".\"]\n")
	write(filepath.Join(home, "config.toml"), "[mcp_servers.global]\ncommand = \"global-mcp\"\n\n[mcp_servers.relative]\ncommand = \"./x\"\n")
	out := filepath.Join(t.TempDir(), "toolsearch.json")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"import", "--from", "codex", "--project", project, "-o", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cfg, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*config.Server{}
	for _, s := range cfg.Servers {
		got[s.Key] = s
	}
	if l := got["local"]; l == nil || l.Command != filepath.Join(project, "bin", "server") || strings.Join(l.Args, " ") != "--root "+project {
		t.Errorf("local: %+v", l)
	}
	if g := got["global"]; g == nil || g.Command != "global-mcp" {
		t.Errorf("global: %+v", g)
	}
	if got["relative"] != nil || !strings.Contains(stderr.String(), `leaving out server "relative"`) {
		t.Errorf("the user-wide relative command: %+v\n%s", got["relative"], stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "[mcp_servers.toolsearch]") || !strings.Contains(stdout.String(), `"-c", "`+out+`"`) ||
		!strings.Contains(stderr.String(), "codex mcp add toolsearch --") {
		t.Errorf("snippet %s\n%s", stdout.String(), stderr.String())
	}
}

// FuzzCodexServers: any bytes give servers or an error, never a panic,
// and every entry read is a JSON object.
func FuzzCodexServers(f *testing.F) {
	for _, seed := range []string{
		"[mcp_servers.a]\ncommand = \"x\"\nargs = [\"y\"]\nenv = { A = \"b\" }\n",
		"[mcp_servers.b]\nurl = \"https://e.com\"\nbearer_token_env_var = \"T\"\nenabled = false\n",
		"[mcp_servers.c]\ncommand = 1\n",
		"mcp_servers = []\n",
		"[mcp_servers.d.env]\nA = 1\n",
		"[[mcp_servers.e]]\ncommand = \"x\"\n",
		"[mcp_servers.f]\ncommand = \"x\"\nstartup_timeout_sec = 1e400\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := codexServers(data, "config.toml")
		if err != nil {
			return
		}
		for name, e := range got {
			if e.err != nil {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(e.raw, &m); err != nil || m == nil {
				t.Fatalf("server %q: %s is no JSON object: %v", name, e.raw, err)
			}
		}
	})
}
