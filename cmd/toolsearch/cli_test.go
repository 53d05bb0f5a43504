package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name     string
		main     string
		settings map[string]string
		want     string
	}{
		{"installed at a version", "v1.2.3", map[string]string{"vcs.revision": rev}, "v1.2.3"},
		{"built from a clean tree", "(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "false"}, "devel+0123456789ab"},
		{"built from a changed tree", "(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "true"}, "devel+0123456789ab-dirty"},
		{"no vcs information", "(devel)", nil, "devel"},
		{"empty main version", "", map[string]string{"vcs.revision": "abc"}, "devel+abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &debug.BuildInfo{Main: debug.Module{Version: tc.main}}
			for k, v := range tc.settings {
				info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
			}
			if got := versionOf(info); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionCommands(t *testing.T) {
	t.Parallel()
	want := "toolsearch " + buildVersion() + " ("
	for _, tc := range []struct {
		args     []string
		code     int
		out, err []string
	}{
		{[]string{"--version"}, exitOK, []string{want}, nil},
		{[]string{"-V"}, exitOK, []string{want}, nil},
		{[]string{"version"}, exitOK, []string{want}, nil},
		{[]string{"version", "extra"}, exitUsage, nil, []string{`takes no arguments, got "extra"`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			checkCLI(t, code, tc.code, out.String(), errb.String(), tc.out, tc.err)
		})
	}
}

func TestHelpCommand(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var direct, viaHelp, errb bytes.Buffer
			if code := run(context.Background(), []string{c.name, "--help"}, &direct, &errb); code != exitOK {
				t.Fatalf("%s --help: exit %d: %s", c.name, code, errb.String())
			}
			if code := run(context.Background(), []string{"help", c.name}, &viaHelp, &errb); code != exitOK {
				t.Fatalf("help %s: exit %d: %s", c.name, code, errb.String())
			}
			if viaHelp.String() != direct.String() || !strings.Contains(direct.String(), "Usage: toolsearch "+c.name) {
				t.Errorf("help %s printed\n%s\nwant what %s --help prints:\n%s", c.name, viaHelp.String(), c.name, direct.String())
			}
		})
	}
	for _, tc := range []struct {
		args []string
		code int
		out  []string
		err  []string
	}{
		{[]string{"help"}, exitOK, []string{"Commands:", "completion", "version"}, nil},
		{[]string{"help", "help"}, exitOK, []string{"Commands:"}, nil},
		{[]string{"help", "nope"}, exitUsage, nil, []string{`unknown command "nope"`}},
		{[]string{"help", "search", "tools"}, exitUsage, nil, []string{"name one command, got 2 words"}},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		checkCLI(t, code, tc.code, out.String(), errb.String(), tc.out, tc.err)
	}
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"completion"}, exitUsage, "name one shell of bash, zsh, fish"},
		{[]string{"completion", "powershell"}, exitUsage, "name one shell of bash, zsh, fish"},
		{[]string{"completion", "bash", "zsh"}, exitUsage, "name one shell"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		checkCLI(t, code, tc.code, out.String(), errb.String(), nil, []string{tc.err})
	}
	// Every flag a command's help lists is in every script.
	specs := completionSpecs(context.Background())
	serve := specs[slices.IndexFunc(specs, func(s completionSpec) bool { return s.name == "serve" })]
	for _, f := range []string{"-c", "--config", "--log-format", "--exposure", "--http"} {
		if !slices.Contains(serve.flags, f) {
			t.Errorf("serve's completion flags lack %s: %v", f, serve.flags)
		}
	}
	for _, sh := range shells {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"completion", sh}, &out, &errb); code != exitOK {
			t.Fatalf("completion %s: exit %d: %s", sh, code, errb.String())
		}
		for _, s := range specs {
			if !strings.Contains(out.String(), s.name) {
				t.Errorf("the %s script does not name the %s command", sh, s.name)
			}
			for _, f := range s.flags {
				name := strings.TrimLeft(f, "-")
				if !strings.Contains(out.String(), name) {
					t.Errorf("the %s script lacks %s's flag %s", sh, s.name, f)
				}
			}
		}
	}
}

// TestBashCompletion sources the script in a real bash and asks it what it
// completes.
func TestBashCompletion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not on PATH")
	}
	var script, errb bytes.Buffer
	if code := run(context.Background(), []string{"completion", "bash"}, &script, &errb); code != exitOK {
		t.Fatalf("completion bash: %s", errb.String())
	}
	path := filepath.Join(t.TempDir(), "toolsearch.bash")
	if err := os.WriteFile(path, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string // the command line, the last word being completed
		want  []string
		not   []string
	}{
		{[]string{"toolsearch", "se"}, []string{"search", "serve"}, []string{"status"}},
		{[]string{"toolsearch", "--v"}, []string{"--version"}, nil},
		{[]string{"toolsearch", "serve", "--log-f"}, []string{"--log-format"}, nil},
		{[]string{"toolsearch", "serve", "--con"}, []string{"--config", "--context-window"}, nil},
		{[]string{"toolsearch", "help", "st"}, []string{"status"}, []string{"search"}},
		{[]string{"toolsearch", "completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		{[]string{"toolsearch", "search", "--m"}, []string{"--min-score", "--mode"}, []string{"--exposure"}},
	} {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			quoted := make([]string, len(tc.words))
			for i, w := range tc.words {
				quoted[i] = "'" + w + "'"
			}
			prog := "source " + path + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
				string(rune('0'+len(tc.words)-1)) + "\n_toolsearch\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
			cmd.Dir = t.TempDir() // file completion sees an empty folder
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			got := strings.Fields(string(out))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("completes %v, want %s among them", got, w)
				}
			}
			for _, w := range tc.not {
				if slices.Contains(got, w) {
					t.Errorf("completes %v, which should not hold %s", got, w)
				}
			}
		})
	}
}

// TestOtherShellsParse checks the zsh and fish scripts with the shells'
// own parsers, where they are installed.
func TestOtherShellsParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ shell, check string }{
		{"zsh", "-n"},
		{"fish", "--no-execute"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			sh, err := exec.LookPath(tc.shell)
			if err != nil {
				t.Skipf("%s is not on PATH: its script is checked only for content (TestCompletionScripts)", tc.shell)
			}
			var script, errb bytes.Buffer
			if code := run(context.Background(), []string{"completion", tc.shell}, &script, &errb); code != exitOK {
				t.Fatalf("completion %s: %s", tc.shell, errb.String())
			}
			path := filepath.Join(t.TempDir(), "toolsearch."+tc.shell)
			if err := os.WriteFile(path, script.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh, tc.check, path).CombinedOutput(); err != nil {
				t.Errorf("%s %s rejects the script: %v\n%s", tc.shell, tc.check, err, out)
			}
			if tc.shell != "fish" {
				return
			}
			// fish answers what it would complete: ask it.
			for line, want := range map[string]string{
				"toolsearch se":             "serve",
				"toolsearch serve --log-f":  "--log-format",
				"toolsearch completion ":    "zsh",
				"toolsearch search --min-s": "--min-score",
			} {
				out, err := exec.Command(sh, "--no-config", "-c", "source "+path+"; complete -C '"+line+"'").CombinedOutput()
				if err != nil {
					t.Fatalf("fish: %v\n%s", err, out)
				}
				var got []string
				for _, l := range strings.Split(string(out), "\n") {
					word, _, _ := strings.Cut(l, "\t")
					got = append(got, word)
				}
				if !slices.Contains(got, want) {
					t.Errorf("fish completes %q to %v, want %s among them", line, got, want)
				}
			}
		})
	}
}

func TestNewLogger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level, format string
		err           string
		json          bool
	}{
		{"info", "text", "", false},
		{"debug", "json", "", true},
		{"warn", "", "", false},
		{"info", "xml", `--log-format "xml": want text or json`, false},
		{"loud", "json", `--log-level "loud"`, false},
	} {
		var buf bytes.Buffer
		l, err := newLogger(&buf, tc.level, tc.format)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("newLogger(%q, %q) error %v, want %q", tc.level, tc.format, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("newLogger(%q, %q): %v", tc.level, tc.format, err)
		}
		l.Warn("hello", "n", 1)
		var rec map[string]any
		isJSON := json.Unmarshal(buf.Bytes(), &rec) == nil
		if isJSON != tc.json || !strings.Contains(buf.String(), "hello") {
			t.Errorf("format %q logged %q (JSON: %t, want %t)", tc.format, buf.String(), isJSON, tc.json)
		}
	}
}

// TestConfigLongFormAndJSONLogs runs serve with --config (the long form of
// -c) against a real stdio server, --check and serving with --log-format
// json, and checks that every log line is a JSON record.
func TestConfigLongFormAndJSONLogs(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{"leaky": map[string]any{"command": exe, "env": map[string]string{roleEnv: "leaky"}}},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state")},
	}
	path := writeConfigJSON(t, filepath.Join(dir, "ts.json"), cfg)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string
		err  []string
	}{
		{"check with the long form", []string{"serve", "--config", path, "--check"}, exitOK, []string{"leaky"}, nil},
		{"check with the short form", []string{"serve", "-c", path, "--check"}, exitOK, []string{"leaky"}, nil},
		{"bad format", []string{"serve", "--config", path, "--log-format", "yaml"}, exitUsage, nil, []string{`--log-format "yaml": want text or json`}},
		{"proxy bad format", []string{"proxy", "--upstream", "http://127.0.0.1:1", "--log-format", "yaml"}, exitUsage, nil, []string{`--log-format "yaml"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb syncBuffer
			code := run(context.Background(), tc.args, &out, &errb)
			checkCLI(t, code, tc.code, out.String(), errb.String(), tc.out, tc.err)
		})
	}

	t.Run("serving logs JSON", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errb syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--config", path, "--http", "127.0.0.1:0", "--log-format", "json"}, &out, &errb)
		}()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(errb.String(), "gateway started") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop within 20s of its context ending")
		}
		records := 0
		for _, line := range strings.Split(errb.String(), "\n") {
			if line == "" {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("a log line is not JSON: %q", line)
				continue
			}
			if rec["msg"] == "gateway started" {
				records++
			}
		}
		if records != 1 {
			t.Errorf("want one JSON record of the start, found %d in:\n%s", records, errb.String())
		}
	})
}
