package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
)

// sourceConfig writes a config of a notes server, a server that never
// answers, and one that cannot start, with its own state directory.
func sourceConfig(t *testing.T, gw map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	if gw == nil {
		gw = map[string]any{}
	}
	gw["stateDir"] = filepath.Join(dir, "state")
	return writeConfigJSON(t, filepath.Join(dir, "toolsearch.json"), map[string]any{
		"mcpServers": map[string]any{
			"notes":  roleServer(t, "notes"),
			"hung":   roleServer(t, "hang"),
			"broken": map[string]any{"command": filepath.Join(dir, "no-such-server")},
		},
		"toolsearch": gw,
	})
}

// hungRun is one run of the command over sourceConfig's servers.
type hungRun struct {
	code      int
	out, errs string
	timeout   time.Duration // the --timeout it was given
	took      time.Duration
}

// runWhileHung runs the command args makes for a --timeout over
// sourceConfig's servers, one of which never answers: the command waits
// the whole window for it, so the window is short (first wait), and the
// notes server must start within it. A busy machine may not start notes
// in time, which stderr tells ("notes: gave up"); the command then runs
// again with a window twice as long, while the test's deadline leaves room,
// so that no run rests on a process starting within a fixed time.
func runWhileHung(t *testing.T, wait time.Duration, args func(timeout string) []string) hungRun {
	t.Helper()
	for {
		start := time.Now()
		r := hungRun{timeout: wait}
		r.code, r.out, r.errs = runCLI(t, args(wait.String())...)
		r.took = time.Since(start)
		if !strings.Contains(r.errs, "notes: gave up") {
			return r
		}
		if d, ok := t.Deadline(); (ok && time.Until(d) < 8*wait) || wait >= time.Minute {
			t.Logf("notes did not start within %v, and there is no time left to wait longer:\n%s", wait, r.errs)
			return r
		}
		t.Logf("notes did not start within %v on this machine; again with twice the time", wait)
		wait *= 2
	}
}

// TestSearchReadsConfig: search, tools and lint read the config's
// servers, with a line per server on stderr (starting, its tools, or why
// it failed), give up on the hung one within --timeout and use the
// others; stdout stays parseable. A second run answers from the fresh
// cache without starting what it cached; --refresh starts it again.
func TestSearchReadsConfig(t *testing.T) {
	t.Parallel()
	cfg := sourceConfig(t, nil)
	r := runWhileHung(t, 2*time.Second, func(timeout string) []string {
		return []string{"search", "-c", cfg, "--timeout", timeout, "--json", "write a new note"}
	})
	if r.took > r.timeout+13*time.Second {
		t.Errorf("search took %v with a hung server and --timeout %v", r.took, r.timeout)
	}
	var res resultJSON
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object (%v):\n%s\nstderr:\n%s", err, r.out, r.errs)
	}
	if r.code != exitOK || len(res.Hits) == 0 || res.Hits[0].ID != "notes/create_note" {
		t.Fatalf("exit %d, hits %+v\nstderr:\n%s", r.code, res.Hits, r.errs)
	}
	for _, want := range []string{"notes: starting…", "notes: 3 tools in ", "hung: gave up: still starting after " + r.timeout.String(), "broken: failed: "} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errs)
		}
	}

	search := func(flags ...string) func(string) []string {
		return func(timeout string) []string {
			return append(append([]string{"search", "-c", cfg, "--timeout", timeout}, flags...), "select:notes__search_notes")
		}
	}
	r = runWhileHung(t, 3*time.Second, search())
	if r.code != exitOK || !strings.Contains(r.errs, "notes: 3 tools from the cache saved ") || strings.Contains(r.errs, "notes: starting") {
		t.Errorf("second run: exit %d, want the notes from the cache:\n%s", r.code, r.errs)
	}
	r = runWhileHung(t, 3*time.Second, search("--refresh"))
	if r.code != exitOK || !strings.Contains(r.errs, "notes: 3 tools in ") {
		t.Errorf("--refresh: exit %d, want the notes started again:\n%s", r.code, r.errs)
	}
	r = runWhileHung(t, 3*time.Second, search("--max-age", "1ns"))
	if r.code != exitOK || !strings.Contains(r.errs, "notes: 3 tools in ") {
		t.Errorf("--max-age 1ns: exit %d, want the stale cache not used:\n%s", r.code, r.errs)
	}
}

// TestToolsAndLintReadConfig: tools and lint report the config's
// servers, without the tools policy denies.
func TestToolsAndLintReadConfig(t *testing.T) {
	t.Parallel()
	cfg := sourceConfig(t, map[string]any{"policy": map[string]any{"deny": []string{"notes/delete_*"}}})
	r := runWhileHung(t, 3*time.Second, func(timeout string) []string { return []string{"tools", "-c", cfg, "--timeout", timeout, "--json"} })
	var rep toolsReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != exitOK {
		t.Fatalf("tools: exit %d, %v\n%s\n%s", r.code, err, r.out, r.errs)
	}
	i := slices.IndexFunc(rep.Servers, func(s serverTokens) bool { return s.Server == "notes" })
	if i < 0 || rep.Servers[i].Tools != 2 || rep.Servers[i].Tokens <= 0 {
		t.Errorf("tools rows %+v, want notes with its 2 allowed tools", rep.Servers)
	}
	for _, s := range rep.Servers {
		if s.Server == "hung" || s.Server == "broken" {
			t.Errorf("a server with no tools has a row: %+v", s)
		}
	}

	r = runWhileHung(t, 3*time.Second, func(timeout string) []string {
		return []string{"lint", "-c", cfg, "--timeout", timeout, "--json", "--server", "notes"}
	})
	var lrep struct {
		Tools int `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.out), &lrep); err != nil || r.code == exitUsage || lrep.Tools != 2 {
		t.Errorf("lint: exit %d, %v, report %+v\n%s\n%s", r.code, err, lrep, r.out, r.errs)
	}

	// Without --server, the report is of the configured servers only:
	// the gateway's own built-in tools (list_resources and read_resource
	// here, on for the web_fetch set below) are not the user's to lint.
	withBuiltins := sourceConfig(t, map[string]any{"builtins": map[string]any{"web_fetch": true}})
	for _, c := range []struct {
		args        []string
		builtinRows bool
	}{{nil, false}, {[]string{"--server", "builtin"}, true}} {
		r = runWhileHung(t, 3*time.Second, func(timeout string) []string {
			return append([]string{"lint", "-c", withBuiltins, "--timeout", timeout, "--json"}, c.args...)
		})
		var all struct {
			Tools    int `json:"tools"`
			Findings []struct {
				Tool string `json:"tool"`
			} `json:"findings"`
		}
		if err := json.Unmarshal([]byte(r.out), &all); err != nil || r.code == exitUsage {
			t.Fatalf("lint %v: exit %d, %v\n%s\n%s", c.args, r.code, err, r.out, r.errs)
		}
		builtinRows := false
		for _, f := range all.Findings {
			builtinRows = builtinRows || strings.HasPrefix(f.Tool, "builtin/")
		}
		if builtinRows != c.builtinRows || (c.args == nil && all.Tools != 3) {
			t.Errorf("lint %v: %d tools, built-in findings %v, want %v:\n%s", c.args, all.Tools, builtinRows, c.builtinRows, r.out)
		}
	}

	r = runWhileHung(t, 3*time.Second, func(timeout string) []string {
		return []string{"search", "-c", cfg, "--timeout", timeout, "select:notes__delete_note"}
	})
	if r.code != exitNoResult || strings.Contains(r.out, "delete_note\n") && !strings.Contains(r.out, "Unknown") {
		t.Errorf("a denied tool was found: exit %d\n%s", r.code, r.out)
	}
}

// TestSourceErrors: a config named but absent, or bad, and a bad
// --timeout are usage errors that say what is wrong.
func TestSourceErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, "bad.json", `{"mcpServers": {"x": {"comand": "y"}}}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing config", []string{"search", "-c", filepath.Join(dir, "nope.json"), "q"}, "nope.json does not exist"},
		{"unknown key", []string{"tools", "-c", bad}, `"comand"`},
		{"bad timeout", []string{"lint", "-c", writeConfigJSON(t, filepath.Join(dir, "ok.json"), map[string]any{"mcpServers": map[string]any{}}), "--timeout", "0s"}, "--timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errs := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %s", code, errs, exitUsage, tc.want)
			}
		})
	}
}

// TestSearchWithoutConfig: with no config anywhere, search says on
// stderr that it uses the embedded demo catalog.
func TestSearchWithoutConfig(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user config
	t.Setenv("HOME", t.TempDir())
	code, out, errs := runCLI(t, "search", "--json", "create a pull request")
	var res resultJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK || len(res.Hits) == 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if !strings.Contains(errs, "no config file") || !strings.Contains(errs, "embedded demo catalog") {
		t.Errorf("stderr does not say the demo catalog is used:\n%s", errs)
	}
}

// TestProgressHostileServer: a server's stderr in its failure line shows
// no control characters (it cannot retitle or clear the terminal) and no
// secret of the configuration.
func TestProgressHostileServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	loud := roleServer(t, "fail-loud")
	loud["env"].(map[string]string)["API_KEY"] = "sk-live-0123456789abcdef"
	cfg := writeConfigJSON(t, filepath.Join(dir, "ts.json"), map[string]any{
		"mcpServers": map[string]any{"loud": loud},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state")},
	})
	_, _, errs := runCLI(t, "tools", "-c", cfg, "--timeout", "60s") // it returns once the server has failed
	if !strings.Contains(errs, "loud: failed: ") {
		t.Fatalf("no failure line:\n%q", errs)
	}
	if strings.ContainsAny(errs, "\x1b\x07") {
		t.Errorf("stderr passes the server's control characters on:\n%q", errs)
	}
	if strings.Contains(errs, "0123456789abcdef") {
		t.Errorf("stderr shows the server's key:\n%q", errs)
	}
}

// TestStatusProgress: status shows each server's progress on stderr while
// it waits, stops waiting for a hung server at --timeout with the reason
// (in its row too), and exits 1.
func TestStatusProgress(t *testing.T) {
	t.Parallel()
	cfg := sourceConfig(t, nil)
	for _, flags := range [][]string{nil, {"--json"}} {
		r := runWhileHung(t, 2*time.Second, func(timeout string) []string {
			return append([]string{"status", "-c", cfg, "--timeout", timeout}, flags...)
		})
		args, code, out, errs := append([]string{"status"}, flags...), r.code, r.out, r.errs
		if r.took > r.timeout+13*time.Second {
			t.Errorf("%v took %v with --timeout %v", args, r.took, r.timeout)
		}
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		for _, want := range []string{"notes: starting…", "notes: 3 tools in ", "hung: gave up: still starting after " + r.timeout.String(), "broken: failed: "} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, errs)
			}
		}
		if slices.Contains(args, "--json") {
			var st statusJSON
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			i := slices.IndexFunc(st.Servers, func(s serverStatus) bool { return s.Name == "hung" })
			if i < 0 || st.Servers[i].State != "starting" || !strings.Contains(st.Servers[i].Error, "gave up waiting") {
				t.Errorf("hung row: %+v", st.Servers)
			}
		} else if !strings.Contains(out, "gave up waiting") {
			t.Errorf("the table does not say why hung has no tools:\n%s", out)
		}
	}
}

// TestSettledLine: which states end a server's wait, and what the line
// says.
func TestSettledLine(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cached := now.Add(-90 * time.Second)
	tests := []struct {
		name    string
		st      gateway.Status
		settled bool
		want    string
	}{
		{"starting", gateway.Status{State: gateway.StateStarting}, false, ""},
		// Between a failed start and its state change the count has
		// moved and the state not yet: still waiting.
		{"starting, counted as restarted", gateway.Status{State: gateway.StateStarting, Restarts: 1}, false, ""},
		{"restarting, no error yet", gateway.Status{State: gateway.StateRestarting}, false, ""},
		{"ready", gateway.Status{State: gateway.StateReady, Tools: 1}, true, "1 tool in 1.2s"},
		{"idle from the cache", gateway.Status{State: gateway.StateIdle, Tools: 4, CachedAt: cached}, true, "4 tools from the cache saved 1m30s ago"},
		{"failed", gateway.Status{State: gateway.StateFailed, Error: "exited\n(status 3)\x1b[2J"}, true, "failed: exited (status 3)?[2J"},
		{"restarting after a failure", gateway.Status{State: gateway.StateRestarting, Error: "did not answer"}, true, "failed: did not answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := settledLine(tc.st, 1234*time.Millisecond, now)
			if ok != tc.settled || got != tc.want {
				t.Errorf("settledLine = %q, %v; want %q, %v", got, ok, tc.want, tc.settled)
			}
		})
	}
}
