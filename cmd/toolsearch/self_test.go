package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// selfCopies makes, in dir, a symbolic link to the test binary, a hard
// link (when the file system allows one) and a copy of it.
func selfCopies(t *testing.T, dir string) (exe, link, hard, copied string) {
	t.Helper()
	exe, err := selfExecutable()
	if err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "ts-link")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	hard = filepath.Join(dir, "ts-hard")
	if err := os.Link(exe, hard); err != nil {
		hard = "" // another file system
	}
	copied = filepath.Join(dir, "ts-copy")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(copied, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe, link, hard, copied
}

// TestRunsSelf: which entries are recognised as this binary's serve, and
// which are not (a wrapper that starts it is not: see self.go).
func TestRunsSelf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, link, hard, copied := selfCopies(t, dir)
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "toolsearch")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho other\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh, _ := exec.LookPath("sh")
	for _, tc := range []struct {
		name, command string
		args          []string
		cwd, path     string
		want          bool
	}{
		{name: "the binary itself", command: exe, args: []string{"serve"}, want: true},
		{name: "a symbolic link", command: link, args: []string{"serve", "-c", "x.json"}, want: true},
		{name: "a hard link", command: hard, args: []string{"serve"}, want: true},
		{name: "a copy", command: copied, args: []string{"serve"}, want: true},
		{name: "a relative path from the entry's cwd", command: "./ts-link", args: []string{"serve"}, cwd: dir, want: true},
		{name: "a relative path with ..", command: "../ts-copy", args: []string{"serve"}, cwd: bin, want: true},
		{name: "a bare name on PATH", command: "toolsearch", args: []string{"serve"}, path: bin, want: true},
		{name: "a bare name not on PATH", command: "toolsearch", args: []string{"serve"}, path: filepath.Join(dir, "nowhere")},
		{name: "not serve", command: exe, args: []string{"version"}},
		{name: "no arguments", command: exe},
		{name: "another program", command: other, args: []string{"serve"}},
		{name: "a shell wrapper is not detected", command: sh, args: []string{"-c", exe + " serve"}},
		{name: "a missing file", command: filepath.Join(dir, "missing"), args: []string{"serve"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "a hard link" && hard == "" {
				t.Skip("no hard link on this file system")
			}
			got, _ := runsSelf(exe, tc.command, tc.args, tc.cwd, tc.path)
			if got != tc.want {
				t.Errorf("runsSelf(%s %v) = %v, want %v", tc.command, tc.args, got, tc.want)
			}
		})
	}
}

// TestServeRefusesItself: serve, as a process of its own, refuses a
// config entry that would start its own serve again, naming the entry,
// before it starts anything. The entries would run the test binary as
// the CLI with the same config, which refuses too: nothing recurses even
// if the check failed.
func TestServeRefusesItself(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, link, _, copied := selfCopies(t, dir)
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "toolsearch-dev")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		entry map[string]any
		path  string
	}{
		{"by path", map[string]any{"command": exe}, ""},
		{"through a symbolic link", map[string]any{"command": link}, ""},
		{"a copy", map[string]any{"command": copied}, ""},
		{"a relative path", map[string]any{"command": "./ts-link", "cwd": dir}, ""},
		{"a name on PATH", map[string]any{"command": "toolsearch-dev"}, bin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub := t.TempDir()
			p := filepath.Join(sub, "ts.json")
			entry := tc.entry
			entry["args"] = []string{"serve", "-c", p}
			entry["env"] = map[string]string{roleEnv: "cli"}
			writeConfigJSON(t, p, map[string]any{"mcpServers": map[string]any{"loop": entry}})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := cliProcess(t, ctx, sub, "serve", "-c", p, "--state-dir", filepath.Join(sub, "state"))
			if tc.path != "" {
				cmd.Env = append(cmd.Env, "PATH="+tc.path+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Stdin = strings.NewReader("")
			code := exitCode(cmd.Run())
			if code != exitUsage || !strings.Contains(stderr.String(), `server "loop"`) || !strings.Contains(stderr.String(), "own serve") {
				t.Errorf("serve exited %d, want %d with the entry named:\n%s", code, exitUsage, stderr.String())
			}
		})
	}
}

// TestImportSkipsItself: import leaves out the entries that run this
// binary's serve, under any name, and keeps a wrapper it cannot see
// through (self.go says what is detected).
func TestImportSkipsItself(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, link, _, copied := selfCopies(t, dir)
	sh, _ := exec.LookPath("sh")
	src := writeConfigJSON(t, filepath.Join(dir, "claude.json"), map[string]any{"mcpServers": map[string]any{
		"gw-link":     map[string]any{"command": link, "args": []string{"serve", "-c", "a.json"}},
		"gw-copy":     map[string]any{"command": copied, "args": []string{"serve"}},
		"gw-relative": map[string]any{"command": "./ts-link", "args": []string{"serve"}, "cwd": dir},
		"gw-version":  map[string]any{"command": link, "args": []string{"version"}},
		"gw-shell":    map[string]any{"command": sh, "args": []string{"-c", link + " serve"}},
		"memory":      map[string]any{"command": "mcp-server-memory"},
	}})
	out := filepath.Join(dir, "gw.json")
	code, _, stderr := runCLI(t, "import", "--from", src, "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg, err := config.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range cfg.Servers {
		keys = append(keys, s.Key)
	}
	if want := "gw-shell,gw-version,memory"; strings.Join(keys, ",") != want {
		t.Errorf("imported %v, want %s", keys, want)
	}
	for _, k := range []string{"gw-link", "gw-copy", "gw-relative"} {
		if !strings.Contains(stderr, `leaving out server "`+k+`"`) || !strings.Contains(stderr, "runs toolsearch serve itself") {
			t.Errorf("no message leaves out %s:\n%s", k, stderr)
		}
	}
}
