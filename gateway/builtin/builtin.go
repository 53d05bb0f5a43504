// Package builtin holds toolsearch's built-in tools: the ways besides tool
// search that an agent finds things — paths (glob), file contents (grep),
// code semantics (lsp), unknown web pages (web_search), known pages
// (web_fetch) and the data objects of MCP servers (list_resources,
// read_resource).
//
// The tools' logic lives in plain Go packages (gateway/builtin/files, gateway/builtin/web,
// gateway/builtin/lsp) that take a context and typed arguments. This package reads
// their configuration, writes their MCP definitions, and dispatches a call
// by name with JSON arguments. The gateway registers the definitions as the
// catalog server Key and routes calls here; the two resource tools are
// answered by the gateway itself, which knows its upstream servers.
//
// Which of the configured tools a client is shown is Decide's answer
// (decide.go), one decision with a reason per tool: web_fetch and
// web_search only when configured, the file tools only where there are
// roots, and none but those set explicitly for a client that has tools of
// its own.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/toolsearch/toolsearch/gateway/builtin/files"
	"github.com/toolsearch/toolsearch/gateway/builtin/lsp"
	"github.com/toolsearch/toolsearch/gateway/builtin/web"
)

// Set is the configured built-in tools. It is safe for concurrent use.
type Set struct {
	cfg      Config
	log      *slog.Logger
	roots    files.Roots // from the configuration
	rootsErr error
	fetcher  *web.Fetcher
	searcher *web.Searcher
	lsp      *lsp.Manager
}

// New makes the tools cfg turns on. Roots that do not exist are logged
// and left out rather than failing the gateway.
func New(cfg Config, log *slog.Logger) *Set {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Set{cfg: cfg, log: log}
	var ok []string
	for _, d := range cfg.Roots {
		if _, err := files.NewRoots([]string{d}); err != nil {
			log.Warn("builtin: skipping a configured root", "root", d, "err", err)
			continue
		}
		ok = append(ok, d)
	}
	s.roots, s.rootsErr = files.NewRoots(ok)
	if cfg.WebFetch.Enabled {
		w := cfg.WebFetch
		s.fetcher = web.NewFetcher(web.FetchOptions{Domains: web.Domains{Allow: w.Allow, Deny: w.Deny},
			MaxBytes: w.MaxBytes, Timeout: w.Timeout, PageChars: w.PageChars, CacheTTL: w.CacheTTL, CacheBytes: w.CacheBytes, AllowPrivate: w.AllowPrivate})
	}
	if cfg.WebSearch.Enabled {
		w := cfg.WebSearch
		var p web.Provider
		switch w.Provider {
		case "searxng":
			p = &web.SearXNG{URL: w.URL}
		case "brave":
			p = &web.Brave{Key: w.Key, URL: w.URL}
		}
		s.searcher = &web.Searcher{Provider: p, Domains: web.Domains{Allow: w.Allow, Deny: w.Block}, Timeout: w.Timeout, MaxResults: w.MaxResults}
	}
	if cfg.LSP.Enabled && len(cfg.LSP.Servers) > 0 {
		servers := map[string]lsp.ServerConfig{}
		for lang, ls := range cfg.LSP.Servers {
			servers[lang] = lsp.ServerConfig{Command: ls.Command, Args: ls.Args, Extensions: ls.Extensions, LanguageID: ls.LanguageID}
		}
		s.lsp = lsp.NewManager(servers, lsp.Options{Timeout: cfg.LSP.Timeout, Logger: log})
	}
	return s
}

// Definitions returns the MCP definitions of the tools that are on, in a
// fixed order. The resource tools are included only when resources is
// true: when at least one upstream server offers resources.
func (s *Set) Definitions(resources bool) []json.RawMessage {
	var out []json.RawMessage
	c := s.cfg
	if c.Glob.Enabled {
		out = append(out, definition(Glob, c.Glob.AlwaysLoad))
	}
	if c.Grep.Enabled {
		out = append(out, definition(Grep, c.Grep.AlwaysLoad))
	}
	if s.lsp != nil {
		out = append(out, definition(LSP, c.LSP.AlwaysLoad, languageList(c.LSP.Servers)))
	}
	if s.fetcher != nil {
		out = append(out, definition(WebFetch, c.WebFetch.AlwaysLoad))
	}
	if s.searcher != nil {
		out = append(out, definition(WebSearch, c.WebSearch.AlwaysLoad))
	}
	if resources && c.Resources.Enabled {
		out = append(out, definition(ListResources, c.Resources.AlwaysLoad), definition(ReadResource, c.Resources.AlwaysLoad))
	}
	return out
}

// ErrUnknownTool is returned by Call for a name that is not a built-in
// handled here.
var ErrUnknownTool = errors.New("not a built-in tool")

// Env is what a call knows about its caller.
type Env struct {
	// ClientRoots are the folders the client declared through MCP roots
	// (file:// URIs or paths). When empty, the configured roots apply.
	ClientRoots []string
}

// roots returns the roots a file tool works in: the client's, else the
// configuration's.
func (s *Set) rootsFor(env Env) (files.Roots, error) {
	if dirs := s.clientRootDirs(env.ClientRoots, true); len(dirs) > 0 {
		return files.NewRoots(dirs)
	}
	if s.rootsErr != nil {
		return files.Roots{}, s.rootsErr
	}
	if s.roots.Empty() {
		return files.Roots{}, files.ErrNoRoots
	}
	return s.roots, nil
}

// clientRootDirs returns the client's roots that are local folders a file
// tool can work in; the others are logged when logIgnored is set.
func (s *Set) clientRootDirs(roots []string, logIgnored bool) []string {
	var dirs []string
	for _, r := range roots {
		p, err := RootPath(r)
		if err == nil {
			_, err = files.NewRoots([]string{p})
		}
		if err != nil {
			if logIgnored {
				s.log.Warn("builtin: ignoring a client root", "root", r, "err", err)
			}
			continue
		}
		dirs = append(dirs, p)
	}
	return dirs
}

// RootPath turns an MCP root URI (file:///home/me/src) or a plain path
// into a local path.
func RootPath(uri string) (string, error) {
	if !strings.Contains(uri, "://") {
		if uri == "" {
			return "", errors.New("empty root")
		}
		return filepath.Clean(uri), nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("root %q: %w", uri, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("root %q is not a file:// URI", uri)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("root %q names a remote host", uri)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) > 2 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	return filepath.FromSlash(p), nil
}

// Call runs the built-in tool name with JSON arguments and returns the text
// for the model. Errors are meant for the model too.
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage, env Env) (string, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	decode := func(dst any) error {
		if err := json.Unmarshal(args, dst); err != nil {
			return fmt.Errorf("%s: the arguments do not match its input schema: %w", name, err)
		}
		return nil
	}
	switch name {
	case Glob, Grep:
		if (name == Glob && !s.cfg.Glob.Enabled) || (name == Grep && !s.cfg.Grep.Enabled) {
			return "", fmt.Errorf("%s is switched off in the configuration", name)
		}
		roots, err := s.rootsFor(env)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if name == Glob {
			var a files.GlobArgs
			if err := decode(&a); err != nil {
				return "", err
			}
			res, err := files.Glob(ctx, roots, a)
			if err != nil {
				return "", err
			}
			return res.String(), nil
		}
		var a files.GrepArgs
		if err := decode(&a); err != nil {
			return "", err
		}
		res, err := files.Grep(ctx, roots, a)
		if err != nil {
			return "", err
		}
		return res.String(), nil
	case LSP:
		if s.lsp == nil {
			return "", errors.New("lsp: no language server is configured (toolsearch.builtins.lsp), and gopls is not on PATH")
		}
		roots, err := s.rootsFor(env)
		if err != nil {
			return "", fmt.Errorf("lsp: %w", err)
		}
		var a lsp.Args
		if err := decode(&a); err != nil {
			return "", err
		}
		return s.lsp.Do(ctx, roots, a)
	case WebFetch:
		if s.fetcher == nil {
			return "", errors.New("web_fetch is switched off in the configuration")
		}
		var a web.FetchArgs
		if err := decode(&a); err != nil {
			return "", err
		}
		p, err := s.fetcher.Fetch(ctx, a)
		if err != nil {
			return "", err
		}
		return p.String(), nil
	case WebSearch:
		if s.searcher == nil {
			return "", errors.New("web_search has no provider configured (toolsearch.builtins.web_search)")
		}
		var a web.SearchArgs
		if err := decode(&a); err != nil {
			return "", err
		}
		r, err := s.searcher.Search(ctx, a)
		if err != nil {
			return "", err
		}
		return r.String(), nil
	}
	return "", fmt.Errorf("%q: %w", name, ErrUnknownTool)
}

// Close stops the language servers.
func (s *Set) Close() {
	if s.lsp != nil {
		s.lsp.Close()
	}
}
