package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
)

func noGopls(string) (string, error)  { return "", errors.New("not found") }
func hasGopls(string) (string, error) { return "/usr/bin/gopls", nil }

func TestParseConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KEY": "secret", "HOME_SRC": "/src"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name  string
		raw   string
		path  func(string) (string, error)
		check func(t *testing.T, c Config)
		err   string
	}{
		{name: "defaults", raw: ``, path: noGopls, check: func(t *testing.T, c Config) {
			if !c.Glob.Enabled || !c.Glob.AlwaysLoad || !c.Grep.AlwaysLoad || c.WebFetch.Enabled || c.WebFetch.AlwaysLoad || c.WebSearch.Enabled || !c.Resources.Enabled ||
				c.Glob.Explicit || c.WebFetch.Explicit {
				t.Errorf("defaults %+v", c)
			}
			if len(c.LSP.Servers) != 0 {
				t.Errorf("lsp servers without gopls: %v", c.LSP.Servers)
			}
		}},
		{name: "gopls by default", raw: `{}`, path: hasGopls, check: func(t *testing.T, c Config) {
			if c.LSP.Servers["go"].Command != "gopls" {
				t.Errorf("servers %v", c.LSP.Servers)
			}
		}},
		{name: "go off", raw: `{"lsp": {"go": false}}`, path: hasGopls, check: func(t *testing.T, c Config) {
			if len(c.LSP.Servers) != 0 {
				t.Errorf("servers %v", c.LSP.Servers)
			}
		}},
		{name: "switches", raw: `{"glob": false, "grep": {"enabled": false}, "resources": {"alwaysLoad": true}, "web_fetch": null}`, check: func(t *testing.T, c Config) {
			if c.Glob.Enabled || c.Grep.Enabled || !c.Resources.Enabled || !c.Resources.AlwaysLoad || c.WebFetch.Enabled ||
				!c.Glob.Explicit || !c.Grep.Explicit || !c.Resources.Explicit || c.WebFetch.Explicit {
				t.Errorf("switches %+v", c)
			}
		}},
		{name: "web_fetch configured", raw: `{"web_fetch": true}`, check: func(t *testing.T, c Config) {
			if !c.WebFetch.Enabled || !c.WebFetch.Explicit {
				t.Errorf("web_fetch %+v", c.WebFetch)
			}
		}},
		{name: "web_fetch by its lists", raw: `{"web_fetch": {"allow": ["go.dev"]}}`, check: func(t *testing.T, c Config) {
			if !c.WebFetch.Enabled || !c.WebFetch.Explicit || !slices.Equal(c.WebFetch.Allow, []string{"go.dev"}) {
				t.Errorf("web_fetch %+v", c.WebFetch)
			}
		}},
		{name: "lsp servers", raw: `{"lsp": {"python": {"command": "pyright-langserver", "args": ["--stdio"]}, "zz": {"command": "zz-ls", "extensions": ["zz"]}, "timeout": 5, "alwaysLoad": true}}`, path: noGopls,
			check: func(t *testing.T, c Config) {
				if !slices.Equal(c.LSP.Servers["python"].Extensions, []string{".py", ".pyi"}) || !slices.Equal(c.LSP.Servers["zz"].Extensions, []string{".zz"}) ||
					c.LSP.Timeout != 5*time.Second || !c.LSP.AlwaysLoad {
					t.Errorf("lsp %+v", c.LSP)
				}
			}},
		{name: "null timeout keeps the default", raw: `{"lsp": {"timeout": null}, "web_fetch": {"timeout": null}}`, path: noGopls,
			check: func(t *testing.T, c Config) {
				if c.LSP.Timeout != 60*time.Second || c.WebFetch.Timeout != 30*time.Second {
					t.Errorf("timeouts lsp %v, web_fetch %v", c.LSP.Timeout, c.WebFetch.Timeout)
				}
			}},
		{name: "web", raw: `{"web_fetch": {"allow": ["go.dev"], "timeout": "3s", "pageChars": 1000, "cacheTTL": 60, "cacheBytes": 1048576}, "web_search": {"provider": "Brave", "key": "${KEY}", "block": ["x.com"]}, "roots": ["${HOME_SRC}/a"]}`,
			check: func(t *testing.T, c Config) {
				if c.WebFetch.Timeout != 3*time.Second || c.WebFetch.PageChars != 1000 || c.WebFetch.CacheTTL != time.Minute || c.WebFetch.Allow[0] != "go.dev" || c.WebFetch.CacheBytes != 1<<20 {
					t.Errorf("web_fetch %+v", c.WebFetch)
				}
				if !c.WebSearch.Enabled || c.WebSearch.Provider != "brave" || c.WebSearch.Key != "secret" || c.WebSearch.Block[0] != "x.com" {
					t.Errorf("web_search %+v", c.WebSearch)
				}
				if !slices.Equal(c.Roots, []string{"/src/a"}) {
					t.Errorf("roots %v", c.Roots)
				}
			}},
		{name: "searxng", raw: `{"web_search": {"provider": "searxng", "url": "http://127.0.0.1:8888"}}`, check: func(t *testing.T, c Config) {
			if !c.WebSearch.Enabled || c.WebSearch.URL != "http://127.0.0.1:8888" {
				t.Errorf("web_search %+v", c.WebSearch)
			}
		}},
		{name: "search off", raw: `{"web_search": false}`, check: func(t *testing.T, c Config) {
			if c.WebSearch.Enabled {
				t.Error("on")
			}
		}},
		{name: "not an object", raw: `[1]`, err: "want an object"},
		{name: "bad switch", raw: `{"glob": "yes"}`, err: "builtins.glob"},
		{name: "bad alwaysLoad", raw: `{"grep": {"alwaysLoad": 1}}`, err: "builtins.grep.alwaysLoad"},
		{name: "bad roots", raw: `{"roots": "x"}`, err: "builtins.roots"},
		{name: "no command", raw: `{"lsp": {"go": {"args": []}}}`, err: "builtins.lsp.go.command"},
		{name: "unknown language", raw: `{"lsp": {"cobol": {"command": "c"}}}`, err: "builtins.lsp.cobol.extensions"},
		{name: "bad timeout", raw: `{"web_fetch": {"timeout": "soon"}}`, err: "builtins.web_fetch.timeout"},
		{name: "zero timeout", raw: `{"lsp": {"timeout": 0}}`, err: "builtins.lsp.timeout: 0 is no time at all"},
		{name: "timeout over a day", raw: `{"web_search": {"provider": "brave", "timeout": "48h"}}`, err: "builtins.web_search.timeout: \"48h\" is longer than 24h"},
		{name: "negative cache TTL", raw: `{"web_fetch": {"cacheTTL": -60}}`, err: "builtins.web_fetch.cacheTTL: -60 seconds is out of range"},
		{name: "tiny page", raw: `{"web_fetch": {"pageChars": 10}}`, err: "pageChars"},
		{name: "no cache bytes", raw: `{"web_fetch": {"cacheBytes": 0}}`, err: "cacheBytes"},
		{name: "bad cache bytes", raw: `{"web_fetch": {"cacheBytes": "lots"}}`, err: "builtins.web_fetch.cacheBytes"},
		{name: "bad deny entry", raw: `{"web_fetch": {"deny": ["ok.com", "a..b"]}}`, err: "builtins.web_fetch.deny[1]"},
		{name: "bad allow address", raw: `{"web_fetch": {"allow": ["1.2.3.4.5"]}}`, err: "builtins.web_fetch.allow[0]"},
		{name: "bad block entry", raw: `{"web_search": {"provider": "searxng", "url": "http://127.0.0.1:8888", "block": ["x..com"]}}`, err: "builtins.web_search.block[0]"},
		{name: "no provider", raw: `{"web_search": {}}`, err: "builtins.web_search.provider"},
		{name: "bad provider", raw: `{"web_search": {"provider": "bing"}}`, err: "unknown provider"},
		{name: "searxng without url", raw: `{"web_search": {"provider": "searxng"}}`, err: "builtins.web_search.url"},
		{name: "brave without key", raw: `{"web_search": {"provider": "brave"}}`, err: "builtins.web_search.key"},
		{name: "unset variable", raw: `{"web_search": {"provider": "brave", "key": "${NOPE}"}}`, err: "${NOPE} is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig(json.RawMessage(tc.raw), lookup, tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"glob": false, "lsp": {"go": {"command": "x"}}}`, `{"web_search": {"provider": "brave", "key": "k"}}`, `null`, `{"roots": [1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		_, _ = ParseConfig(json.RawMessage(raw), nil, noGopls)
	})
}

// TestDefinitions: every definition is a valid catalog tool with an object
// schema, glob and grep carry the always-load hint, each description says
// what the tool does not do, and the resource tools come only on request.
func TestDefinitions(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(json.RawMessage(`{"web_fetch": true, "web_search": {"provider": "searxng", "url": "http://127.0.0.1:1"}}`), nil, hasGopls)
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, nil)
	defer s.Close()
	srv, err := catalog.NewServer(Key, s.Definitions(true), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range srv.Tools {
		names = append(names, tl.Name)
		var sch map[string]any
		if err := json.Unmarshal(tl.InputSchema, &sch); err != nil || sch["type"] != "object" {
			t.Errorf("%s: schema %s", tl.Name, tl.InputSchema)
		}
		if want := tl.Name == Glob || tl.Name == Grep; tl.AlwaysLoad != want {
			t.Errorf("%s: always load %v", tl.Name, tl.AlwaysLoad)
		}
		if !strings.Contains(strings.ToLower(tl.Description), "not ") {
			t.Errorf("%s: the description does not say what the tool does not do: %s", tl.Name, tl.Description)
		}
	}
	if want := []string{Glob, Grep, LSP, WebFetch, WebSearch, ListResources, ReadResource}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if n := len(s.Definitions(false)); n != 5 {
		t.Errorf("without resources: %d tools", n)
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	other := t.TempDir()
	other, _ = filepath.EvalSymlinks(other)
	for _, d := range []string{dir, other} {
		if err := os.WriteFile(filepath.Join(d, "x.go"), []byte("package x // in "+filepath.Base(d)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.Roots = []string{dir, filepath.Join(dir, "missing")}
	cfg.LSP.Enabled = false
	cfg.WebFetch.Enabled = true
	s := New(cfg, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name, tool, args string
		env              Env
		want, err        string
	}{
		{name: "glob in config root", tool: Glob, args: `{"pattern": "*.go"}`, want: "x.go"},
		{name: "grep", tool: Grep, args: `{"pattern": "package", "output_mode": "content"}`, want: "x.go:1:package x // in " + filepath.Base(dir)},
		{name: "client root as URI", tool: Grep, args: `{"pattern": "package", "output_mode": "content"}`, env: Env{ClientRoots: []string{"file://" + filepath.ToSlash(other)}}, want: "x.go:1:package x // in " + filepath.Base(other)},
		{name: "client root refuses config root", tool: Glob, args: `{"pattern": "*", "path": "` + dir + `"}`, env: Env{ClientRoots: []string{other}}, err: "outside the allowed roots"},
		{name: "bad client roots fall back", tool: Glob, args: `{"pattern": "*.go"}`, env: Env{ClientRoots: []string{"https://x/y", "file:///no/such/dir"}}, want: "x.go"},
		{name: "bad arguments", tool: Glob, args: `{"pattern": 3}`, err: "do not match its input schema"},
		{name: "null arguments", tool: Glob, args: `null`, err: "pattern is empty"},
		{name: "unknown", tool: "nope", args: `{}`, err: "not a built-in tool"},
		{name: "lsp off", tool: LSP, args: `{"operation": "hover"}`, err: "no language server"},
		{name: "search off", tool: WebSearch, args: `{"query": "x"}`, err: "no provider"},
		{name: "fetch refuses file", tool: WebFetch, args: `{"url": "file:///etc/passwd"}`, err: "only http and https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Call(ctx, tc.tool, json.RawMessage(tc.args), tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	none := New(Config{Glob: Switch{Enabled: true}}, nil)
	if _, err := none.Call(ctx, Glob, json.RawMessage(`{"pattern":"*"}`), Env{}); err == nil || !strings.Contains(err.Error(), "no root folders") {
		t.Errorf("no roots: %v", err)
	}
}

func TestRootPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"file:///home/me/src": "/home/me/src", "file://localhost/tmp/a%20b": "/tmp/a b", "/plain/path/": "/plain/path"} {
		if got, err := RootPath(in); err != nil || got != filepath.FromSlash(want) {
			t.Errorf("RootPath(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"http://x/y", "file://remote/x", ""} {
		if _, err := RootPath(bad); err == nil {
			t.Errorf("RootPath(%q) accepted", bad)
		}
	}
}
