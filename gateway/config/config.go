// Package config reads the gateway's configuration: the mcpServers JSON that
// MCP clients already use (Claude Desktop, Claude Code's .mcp.json, Cursor,
// VS Code), plus the gateway's own settings under a "toolsearch" key in the
// same file.
//
// The format, as read here:
//
//	{
//	  "mcpServers": {                        // VS Code's "servers" is read too
//	    "github": {
//	      "command": "npx", "args": ["-y", "@acme/github-mcp"],
//	      "env": {"TOKEN": "${GITHUB_TOKEN}"}, "cwd": "/tmp",
//	      "envPassthrough": ["AWS_PROFILE", "AWS_REGION"], // see below
//	      "disabled": false,
//	      "alwaysLoad": false,                // never defer this server's tools
//	      "keywords": ["gh", "git"],          // extra search words
//	      "allow": ["*issue*"], "deny": ["delete_*"], "ask": ["merge_*"],
//	      "prompts": {"deny": ["admin_*"]},   // prompt names
//	      "resources": {"allow": ["docs://*"]}, // resource URIs
//	      "lazy": true,                       // start at the first call
//	      "startTimeout": "20s",
//	      "naming": "auto",                   // auto, bare or prefixed (below)
//	      "protocolVersion": "latest"         // or pin one, such as "2025-11-25"
//	    },
//	    "docs": {"type": "http", "url": "https://example.com/mcp",
//	             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
//	    "old":  {"type": "sse", "url": "http://127.0.0.1:9000/sse"}
//	  },
//	  "toolsearch": {
//	    "exposure": "auto",                   // auto, full, search or dynamic
//	    "threshold": 10,                      // percent of contextWindow (or "10%")
//	    "contextWindow": 200000,
//	    "listen": "127.0.0.1:7777",           // serve streamable HTTP here
//	    "stateDir": "~/.cache/toolsearch",    // cached manifests
//	    "lazy": false,                        // lazy start for every stdio server
//	    "limits": {"maxResults": 5, "resultTokens": 6000, "startTimeout": "30s",
//	               "callTimeout": "5m", "maxRestarts": 5, "restartCooldown": "5m",
//	               "firstListWait": "5s"},    // full: first tools/list waits for servers
//	    "clients": {"claude-code": "full"},   // auto's exposure per client name (below)
//	    "policy": {"allow": [], "deny": ["*/delete_*"], "ask": ["github/merge_*"],
//	               "prompts": {"deny": []}, "resources": {"deny": ["*/file:///etc/*"]}},
//	    "http": {"maxSessions": 256, "sessionInitTimeout": "10s", // HTTP serving:
//	             "sessionIdleTimeout": "30m", "exposures": ["search"]}, // gateway/config/http.go
//	    "hints": "~/hints.jsonl",             // search hints, over stateDir's hints.jsonl
//	    "enrich": {"enabled": false,          // write hints in the background (below;
//	               "provider": "sampling",    // gateway/config/enrich.go): sampling, anthropic or openai
//	               "model": "", "baseURL": "", "apiKeyEnv": "ANTHROPIC_API_KEY",
//	               "batch": 10, "concurrency": 1, "maxToolsPerRun": 500,
//	               "dailyBudget": {"tools": 2000, "tokens": 1000000}},
//	    "cluster": {"redis": "rediss://redis:6380/0", // replicas share state (gateway/config/cluster.go)
//	                "prefix": "toolsearch", "replica": "", "ttl": "24h"},
//	    "learning": {"enabled": false,        // rank by the tools called after searches
//	                 "halfLife": "168h", "maxEntries": 10000}, // gateway/config/learning.go
//	    "tracing": {"endpoint": "http://127.0.0.1:4318", // OpenTelemetry traces (gateway/config/tracing.go)
//	                "headers": {}, "sampleRatio": 1, "serviceName": "toolsearch"}
//	  }
//	}
//
// Search hints (package hints; docs/enrich.md) are phrasings written for
// each tool ahead of time, which the index searches. The gateway reads the
// state directory's hints.jsonl when it exists, then the file "hints"
// names, whose entries win. With enrich enabled (it is off by default) the
// gateway asks a model for the hints of the tools that have none, once the
// servers have started and again after their tools change, and writes them
// to the state directory's hints.jsonl: provider "sampling" asks the
// connected client that offers MCP sampling; "anthropic" and "openai" ask
// the API (the key from the variable apiKeyEnv names, $ANTHROPIC_API_KEY or
// $OPENAI_API_KEY by default; baseURL for an OpenAI-compatible server such
// as Ollama), within a daily budget of tools and tokens. Only visible tools
// are sent: their name, description and input schema.
//
// Exposure auto decides per client when it connects: a client that defers
// MCP tools behind its own tool search (Claude Code, known by the
// clientInfo name it sends, since it declares no capability that says so)
// gets full, with the _meta hints; any other gets full while every
// definition fits under the threshold, and dynamic past it. "clients" maps
// a client name to the exposure auto gives it instead (full, search,
// dynamic, or auto for the threshold alone). The first tools/list of a
// session in full exposure waits up to limits.firstListWait for servers
// that are still starting and have no cached tools ("0" lists at once).
//
// Policy globs (package policy): a server's own allow, deny and ask match
// its bare tool names literally ("drop__table" is the tool drop__table);
// the global ones match server/tool, where server__tool and
// mcp__server__tool read as server/tool. Prompts and resources have allow
// and deny globs of their own, over prompt names and resource URIs; the
// prompts and resources of a server whose every tool is denied are denied
// too unless an allow glob names them.
//
// A server's naming says what its tools and prompts are called in the
// gateway's lists: "prefixed" is server__tool; "bare" is the tool's own
// name; "auto" (the default) is bare when the server is the only enabled
// one, prefixed otherwise. A bare name that another exposed name already
// uses falls back to server__tool, and the gateway logs it.
//
// A server's protocolVersion is the MCP version the gateway asks it for:
// "latest" (the default) tries 2026-07-28 and falls back, per server, to the
// initialize handshake of 2025-11-25 when the server does not offer it; a
// version pins the server to it (a server written against 2025-11-25 that
// still sends sampling or elicitation requests of its own, which 2026-07-28
// forbids, works pinned to "2025-11-25").
//
// A stdio server does not inherit the gateway's environment, which holds
// every server's secrets: it gets PATH, HOME, USER, LOGNAME, SHELL, TERM,
// TZ, LANG, LANGUAGE and LC_*, TMPDIR (TMP, TEMP), the XDG_* directories,
// NODE_EXTRA_CA_CERTS, SSL_CERT_FILE and SSL_CERT_DIR, and on Windows what
// programs need there (SystemRoot, ComSpec, PATHEXT, USERPROFILE, APPDATA,
// ...); then the variables envPassthrough names (a name, a prefix ending
// in "*" such as "AWS_*", or "*" for the whole environment: an explicit
// choice); then its own env, which wins. A proxy setting (HTTPS_PROXY,
// NO_PROXY) is passed only when envPassthrough names it.
//
// Strings in command, args, env, cwd, url and headers expand ${VAR},
// ${VAR:-default} and VS Code's ${env:VAR} from the environment. Durations are
// Go duration strings ("30s") or numbers of seconds. A key nothing reads is an
// error naming its line, its column and the nearest known key (keys.go), except
// the keys other MCP clients read in a server entry (autoApprove, timeout,
// envFile...), which are accepted and unused, and a client's own settings at
// the top level. Every error names the file, the server and the field.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/internal/safefile"

	"github.com/tailscale/hujson"
)

// Transport kinds of an upstream server.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// Exposure modes: what the gateway's clients see.
const (
	ExposureAuto    = "auto"
	ExposureFull    = "full"
	ExposureSearch  = "search"
	ExposureDynamic = "dynamic"
)

// Naming of a server's tools and prompts in the gateway's lists.
const (
	// NamingAuto is bare when the server is the only enabled one, and
	// prefixed otherwise.
	NamingAuto = "auto"
	// NamingBare keeps the names the server gives.
	NamingBare = "bare"
	// NamingPrefixed names each tool server__tool.
	NamingPrefixed = "prefixed"
)

// Defaults of the gateway settings.
const (
	DefaultThresholdPercent = 10
	DefaultContextWindow    = 200_000
	DefaultMaxResults       = 5
	DefaultResultTokens     = 6_000
	DefaultStartTimeout     = 30 * time.Second
	DefaultCallTimeout      = 5 * time.Minute
	DefaultMaxRestarts      = 5
	DefaultRestartCooldown  = 5 * time.Minute
	// DefaultFirstListWait bounds how long the first tools/list of a
	// session in full exposure waits for servers still starting.
	DefaultFirstListWait = 5 * time.Second
)

// Config is one configuration file, read and checked.
type Config struct {
	// Path is the file the configuration came from ("" when built in code).
	Path string
	// Servers are the upstream servers in key order, disabled ones included.
	Servers []*Server
	// ServersKey is the key the servers were read from: "mcpServers", or
	// VS Code's "servers". It is "" when the file has neither (or null),
	// which serve refuses: such a file configures nothing to serve.
	ServersKey string
	// Gateway holds the gateway's own settings, defaults filled in.
	Gateway Gateway
}

// Server is one entry of mcpServers.
type Server struct {
	// Key is the entry's name; it prefixes the server's tools.
	Key string
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport string
	// Command, Args, Env and Cwd start a stdio server (expanded).
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// EnvPassthrough names the variables of the gateway's environment a
	// stdio server gets besides the basic ones (PATH, HOME, locale...):
	// names, prefixes ending in "*", or "*" for the whole environment.
	EnvPassthrough []string
	// URL and Headers reach a remote server (expanded).
	URL     string
	Headers map[string]string
	// Disabled servers are not started.
	Disabled bool
	// AlwaysLoad marks every tool of the server as never deferred.
	AlwaysLoad bool
	// Keywords are extra search words for every tool of the server.
	Keywords []string
	// Allow, Deny and Ask are this server's policy globs over its bare
	// tool names.
	Allow, Deny, Ask []string
	// Prompts, Resources and Skills are this server's policy globs over
	// its prompt names, resource URIs and skill paths.
	Prompts, Resources, Skills Globs
	// Lazy starts a stdio server only at its first call (its cached
	// manifest answers until then).
	Lazy bool
	// StartTimeout bounds connecting and the first listing; zero means the
	// gateway's limit.
	StartTimeout time.Duration
	// Naming is NamingAuto, NamingBare or NamingPrefixed: what the
	// server's tools and prompts are called in the gateway's lists.
	Naming string
	// ProtocolVersion is the MCP version the gateway asks the server for:
	// empty for the newest the gateway speaks (2026-07-28, falling back to
	// the initialize handshake for servers that do not offer it), or one of
	// ProtocolVersions to pin the server to it.
	ProtocolVersion string
	// Problem, when not nil, is why the server cannot start even though the
	// file is well-formed (an unset ${VAR}); the gateway shows the server as
	// failed with this error, and the other servers are unaffected.
	Problem error
}

// Gateway holds the settings under the "toolsearch" key.
type Gateway struct {
	// Exposure is one of the Exposure constants.
	Exposure string
	// ThresholdPercent is auto's switch point, in percent of ContextWindow.
	ThresholdPercent float64
	// ContextWindow is the model's window in tokens.
	ContextWindow int
	// Listen is the HTTP address, empty for stdio.
	Listen string
	// StateDir keeps cached manifests; empty disables the cache.
	StateDir string
	// Lazy makes every stdio server lazy.
	Lazy bool
	// Limits bound searches, starts and calls.
	Limits Limits
	// Policy holds the global policy globs.
	Policy Rules
	// Builtins is the raw "builtins" object: the gateway's built-in tools,
	// read by package builtin (nil when absent: the defaults).
	Builtins json.RawMessage
	// Serve holds how serve listens over HTTP and how it stops
	// (gateway/config/http.go).
	Serve Serve
	// Hints is a hints file applied over the state directory's
	// hints.jsonl ("" for none).
	Hints string
	// Enrich says whether and how the gateway writes hints in the
	// background.
	Enrich Enrich
	// Clients maps a client's name (the clientInfo.name it sends when it
	// connects) to the exposure auto gives it: full, search, dynamic, or
	// auto for the token threshold alone. It overrides the gateway's own
	// rule for clients that defer MCP tools themselves.
	Clients map[string]string
	// Cluster is the state replicas share through Redis
	// (gateway/config/cluster.go); its zero value is a gateway on its own.
	Cluster Cluster
	// Dashboard configures the live dashboard at /ui
	// (gateway/config/dashboard.go).
	Dashboard Dashboard
	// Learning is ranking that learns from use (gateway/config/learning.go);
	// its zero value is off.
	Learning Learning
	// Tracing configures OpenTelemetry traces (gateway/config/tracing.go);
	// its zero value is off.
	Tracing Tracing
}

// Limits bound what the gateway does.
type Limits struct {
	MaxResults   int
	ResultTokens int
	StartTimeout time.Duration
	CallTimeout  time.Duration
	MaxRestarts  int
	// RestartCooldown is how long a server that used up its restarts rests
	// before the gateway tries it again (doubling at each further give-up,
	// up to an hour).
	RestartCooldown time.Duration
	// FirstListWait bounds how long the first tools/list of a session in
	// full exposure waits for servers that are still starting and have no
	// cached tools; zero lists at once.
	FirstListWait time.Duration
}

// Rules are allow, deny and ask globs over tools, and allow and deny globs
// over prompts and resources.
type Rules struct {
	Allow, Deny, Ask           []string
	Prompts, Resources, Skills Globs
}

// Globs are allow and deny globs over prompts or resources.
type Globs struct {
	Allow, Deny []string
}

// Rules returns the server's own policy globs.
func (s *Server) Rules() Rules {
	return Rules{Allow: s.Allow, Deny: s.Deny, Ask: s.Ask, Prompts: s.Prompts, Resources: s.Resources, Skills: s.Skills}
}

// patternError is an empty pattern, with the list it is in.
type patternError struct{ field string }

func (e *patternError) Error() string { return "empty pattern" }

// checkPatterns refuses empty patterns, naming the list.
func checkPatterns(r Rules) *patternError {
	for _, l := range []struct {
		field string
		pats  []string
	}{{"allow", r.Allow}, {"deny", r.Deny}, {"ask", r.Ask}, {"prompts.allow", r.Prompts.Allow}, {"prompts.deny", r.Prompts.Deny},
		{"resources.allow", r.Resources.Allow}, {"resources.deny", r.Resources.Deny},
		{"skills.allow", r.Skills.Allow}, {"skills.deny", r.Skills.Deny}} {
		for _, p := range l.pats {
			if strings.TrimSpace(p) == "" {
				return &patternError{field: l.field}
			}
		}
	}
	return nil
}

// Threshold returns the token count above which auto exposure picks dynamic.
func (g Gateway) Threshold() int {
	return int(g.ThresholdPercent / 100 * float64(g.ContextWindow))
}

// Error is a configuration error. It names the file, the server (when the
// error is about one) and the field.
type Error struct {
	File   string
	Server string
	Field  string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Default returns a configuration with no servers and default settings.
func Default() *Config {
	return &Config{Gateway: Gateway{
		Exposure:         ExposureAuto,
		ThresholdPercent: DefaultThresholdPercent,
		ContextWindow:    DefaultContextWindow,
		Limits: Limits{MaxResults: DefaultMaxResults, ResultTokens: DefaultResultTokens,
			StartTimeout: DefaultStartTimeout, CallTimeout: DefaultCallTimeout, MaxRestarts: DefaultMaxRestarts,
			RestartCooldown: DefaultRestartCooldown, FirstListWait: DefaultFirstListWait},
		Serve:     DefaultServe(),
		Dashboard: DefaultDashboard(),
		Learning:  DefaultLearning(),
	}}
}

// maxFileBytes bounds what Load reads.
const maxFileBytes = 16 << 20

// Load reads and checks the configuration file at path, expanding variables
// from the process environment.
func Load(path string) (*Config, error) {
	data, err := safefile.ReadFile(path, maxFileBytes)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse reads a configuration from data; path only names the file in
// errors. lookup resolves ${VAR} (nil means no variables are set).
func Parse(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	errAt := func(server, field string, err error) error {
		return &Error{File: path, Server: server, Field: field, Err: err}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// Comments and trailing commas are allowed (JSON with comments, as
	// VS Code's and toolsearch init's files have them); a syntax error
	// names its line and column.
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return nil, errAt("", "", fmt.Errorf("not valid JSON: %w", err))
	}
	// A key nothing reads is a typo until shown otherwise (keys.go).
	if ke := checkKeys(data); ke != nil {
		ke.File = path
		return nil, ke
	}
	data = std
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, errAt("", "", fmt.Errorf("not a JSON object: %w", err))
	}
	if top == nil {
		return nil, errAt("", "", errors.New("not a JSON object"))
	}
	cfg := Default()
	cfg.Path = path
	serversKey := "mcpServers"
	rawServers, ok := top[serversKey]
	if !ok {
		if rs, ok2 := top["servers"]; ok2 {
			serversKey, rawServers = "servers", rs
		}
	}
	if len(rawServers) > 0 && string(rawServers) != "null" {
		cfg.ServersKey = serversKey
		var m map[string]json.RawMessage
		if err := json.Unmarshal(rawServers, &m); err != nil {
			return nil, errAt("", serversKey, errors.New("want an object keyed by server name"))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			srv, err := parseServer(k, m[k], lookup)
			if err != nil {
				var ce *Error
				if errors.As(err, &ce) {
					ce.File = path
					return nil, ce
				}
				return nil, errAt(k, "", err)
			}
			cfg.Servers = append(cfg.Servers, srv)
		}
	}
	if raw, ok := top["toolsearch"]; ok && string(raw) != "null" {
		if err := parseGateway(&cfg.Gateway, raw); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.File = path
				return nil, ce
			}
			return nil, errAt("", "toolsearch", err)
		}
	}
	if err := parseServe(cfg, top, lookup); err != nil {
		err.File = path
		return nil, err
	}
	if err := parseCluster(cfg, top, lookup); err != nil {
		err.File = path
		return nil, err
	}
	if err := parseDashboard(cfg, top); err != nil {
		err.File = path
		return nil, err
	}
	if err := parseEnrich(cfg, top, lookup); err != nil {
		err.File = path
		return nil, err
	}
	if err := parseTracing(cfg, top, lookup); err != nil {
		err.File = path
		return nil, err
	}
	return cfg, nil
}

// rawServer is the JSON shape of one server entry.
type rawServer struct {
	Type         string            `json:"type"`
	Command      string            `json:"command"`
	Args         []string          `json:"args"`
	Env          map[string]string `json:"env"`
	EnvPass      []string          `json:"envPassthrough"`
	Cwd          string            `json:"cwd"`
	URL          string            `json:"url"`
	ServerURL    string            `json:"serverUrl"` // Windsurf
	Headers      map[string]string `json:"headers"`
	Disabled     bool              `json:"disabled"`
	AlwaysLoad   bool              `json:"alwaysLoad"`
	Keywords     []string          `json:"keywords"`
	Allow        []string          `json:"allow"`
	Deny         []string          `json:"deny"`
	Ask          []string          `json:"ask"`
	Prompts      *rawGlobs         `json:"prompts"`
	Resources    *rawGlobs         `json:"resources"`
	Skills       *rawGlobs         `json:"skills"`
	Lazy         bool              `json:"lazy"`
	StartTimeout json.RawMessage   `json:"startTimeout"`
	Naming       string            `json:"naming"`
	Protocol     string            `json:"protocolVersion"`
}

// ProtocolVersions are the MCP versions a server may be pinned to with
// "protocolVersion", newest first.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// rawGlobs is the JSON shape of a prompts or resources policy.
type rawGlobs struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

func (r *rawGlobs) globs() Globs {
	if r == nil {
		return Globs{}
	}
	return Globs{Allow: r.Allow, Deny: r.Deny}
}

// ReservedKey is the server key of the gateway's built-in tools
// (builtin.Key): no configured server may take it, or its tools and the
// built-in ones would replace each other.
const ReservedKey = "builtin"

func parseServer(key string, raw json.RawMessage, lookup func(string) (string, bool)) (*Server, error) {
	errAt := func(field string, err error) error { return &Error{Server: key, Field: field, Err: err} }
	if err := catalog.ValidKey(key); err != nil {
		return nil, errAt("", fmt.Errorf("invalid server name: %w", err))
	}
	if key == ReservedKey {
		return nil, errAt("", fmt.Errorf("invalid server name: %q is the gateway's own, for its built-in tools", key))
	}
	var rs rawServer
	if err := json.Unmarshal(raw, &rs); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, errAt(te.Field, fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value))
		}
		return nil, errAt("", fmt.Errorf("want an object: %w", err))
	}
	srv := &Server{Key: key, Disabled: rs.Disabled, AlwaysLoad: rs.AlwaysLoad, Keywords: rs.Keywords,
		Allow: rs.Allow, Deny: rs.Deny, Ask: rs.Ask, Prompts: rs.Prompts.globs(), Resources: rs.Resources.globs(), Skills: rs.Skills.globs(), Lazy: rs.Lazy}
	if rs.URL == "" {
		rs.URL = rs.ServerURL
	}
	switch strings.ToLower(rs.Type) {
	case "", "local":
		switch {
		case rs.Command != "":
			srv.Transport = TransportStdio
		case rs.URL != "":
			srv.Transport = TransportHTTP
		default:
			return nil, errAt("command", errors.New(`a server needs "command" (stdio) or "url" (http, sse)`))
		}
	case "stdio":
		srv.Transport = TransportStdio
	case "http", "streamable-http", "streamablehttp", "streamable_http", "remote":
		srv.Transport = TransportHTTP
	case "sse":
		srv.Transport = TransportSSE
	default:
		return nil, errAt("type", fmt.Errorf("unknown type %q (want stdio, http or sse)", rs.Type))
	}
	d, err := ParseDuration(rs.StartTimeout)
	if err != nil {
		return nil, errAt("startTimeout", err)
	}
	srv.StartTimeout = d
	switch n := strings.ToLower(strings.TrimSpace(rs.Naming)); n {
	case "", NamingAuto:
		srv.Naming = NamingAuto
	case NamingBare, NamingPrefixed:
		srv.Naming = n
	default:
		return nil, errAt("naming", fmt.Errorf("unknown naming %q (want auto, bare or prefixed)", rs.Naming))
	}
	switch v := strings.TrimSpace(rs.Protocol); {
	case v == "" || strings.EqualFold(v, "latest"):
	case slices.Contains(ProtocolVersions, v):
		srv.ProtocolVersion = v
	default:
		return nil, errAt("protocolVersion", fmt.Errorf("unknown protocol version %q (want latest or one of %s)", rs.Protocol, strings.Join(ProtocolVersions, ", ")))
	}
	if err := checkPatterns(srv.Rules()); err != nil {
		return nil, errAt(err.field, err)
	}
	// Expansion: an unset variable leaves the server unusable, not the file.
	var problems []string
	exp := func(field, s string) string {
		out, missing := Expand(s, lookup)
		for _, m := range missing {
			problems = append(problems, fmt.Sprintf("%s: ${%s} is not set", field, m))
		}
		return out
	}
	switch srv.Transport {
	case TransportStdio:
		if rs.Command == "" {
			return nil, errAt("command", errors.New("a stdio server needs a command"))
		}
		srv.Command = exp("command", rs.Command)
		for i, a := range rs.Args {
			srv.Args = append(srv.Args, exp(fmt.Sprintf("args[%d]", i), a))
		}
		if len(rs.Env) > 0 {
			srv.Env = make(map[string]string, len(rs.Env))
			for _, k := range sortedKeys(rs.Env) {
				srv.Env[k] = exp("env."+k, rs.Env[k])
			}
		}
		srv.Cwd = exp("cwd", rs.Cwd)
		for _, p := range rs.EnvPass {
			if name := strings.TrimSuffix(p, "*"); (name != "" || p != "*") && !validVarName(name) {
				return nil, errAt("envPassthrough", fmt.Errorf("%q is not a variable name, a prefix ending in * or *", p))
			}
		}
		srv.EnvPassthrough = rs.EnvPass
	default:
		if rs.URL == "" {
			return nil, errAt("url", fmt.Errorf("a %s server needs a url", srv.Transport))
		}
		srv.URL = exp("url", rs.URL)
		if len(rs.Headers) > 0 {
			srv.Headers = make(map[string]string, len(rs.Headers))
			for _, k := range sortedKeys(rs.Headers) {
				srv.Headers[k] = exp("headers."+k, rs.Headers[k])
			}
		}
		if !strings.HasPrefix(srv.URL, "http://") && !strings.HasPrefix(srv.URL, "https://") && len(problems) == 0 {
			return nil, errAt("url", fmt.Errorf("%q is not an http or https URL", rs.URL)) // as written: no expanded secrets
		}
	}
	if len(problems) > 0 {
		srv.Problem = &Error{Server: key, Field: strings.SplitN(problems[0], ":", 2)[0],
			Err: errors.New(strings.Join(problems, "; "))}
	}
	return srv, nil
}

// MaxContextWindow bounds contextWindow (a billion tokens), so that
// Threshold cannot overflow.
const MaxContextWindow = 1_000_000_000

// rawGateway is the JSON shape of the "toolsearch" object.
type rawGateway struct {
	Exposure      string          `json:"exposure"`
	Threshold     json.RawMessage `json:"threshold"`
	ContextWindow *int            `json:"contextWindow"`
	Listen        string          `json:"listen"`
	StateDir      string          `json:"stateDir"`
	Lazy          bool            `json:"lazy"`
	Limits        *struct {
		MaxResults   *int            `json:"maxResults"`
		ResultTokens *int            `json:"resultTokens"`
		StartTimeout json.RawMessage `json:"startTimeout"`
		CallTimeout  json.RawMessage `json:"callTimeout"`
		MaxRestarts  *int            `json:"maxRestarts"`
		// RestartCooldown is a duration like the timeouts.
		RestartCooldown json.RawMessage `json:"restartCooldown"`
		// FirstListWait is a duration like the timeouts; 0 turns the
		// wait off.
		FirstListWait json.RawMessage `json:"firstListWait"`
	} `json:"limits"`
	Policy *struct {
		Allow     []string  `json:"allow"`
		Deny      []string  `json:"deny"`
		Ask       []string  `json:"ask"`
		Prompts   *rawGlobs `json:"prompts"`
		Resources *rawGlobs `json:"resources"`
		Skills    *rawGlobs `json:"skills"`
	} `json:"policy"`
	Builtins json.RawMessage   `json:"builtins"` // read by package builtin
	Hints    string            `json:"hints"`
	Clients  map[string]string `json:"clients"`
}

func parseGateway(g *Gateway, raw json.RawMessage) error {
	if err := parseLearning(g, raw); err != nil { // learning.go
		return err
	}
	errAt := func(field string, err error) error { return &Error{Field: "toolsearch." + field, Err: err} }
	var rg rawGateway
	if err := json.Unmarshal(raw, &rg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errAt(te.Field, fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value))
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	if rg.Exposure != "" {
		e, err := ParseExposure(rg.Exposure)
		if err != nil {
			return errAt("exposure", err)
		}
		g.Exposure = e
	}
	if len(rg.Threshold) > 0 && string(rg.Threshold) != "null" {
		p, err := parseThreshold(rg.Threshold)
		if err != nil {
			return errAt("threshold", err)
		}
		g.ThresholdPercent = p
	}
	if rg.ContextWindow != nil {
		if *rg.ContextWindow < 1000 {
			return errAt("contextWindow", fmt.Errorf("%d tokens is too small", *rg.ContextWindow))
		}
		if *rg.ContextWindow > MaxContextWindow {
			// Threshold's arithmetic would overflow.
			return errAt("contextWindow", fmt.Errorf("%d tokens is too large (at most %d)", *rg.ContextWindow, MaxContextWindow))
		}
		g.ContextWindow = *rg.ContextWindow
	}
	g.Listen = rg.Listen
	if rg.StateDir != "" {
		g.StateDir = ExpandHome(rg.StateDir)
	}
	g.Lazy = rg.Lazy
	g.Builtins = rg.Builtins // built-in tools: checked by package builtin
	if l := rg.Limits; l != nil {
		if l.MaxResults != nil {
			if *l.MaxResults < 1 || *l.MaxResults > 50 {
				return errAt("limits.maxResults", fmt.Errorf("%d is out of range 1..50", *l.MaxResults))
			}
			g.Limits.MaxResults = *l.MaxResults
		}
		if l.ResultTokens != nil {
			if *l.ResultTokens < 100 {
				return errAt("limits.resultTokens", fmt.Errorf("%d is below 100", *l.ResultTokens))
			}
			g.Limits.ResultTokens = *l.ResultTokens
		}
		if l.MaxRestarts != nil {
			if *l.MaxRestarts < 0 {
				return errAt("limits.maxRestarts", fmt.Errorf("%d is negative", *l.MaxRestarts))
			}
			g.Limits.MaxRestarts = *l.MaxRestarts
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			dst  *time.Duration
		}{{"limits.startTimeout", l.StartTimeout, &g.Limits.StartTimeout}, {"limits.callTimeout", l.CallTimeout, &g.Limits.CallTimeout},
			{"limits.restartCooldown", l.RestartCooldown, &g.Limits.RestartCooldown}} {
			d, err := ParseDuration(f.raw)
			if err != nil {
				return errAt(f.name, err)
			}
			if d > 0 {
				*f.dst = d
			}
		}
		if len(l.FirstListWait) > 0 && string(l.FirstListWait) != "null" {
			d, err := ParseDuration(l.FirstListWait)
			if err != nil {
				return errAt("limits.firstListWait", err)
			}
			if d > time.Minute {
				return errAt("limits.firstListWait", fmt.Errorf("%v is longer than a minute", d))
			}
			g.Limits.FirstListWait = d
		}
	}
	if rg.Clients != nil {
		g.Clients = map[string]string{}
		for name, e := range rg.Clients {
			if strings.TrimSpace(name) == "" {
				return errAt("clients", errors.New("a client name is empty"))
			}
			x, err := ParseExposure(e)
			if err != nil {
				return errAt("clients."+name, err)
			}
			g.Clients[name] = x
		}
	}
	if rg.Hints != "" {
		g.Hints = ExpandHome(rg.Hints)
	}
	if p := rg.Policy; p != nil {
		g.Policy = Rules{Allow: p.Allow, Deny: p.Deny, Ask: p.Ask, Prompts: p.Prompts.globs(), Resources: p.Resources.globs(), Skills: p.Skills.globs()}
		if err := checkPatterns(g.Policy); err != nil {
			return errAt("policy."+err.field, err)
		}
	}
	return nil
}

// ParseExposure reads an exposure mode name.
func ParseExposure(s string) (string, error) {
	switch e := strings.ToLower(strings.TrimSpace(s)); e {
	case ExposureAuto, ExposureFull, ExposureSearch, ExposureDynamic:
		return e, nil
	}
	return "", fmt.Errorf("unknown exposure %q (want auto, full, search or dynamic)", s)
}

// ParseThreshold reads a threshold given on the command line: "10", "10%"
// or "auto:10".
func ParseThreshold(s string) (float64, error) {
	return parseThreshold(json.RawMessage(strconv.Quote(s)))
}

func parseThreshold(raw json.RawMessage) (float64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, errors.New("want a percentage such as 10 or \"10%\"")
		}
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(s), "%"), "auto:"))
		f, err = strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a percentage", s)
		}
	}
	if !(f > 0 && f <= 100) { // NaN too
		return 0, fmt.Errorf("%v%% is out of range (0, 100]", f)
	}
	return f, nil
}

// Expand replaces ${VAR}, ${VAR:-default} and ${env:VAR} in s from lookup.
// It returns the names of variables that were unset and had no default; they
// expand to "". Text that is not a well-formed reference (a lone "$", "${"
// without "}", "${input:x}") is left as it is.
func Expand(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		name = strings.TrimPrefix(name, "env:")
		if !validVarName(name) {
			b.WriteString(s[i : i+j+1])
		} else if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
		}
		s = s[i+j+1:]
	}
	return b.String(), missing
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// ExpandHome replaces a leading "~/" with the user's home directory.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// DefaultPaths lists, in order, where serve looks for a configuration file
// when none is given: ./toolsearch.json, then the user's config directory.
func DefaultPaths() []string {
	paths := []string{"toolsearch.json"}
	if d, err := os.UserConfigDir(); err == nil {
		paths = append(paths, filepath.Join(d, "toolsearch", "config.json"))
	}
	return paths
}

// DefaultStateDir is where cached manifests go when the file names none.
func DefaultStateDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "toolsearch")
	}
	return ""
}

// Enabled returns the servers that are not disabled.
func (c *Config) Enabled() []*Server {
	var out []*Server
	for _, s := range c.Servers {
		if !s.Disabled {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
