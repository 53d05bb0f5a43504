package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/gateway/builtin/web"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Config says which built-in tools exist and how they behave. It is read
// from the "builtins" object under the "toolsearch" key of the
// configuration file:
//
//	"builtins": {
//	  "roots": ["~/src/project"],          // used when the client declares no MCP roots
//	  "glob": true,                         // or false, or {"alwaysLoad": false}
//	  "grep": true,
//	  "lsp": {"go": {"command": "gopls", "args": ["serve"]},
//	          "python": {"command": "pyright-langserver", "args": ["--stdio"], "extensions": [".py"]},
//	          "alwaysLoad": false, "timeout": "30s"},
//	  "web_fetch": {"allow": ["go.dev"], "deny": ["example.com"], "maxBytes": 10485760,
//	                "timeout": "30s", "pageChars": 20000, "cacheTTL": "15m",
//	                "cacheBytes": 67108864,   // the page cache's bound
//	                "allowPrivate": false},   // true lets it reach loopback, private and other special addresses
//	  "web_search": {"provider": "searxng", "url": "http://127.0.0.1:8888",
//	                 "allow": [], "block": ["pinterest.com"]},
//	                // or {"provider": "brave", "key": "${BRAVE_KEY}"}
//	  "resources": true                     // list_resources and read_resource
//	}
//
// web_fetch and web_search are off until configured: web_fetch by true or
// an object, web_search by an object that names a provider. glob, grep,
// lsp and the resource tools are on unless set to false (or {"enabled":
// false}); lsp needs a language server (gopls for Go is used by default
// when it is on PATH). Being on in the configuration is not the whole
// story: which tools a client is shown is decided per client (Decide):
// the file tools need roots, and a client with tools of its own gets none
// of these unless the file sets them explicitly. glob and grep are always
// loaded; the others are deferred behind tool search unless "alwaysLoad"
// is true. Strings expand ${VAR} like the rest of the file.
type Config struct {
	// Roots are the folders the file tools work in when the client
	// declares no MCP roots.
	Roots     []string
	Glob      Switch
	Grep      Switch
	LSP       LSPConfig
	WebFetch  WebFetchConfig
	WebSearch WebSearchConfig
	Resources Switch
}

// Switch turns one tool on or off and says whether it is always loaded.
type Switch struct {
	Enabled    bool
	AlwaysLoad bool
	// Explicit is whether the configuration file set the tool (true,
	// false or an object): an explicit choice wins over the rule that
	// leaves built-ins out for clients that have their own (Decide).
	Explicit bool
}

// LSPConfig configures the lsp tool.
type LSPConfig struct {
	Switch
	// Servers are the language servers by language name.
	Servers map[string]LanguageServer
	// Timeout bounds one request (default 60s, including the server's
	// start).
	Timeout time.Duration
}

// LanguageServer is how to start the server for one language.
type LanguageServer struct {
	Command    string   `json:"command"`
	Args       []string `json:"args"`
	Extensions []string `json:"extensions"`
	// LanguageID is the LSP language identifier (default: the language
	// name).
	LanguageID string `json:"languageId"`
}

// WebFetchConfig configures web_fetch.
type WebFetchConfig struct {
	Switch
	// Allow and Deny are domains (or IP addresses), matched against a
	// URL's canonical host (web.CanonicalHost).
	Allow, Deny []string
	MaxBytes    int64 // body bytes read at most
	Timeout     time.Duration
	PageChars   int
	CacheTTL    time.Duration
	// CacheBytes bounds the memory of the page cache (default 64 MiB).
	CacheBytes int64
	// AllowPrivate lets web_fetch reach loopback, private, link-local and
	// the other special-purpose addresses, which it refuses by default.
	AllowPrivate bool
}

// WebSearchConfig configures web_search.
type WebSearchConfig struct {
	Switch
	Provider string // "searxng" or "brave"
	URL      string
	Key      string
	// Allow and Block are domains matched against a result URL's
	// canonical host, as web_fetch's lists are.
	Allow      []string
	Block      []string
	Timeout    time.Duration
	MaxResults int
}

// defaultLanguages are the servers used when the configuration names none
// for a language, if their command is installed.
var defaultLanguages = map[string]LanguageServer{
	"go": {Command: "gopls", Args: []string{"serve"}, Extensions: []string{".go"}},
}

// knownExtensions are the file extensions of common languages, used when a
// configured server names none.
var knownExtensions = map[string][]string{
	"go":         {".go"},
	"python":     {".py", ".pyi"},
	"typescript": {".ts", ".tsx", ".js", ".jsx", ".mts", ".cts", ".mjs", ".cjs"},
	"javascript": {".js", ".jsx", ".mjs", ".cjs"},
	"rust":       {".rs"},
	"c":          {".c", ".h"},
	"cpp":        {".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h"},
	"java":       {".java"},
	"ruby":       {".rb"},
	"csharp":     {".cs"},
	"zig":        {".zig"},
	"lua":        {".lua"},
}

// DefaultConfig is the configuration when the file says nothing: the file
// tools (glob, grep, lsp) and the resource tools on, web_fetch and
// web_search off until configured, gopls for Go when it is installed.
func DefaultConfig() Config {
	c := Config{
		Glob:      Switch{Enabled: true, AlwaysLoad: true},
		Grep:      Switch{Enabled: true, AlwaysLoad: true},
		LSP:       LSPConfig{Switch: Switch{Enabled: true}, Servers: map[string]LanguageServer{}, Timeout: 60 * time.Second},
		WebFetch:  WebFetchConfig{MaxBytes: 10 << 20, Timeout: 30 * time.Second, PageChars: 20_000, CacheTTL: 15 * time.Minute, CacheBytes: 64 << 20},
		WebSearch: WebSearchConfig{Timeout: 20 * time.Second, MaxResults: 10},
		Resources: Switch{Enabled: true},
	}
	return c
}

// ParseConfig reads the "builtins" object. raw may be empty (defaults).
// lookup resolves ${VAR}; nil means none is set. lookPath finds commands
// (nil means exec.LookPath); it decides whether default language servers
// are used.
func ParseConfig(raw json.RawMessage, lookup func(string) (string, bool), lookPath func(string) (string, error)) (Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	c := DefaultConfig()
	var top map[string]json.RawMessage
	if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
		if err := json.Unmarshal(raw, &top); err != nil || top == nil {
			return c, errors.New("builtins: want an object")
		}
	}
	var problems []string
	exp := func(field, s string) string {
		out, missing := config.Expand(s, lookup)
		for _, m := range missing {
			problems = append(problems, fmt.Sprintf("builtins.%s: ${%s} is not set", field, m))
		}
		return out
	}
	if r, ok := top["roots"]; ok {
		var roots []string
		if err := json.Unmarshal(r, &roots); err != nil {
			return c, errors.New("builtins.roots: want a list of folders")
		}
		for i, d := range roots {
			c.Roots = append(c.Roots, config.ExpandHome(exp(fmt.Sprintf("roots[%d]", i), d)))
		}
	}
	for _, f := range []struct {
		name string
		sw   *Switch
	}{{"glob", &c.Glob}, {"grep", &c.Grep}, {"resources", &c.Resources}} {
		if _, err := parseSwitch(f.name, top[f.name], f.sw); err != nil {
			return c, err
		}
	}
	// lsp
	if obj, err := parseSwitch("lsp", top["lsp"], &c.LSP.Switch); err != nil {
		return c, err
	} else {
		if d, ok := obj["timeout"]; ok {
			t, err := parseDuration(d)
			if err != nil {
				return c, fmt.Errorf("builtins.lsp.timeout: %w", err)
			}
			if t > 0 {
				c.LSP.Timeout = t
			}
		}
		langs := make([]string, 0, len(obj))
		for k := range obj {
			if k != "enabled" && k != "alwaysLoad" && k != "timeout" {
				langs = append(langs, k)
			}
		}
		sort.Strings(langs)
		disabled := map[string]bool{}
		for _, lang := range langs {
			v := obj[lang]
			var on bool
			if json.Unmarshal(v, &on) == nil {
				if !on {
					disabled[lang] = true
				} else if d, ok := defaultLanguages[lang]; ok {
					c.LSP.Servers[lang] = d
				}
				continue
			}
			var ls LanguageServer
			if err := json.Unmarshal(v, &ls); err != nil {
				return c, fmt.Errorf("builtins.lsp.%s: want {\"command\", \"args\", \"extensions\"} or false", lang)
			}
			if strings.TrimSpace(ls.Command) == "" {
				return c, fmt.Errorf("builtins.lsp.%s.command: a language server needs a command", lang)
			}
			ls.Command = exp("lsp."+lang+".command", ls.Command)
			for i, a := range ls.Args {
				ls.Args[i] = exp(fmt.Sprintf("lsp.%s.args[%d]", lang, i), a)
			}
			if len(ls.Extensions) == 0 {
				ls.Extensions = knownExtensions[lang]
			}
			if len(ls.Extensions) == 0 {
				return c, fmt.Errorf("builtins.lsp.%s.extensions: name the file extensions of %s (e.g. [\".x\"])", lang, lang)
			}
			for i, e := range ls.Extensions {
				if !strings.HasPrefix(e, ".") {
					ls.Extensions[i] = "." + e
				}
			}
			c.LSP.Servers[lang] = ls
		}
		for lang, d := range defaultLanguages {
			if _, set := c.LSP.Servers[lang]; set || disabled[lang] {
				continue
			}
			if _, err := lookPath(d.Command); err == nil {
				c.LSP.Servers[lang] = d
			}
		}
	}
	// web_fetch
	if obj, err := parseSwitch("web_fetch", top["web_fetch"], &c.WebFetch.Switch); err != nil {
		return c, err
	} else {
		w := &c.WebFetch
		if err := decodeFields("web_fetch", obj, map[string]any{"allow": &w.Allow, "deny": &w.Deny, "maxBytes": &w.MaxBytes, "pageChars": &w.PageChars,
			"cacheBytes": &w.CacheBytes, "allowPrivate": &w.AllowPrivate}); err != nil {
			return c, err
		}
		for _, d := range []struct {
			k   string
			dst *time.Duration
		}{{"timeout", &w.Timeout}, {"cacheTTL", &w.CacheTTL}} {
			if r, ok := obj[d.k]; ok {
				t, err := parseDuration(r)
				if err != nil {
					return c, fmt.Errorf("builtins.web_fetch.%s: %w", d.k, err)
				}
				if t > 0 {
					*d.dst = t
				}
			}
		}
		if w.MaxBytes <= 0 || w.PageChars < 500 || w.Timeout <= 0 || w.CacheBytes <= 0 {
			return c, errors.New("builtins.web_fetch: maxBytes, cacheBytes and timeout must be positive and pageChars at least 500")
		}
		if err := checkDomains("web_fetch", map[string][]string{"allow": w.Allow, "deny": w.Deny}); err != nil {
			return c, err
		}
	}
	// web_search: on when it names a provider.
	if r, ok := top["web_search"]; ok {
		c.WebSearch.Enabled = true
		obj, err := parseSwitch("web_search", r, &c.WebSearch.Switch)
		if err != nil {
			return c, err
		}
		w := &c.WebSearch
		if err := decodeFields("web_search", obj, map[string]any{"provider": &w.Provider, "url": &w.URL, "key": &w.Key,
			"allow": &w.Allow, "block": &w.Block, "maxResults": &w.MaxResults}); err != nil {
			return c, err
		}
		if r, ok := obj["timeout"]; ok {
			t, err := parseDuration(r)
			if err != nil {
				return c, fmt.Errorf("builtins.web_search.timeout: %w", err)
			}
			if t > 0 {
				w.Timeout = t
			}
		}
		if err := checkDomains("web_search", map[string][]string{"allow": w.Allow, "block": w.Block}); err != nil {
			return c, err
		}
		w.URL = exp("web_search.url", w.URL)
		w.Key = exp("web_search.key", w.Key)
		w.Provider = strings.ToLower(strings.TrimSpace(w.Provider))
		if w.Enabled {
			switch w.Provider {
			case "searxng":
				if w.URL == "" {
					return c, errors.New("builtins.web_search.url: searxng needs the URL of its instance")
				}
			case "brave":
				if w.Key == "" && len(problems) == 0 {
					return c, errors.New("builtins.web_search.key: brave needs an API key (\"key\": \"${BRAVE_API_KEY}\")")
				}
			case "":
				return c, errors.New("builtins.web_search.provider: name a provider: searxng or brave")
			default:
				return c, fmt.Errorf("builtins.web_search.provider: unknown provider %q (want searxng or brave)", w.Provider)
			}
		}
		if w.MaxResults <= 0 {
			w.MaxResults = 10
		}
	}
	if len(problems) > 0 {
		return c, errors.New(strings.Join(problems, "; "))
	}
	return c, nil
}

// parseSwitch reads true, false, null or an object with optional "enabled"
// and "alwaysLoad"; it returns the object's members.
func parseSwitch(name string, raw json.RawMessage, sw *Switch) (map[string]json.RawMessage, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	sw.Explicit = true
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		sw.Enabled = on
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("builtins.%s: want true, false or an object", name)
	}
	if r, ok := obj["enabled"]; ok {
		if err := json.Unmarshal(r, &sw.Enabled); err != nil {
			return nil, fmt.Errorf("builtins.%s.enabled: want true or false", name)
		}
	} else {
		sw.Enabled = true
	}
	if r, ok := obj["alwaysLoad"]; ok {
		if err := json.Unmarshal(r, &sw.AlwaysLoad); err != nil {
			return nil, fmt.Errorf("builtins.%s.alwaysLoad: want true or false", name)
		}
	}
	return obj, nil
}

// checkDomains reports the first entry of the named domain lists that is
// no valid domain or address.
func checkDomains(tool string, lists map[string][]string) error {
	names := make([]string, 0, len(lists))
	for k := range lists {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for i, d := range lists[k] {
			if _, err := web.CanonicalDomain(d); err != nil {
				return fmt.Errorf("builtins.%s.%s[%d]: %w", tool, k, i, err)
			}
		}
	}
	return nil
}

func decodeFields(name string, obj map[string]json.RawMessage, dst map[string]any) error {
	for k, d := range dst {
		if r, ok := obj[k]; ok {
			if err := json.Unmarshal(r, d); err != nil {
				return fmt.Errorf("builtins.%s.%s: %v", name, k, err)
			}
		}
	}
	return nil
}

// parseDuration reads a builtin's timeout by the config's one rule for
// durations (config.Duration); a builtin's times must also be above 0.
// null is 0 with no error: the caller keeps its default.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	d, err := config.ParseDuration(raw)
	if err != nil {
		return 0, err
	}
	if d == 0 && string(raw) != "null" {
		return 0, fmt.Errorf("%s is no time at all: give a duration above 0, or null for the default", raw)
	}
	return d, nil
}
