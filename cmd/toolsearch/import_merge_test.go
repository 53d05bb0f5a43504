package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestImportRelativePaths: a project's relative paths are written absolute
// against the project folder, and said so; a user-wide file's are refused,
// naming the path; everything else is left as written.
func TestImportRelativePaths(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		file     string // where the client file is, under the temporary folder
		entry    string
		wantArgs []string // "" for a server left out
		wantCwd  string
		stderr   string
	}{
		{"project filesystem root", ".mcp.json", `{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}`,
			[]string{"-y", "@modelcontextprotocol/server-filesystem", "{P}"}, "", `args[2] "." is relative to {P}: written as "{P}"`},
		{"project dotted paths and flag values", ".mcp.json", `{"command": "./bin/srv", "args": ["../data", "--root=./src", "--verbose", "https://x.example/a"], "cwd": "sub"}`,
			[]string{"{PP}/data", "--root={P}/src", "--verbose", "https://x.example/a"}, "{P}/sub", `command "./bin/srv"`},
		{"project existing file", ".cursor/mcp.json", `{"command": "node", "args": ["server.js", "missing/x.js"]}`,
			[]string{"{P}/server.js", "missing/x.js"}, "", `args[0] "server.js" is relative`},
		{"absolute and variables kept", ".mcp.json", `{"command": "node", "args": ["/opt/s.js", "${HOME}/x", "~/y"]}`,
			[]string{"/opt/s.js", "{H}/x", "~/y"}, "", ""}, // config.Load expands ${HOME}
		{"user-wide relative refused", "claude_desktop_config.json", `{"command": "node", "args": ["./server.js"]}`,
			nil, "", `leaving out server "s" of {F}: args[0] "./server.js": a relative path, and this file belongs to no project folder`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "server.js"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(dir, c.file)
			os.MkdirAll(filepath.Dir(src), 0o755)
			content := `{"mcpServers": {"s": ` + c.entry + `, "other": {"command": "other-mcp"}}}`
			if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "gw.json")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"import", "--from", src, "--project", dir, "--out", out}, &stdout, &stderr)
			errs := stderr.String()
			expand := func(s string) string {
				return strings.NewReplacer("{PP}", filepath.Dir(dir), "{P}", dir, "{F}", src, "{H}", os.Getenv("HOME")).Replace(s)
			}
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if c.stderr != "" && !strings.Contains(errs, expand(c.stderr)) {
				t.Errorf("stderr lacks %q:\n%s", expand(c.stderr), errs)
			}
			cfg, err := config.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			var got *config.Server
			for _, s := range cfg.Servers {
				if s.Key == "s" {
					got = s
				}
			}
			if c.wantArgs == nil {
				if got != nil {
					t.Errorf("server s was imported: %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("server s missing: %s", errs)
			}
			var want []string
			for _, a := range c.wantArgs {
				want = append(want, expand(a))
			}
			if strings.Join(got.Args, "|") != strings.Join(want, "|") || got.Cwd != expand(c.wantCwd) {
				t.Errorf("args %q cwd %q, want %q cwd %q", got.Args, got.Cwd, want, expand(c.wantCwd))
			}
		})
	}
}

// TestImportMerge: --merge adds the new servers to an existing config and
// keeps every entry, comment and setting in it; a server it has already
// is kept as it is and reported as unchanged or conflicting.
func TestImportMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dest := filepath.Join(dir, "toolsearch.json")
	existing := `// my gateway
{
  "mcpServers": {
    "memory": {"command": "mcp-server-memory"}, // keep me
    "gh": {"command": "gh-mcp", "args": ["--old"]}
  },
  "toolsearch": {"exposure": "search"}
}
`
	src := filepath.Join(dir, "client.json")
	client := `{"mcpServers": {"memory": {"command": "mcp-server-memory"}, "gh": {"command": "gh-mcp", "args": ["--new"]}, "fs": {"command": "fs-mcp"}}}`
	if err := os.WriteFile(src, []byte(client), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"exists without a choice", []string{"-o", dest}, exitUsage, []string{"exists; use --merge", "or --force"}},
		{"merge and force", []string{"-o", dest, "--merge", "--force"}, exitUsage, []string{"give one of them"}},
		{"merge", []string{"-o", dest, "--merge"}, exitOK, []string{"added 1 (fs)", "already there unchanged 1 (memory)", "conflicting 1 (gh)", "toolsearch remove -c " + dest}},
		{"merge again", []string{"--out", dest, "--merge"}, exitOK, []string{"added 0 (none)", "already there unchanged 2 (fs, memory)", "conflicting 1 (gh)"}},
	}
	if err := os.WriteFile(dest, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases { // in order: each builds on the last
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"import", "--from", src}, c.args...), &stdout, &stderr)
		checkCLI(t, code, c.code, stdout.String(), stderr.String(), nil, c.stderr)
	}
	data, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"// my gateway", "// keep me", `"--old"`, `"exposure": "search"`} {
		if !bytes.Contains(data, []byte(keep)) {
			t.Errorf("the merge lost %s:\n%s", keep, data)
		}
	}
	cfg, err := config.Load(dest)
	if err != nil {
		t.Fatalf("merged config: %v\n%s", err, data)
	}
	var keys []string
	for _, s := range cfg.Servers {
		keys = append(keys, s.Key)
	}
	if strings.Join(keys, ",") != "fs,gh,memory" || cfg.Gateway.Exposure != "search" {
		t.Errorf("servers %v exposure %q:\n%s", keys, cfg.Gateway.Exposure, data)
	}
	// A config reached through a symbolic link is merged where it lives,
	// and the link kept.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(dest, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"mcpServers": {"extra": {"command": "extra-mcp"}}}`), 0o644)
	var lout, lerr bytes.Buffer
	if code := run(context.Background(), []string{"import", "--from", other, "-o", link, "--merge"}, &lout, &lerr); code != exitOK {
		t.Fatalf("merge through a link: exit %d: %s", code, lerr.String())
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(dest); !bytes.Contains(data, []byte(`"extra"`)) || !bytes.Contains(data, []byte("// keep me")) {
		t.Errorf("the linked file was not merged into:\n%s", data)
	}
	// An invalid existing file is left alone.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": {}, "toolsearch": {"exposur": "full"}}`), 0o600)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"import", "--from", src, "-o", bad, "--merge"}, &stdout, &stderr)
	after, _ := os.ReadFile(bad)
	if code != exitUsage || !strings.Contains(stderr.String(), "not a valid config") || !strings.Contains(string(after), "exposur") {
		t.Errorf("merge into an invalid file: exit %d: %s\n%s", code, stderr.String(), after)
	}
	var snip map[string]any
	if json.Unmarshal(stdout.Bytes(), &snip) == nil && len(snip) > 0 {
		t.Errorf("a failed merge printed a snippet: %s", stdout.String())
	}
}
