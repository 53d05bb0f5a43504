package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestImportVSCode imports VS Code files: JSON with comments and trailing
// commas, the servers key, ${workspaceFolder} resolved to the project of
// .vscode/mcp.json and refused in a user-wide file, ${env:NAME} and
// ${userHome} rewritten, ${input:…} and the editor's own variables
// refused with the entry and the variable named, and the input's value
// never copied.
func TestImportVSCode(t *testing.T) {
	t.Parallel()
	home, _ := os.UserHomeDir()
	const vscode = `{
	  // prompted values
	  "inputs": [{"type": "promptString", "id": "gh-pat", "description": "GitHub personal access token", "password": true},],
	  "servers": {
	    "files": {"type": "stdio", "command": "fs-mcp", "args": ["${workspaceFolder}/src", "--name=${workspaceFolderBasename}"], "cwd": "${workspaceFolder}",},
	    "github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${input:gh-pat}"}},
	    "notes": {"command": "notes-mcp", "env": {"NOTES_KEY": "${env:NOTES_KEY}", "NOTES_DIR": "${userHome}${pathSeparator}notes", "LEVEL": "${LEVEL:-info}"}},
	    "editor": {"command": "ed-mcp", "args": ["${file}"]},
	    "setting": {"command": "set-mcp", "args": ["${config:editor.fontSize}"]},
	    "docs": {"type": "http", "url": "https://example.com/mcp",}, /* trailing */
	  },
	}`
	type check struct {
		imported []string
		left     map[string]string // server → what its message names
		values   map[string]string // server → a value its entry has
	}
	for _, tc := range []struct {
		name, file string
		want       check
	}{
		{name: "project file", file: filepath.Join("proj", ".vscode", "mcp.json"), want: check{
			imported: []string{"docs", "files", "notes"},
			left:     map[string]string{"github": "${input:gh-pat}", "editor": "${file}", "setting": "${config:editor.fontSize}"},
			values:   map[string]string{"files": filepath.Join("proj", "src"), "notes": "${NOTES_KEY}"},
		}},
		{name: "user-wide file", file: filepath.Join("Code", "User", "mcp.json"), want: check{
			imported: []string{"docs", "notes"},
			left:     map[string]string{"files": "${workspaceFolder}", "github": "gh-pat"},
			values:   map[string]string{"notes": filepath.Join(home, "notes")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte(vscode), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "gw.json")
			code, stdout, stderr := runCLI(t, "import", "--from", src, "-o", out)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"input:", "${workspaceFolder}", "${env:", "${userHome}", "GitHub personal access token"} {
				if strings.Contains(string(data), bad) {
					t.Errorf("the config has %q:\n%s", bad, data)
				}
			}
			cfg, err := config.Parse(out, data, func(k string) (string, bool) { return "v-" + k, true })
			if err != nil {
				t.Fatalf("the imported config does not load: %v\n%s", err, data)
			}
			var keys []string
			for _, s := range cfg.Servers {
				keys = append(keys, s.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tc.want.imported, ",") {
				t.Errorf("imported %v, want %v", keys, tc.want.imported)
			}
			var raw struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			for server, v := range tc.want.values {
				if !strings.Contains(string(raw.MCPServers[server]), v) {
					t.Errorf("server %s = %s, want it to hold %q", server, raw.MCPServers[server], v)
				}
			}
			for server, what := range tc.want.left {
				found := false
				for _, line := range strings.Split(stderr, "\n") {
					if strings.Contains(line, `leaving out server "`+server+`"`) && strings.Contains(line, what) {
						found = true
					}
				}
				if !found {
					t.Errorf("no message leaves out %s naming %q:\n%s", server, what, stderr)
				}
			}
			if !strings.Contains(stdout, `"servers"`) {
				t.Errorf("the snippet for VS Code uses another key: %s", stdout)
			}
		})
	}
}

// TestImportVSCodeWorkspaceCwd: ${workspaceFolder} is the project folder,
// so the imported server starts there.
func TestImportVSCodeWorkspaceCwd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	src := filepath.Join(proj, ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(`{"servers": {"files": {"command": "fs-mcp", "cwd": "${workspaceFolder}"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "gw.json")
	if code, _, stderr := runCLI(t, "import", "--from", src, "-o", out); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Cwd != proj {
		t.Errorf("servers %+v, want cwd %s", cfg.Servers, proj)
	}
}

// FuzzImportEntry: rewriting an entry's variables never panics, gives
// valid JSON when it succeeds, never writes an ${input:…} reference, and
// turns every ${env:NAME} into ${NAME}.
func FuzzImportEntry(f *testing.F) {
	for _, seed := range []string{
		`{"command": "x", "args": ["${workspaceFolder}/src"], "cwd": "${workspaceFolder}"}`,
		`{"env": {"T": "${input:tok}"}}`,
		`{"env": {"K": "${env:KEY}", "H": "${userHome}${pathSeparator}x", "L": "${LEVEL:-info}"}}`,
		`{"args": ["${config:a.b}", "${file}", "${", "}", "$${x}", "${env:}"]}`,
		`{"url": "https://example.com/${workspaceFolderBasename}"}`,
		`[1, 2.5, null, true, "${/}"]`,
		`"${input:a}${env:B}"`,
	} {
		f.Add(seed, "/work/proj")
		f.Add(seed, "")
	}
	f.Fuzz(func(t *testing.T, raw, workspace string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		out, err := importEntry("fuzz", clientEntry{raw: json.RawMessage(raw), workspace: workspace, inputs: map[string]string{"a": "secret prompt"}})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s gave invalid JSON %s", raw, out)
		}
		if strings.Contains(raw, "${") && (strings.Contains(string(out), "${input:") || strings.Contains(string(out), "${env:")) {
			t.Fatalf("%s gave %s, which keeps an editor reference", raw, out)
		}
	})
}
