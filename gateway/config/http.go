package config

// How toolsearch serve listens over HTTP and how it stops, and which values
// of a configuration are secrets.
//
// The settings, under the "toolsearch" key:
//
//	"http": {
//	  "authToken": "${TOOLSEARCH_AUTH_TOKEN}",  // bearer token clients must send
//	  "allowedOrigins": ["https://app.example.com"], // besides loopback origins
//	  "allowedHosts": ["mcp.example.com"],      // Host names besides loopback ones
//	  "maxBodyBytes": 4194304,                  // 413 above this
//	  "maxHeaderBytes": 65536,                  // 431 above this
//	  "readHeaderTimeout": "10s", "idleTimeout": "2m",
//	  "rateLimit": {"perSecond": 100, "burst": 200},       // all clients together
//	  "sessionRateLimit": {"perSecond": 20, "burst": 40},  // per MCP session
//	  "maxSessions": 256,                       // open MCP sessions at once; 503 above
//	  "sessionInitTimeout": "10s",              // initialize to notifications/initialized
//	  "sessionIdleTimeout": "30m",              // a session with no request this long is closed
//	  "exposures": ["search", "dynamic"]        // the /mcp/<exposure> endpoints served
//	},
//	"shutdownTimeout": "10s"                    // how long calls in flight may finish
//
// Sessions: every MCP session counts against maxSessions from its
// initialize request until it ends, and a new one beyond the cap is
// refused with 503 and Retry-After. A session whose client has not sent
// notifications/initialized within sessionInitTimeout is closed, and so is
// one that has had no request in progress for sessionIdleTimeout (an event
// stream the client keeps open does not count as one).
//
// Exposures: /mcp serves the configured exposure; /mcp/auto, /mcp/full,
// /mcp/search and /mcp/dynamic serve the exposures listed in "exposures"
// and answer 404 for the others. Without the list, an endpoint is served
// when it shows no more tool definitions than the configured exposure
// could: search serves only search; dynamic serves dynamic and search;
// auto, which switches between full and dynamic, serves all four, and so
// does full.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of the serve settings.
const (
	DefaultMaxBodyBytes      = 4 << 20
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
	// DefaultMaxSessions bounds the MCP sessions open over HTTP at once.
	DefaultMaxSessions = 256
	// DefaultSessionInitTimeout bounds the time from a session's
	// initialize request to its notifications/initialized.
	DefaultSessionInitTimeout = 10 * time.Second
	// DefaultSessionIdleTimeout closes a session with no request in
	// progress for this long.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// MinAuthTokenLength is the shortest bearer token serve accepts.
	MinAuthTokenLength = 16
)

// Serve holds how toolsearch serve listens over streamable HTTP and how it
// stops. The HTTP settings apply only with --http (or "listen"); the
// shutdown bound applies to stdio too.
type Serve struct {
	// AuthToken is the bearer token HTTP clients must send ("" when none
	// is configured). It is a secret: never print it.
	AuthToken string
	// AuthTokenProblem is why the configured token could not be read (an
	// unset ${VAR}); serve reports it when it needs the token.
	AuthTokenProblem error
	// AllowedOrigins are the browser origins accepted besides loopback
	// ones: "https://app.example.com", a bare host name, or "*" for any.
	AllowedOrigins []string
	// AllowedHosts are the Host header values accepted on a loopback
	// listener besides loopback names (a reverse proxy's public name).
	AllowedHosts []string
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds reading a request's headers; IdleTimeout
	// closes keep-alive connections idle this long. There is no write
	// timeout: event streams live as long as their session.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// RateLimit bounds the requests of all clients together,
	// SessionRateLimit those of one MCP session; zero rates are off.
	RateLimit        Rate
	SessionRateLimit Rate
	// MaxSessions bounds the MCP sessions open over HTTP at once, from
	// their initialize request on.
	MaxSessions int
	// SessionInitTimeout closes a session whose client has not sent
	// notifications/initialized this long after initialize;
	// SessionIdleTimeout one with no request in progress for this long.
	SessionInitTimeout time.Duration
	SessionIdleTimeout time.Duration
	// Exposures are the exposures served at /mcp/<exposure>; nil means
	// those the configured exposure allows (ServedExposures).
	Exposures []string
	// ShutdownTimeout is how long calls in flight may take to finish once
	// serve is told to stop.
	ShutdownTimeout time.Duration

	// varSecrets are values of ${VAR} references in server entries that
	// look like secrets.
	varSecrets []string
}

// Rate is a token bucket: PerSecond requests on average, Burst at once.
type Rate struct {
	PerSecond float64
	Burst     int
}

// On reports whether the rate limits anything.
func (r Rate) On() bool { return r.PerSecond > 0 }

// DefaultServe returns the default serve settings: no token, loopback
// origins only, bounded bodies and headers, rate limits off.
func DefaultServe() Serve {
	return Serve{MaxBodyBytes: DefaultMaxBodyBytes, MaxHeaderBytes: DefaultMaxHeaderBytes,
		ReadHeaderTimeout: DefaultReadHeaderTimeout, IdleTimeout: DefaultIdleTimeout, ShutdownTimeout: DefaultShutdownTimeout,
		MaxSessions: DefaultMaxSessions, SessionInitTimeout: DefaultSessionInitTimeout, SessionIdleTimeout: DefaultSessionIdleTimeout}
}

// ServedExposures returns the exposures served at /mcp/<exposure> under
// the configured exposure: the listed ones (Exposures) when there is a
// list, else those showing no more tool definitions than the configured
// one could (search: search; dynamic: dynamic and search; auto and full:
// all four). The configured exposure itself is always served.
func (s Serve) ServedExposures(configured string) []string {
	out := s.Exposures
	if out == nil {
		switch configured {
		case ExposureSearch:
			out = []string{ExposureSearch}
		case ExposureDynamic:
			out = []string{ExposureDynamic, ExposureSearch}
		default:
			out = []string{ExposureAuto, ExposureFull, ExposureDynamic, ExposureSearch}
		}
	}
	if configured != "" && !slices.Contains(out, configured) {
		out = append([]string{configured}, out...)
	}
	return out
}

// CheckAuthToken reports whether token is usable as a bearer token.
func CheckAuthToken(token string) error {
	if token != strings.TrimSpace(token) || strings.ContainsAny(token, " \t\r\n") {
		return errors.New("the auth token must not contain spaces")
	}
	if len(token) < MinAuthTokenLength {
		return fmt.Errorf("the auth token has %d characters; use at least %d (for example: openssl rand -hex 32)", len(token), MinAuthTokenLength)
	}
	return nil
}

// rawServe is the JSON shape of the serve settings.
type rawServe struct {
	HTTP *struct {
		AuthToken          *string         `json:"authToken"`
		AllowedOrigins     []string        `json:"allowedOrigins"`
		AllowedHosts       []string        `json:"allowedHosts"`
		MaxBodyBytes       *int64          `json:"maxBodyBytes"`
		MaxHeaderBytes     *int            `json:"maxHeaderBytes"`
		ReadHeaderTimeout  json.RawMessage `json:"readHeaderTimeout"`
		IdleTimeout        json.RawMessage `json:"idleTimeout"`
		RateLimit          *rawRate        `json:"rateLimit"`
		SessionRateLimit   *rawRate        `json:"sessionRateLimit"`
		MaxSessions        *int            `json:"maxSessions"`
		SessionInitTimeout json.RawMessage `json:"sessionInitTimeout"`
		SessionIdleTimeout json.RawMessage `json:"sessionIdleTimeout"`
		Exposures          []string        `json:"exposures"`
	} `json:"http"`
	ShutdownTimeout json.RawMessage `json:"shutdownTimeout"`
}

type rawRate struct {
	PerSecond float64 `json:"perSecond"`
	Burst     int     `json:"burst"`
}

// parseServe reads the serve settings from the top-level object of a file
// and collects the secret-looking ${VAR} values of its server entries.
func parseServe(cfg *Config, top map[string]json.RawMessage, lookup func(string) (string, bool)) *Error {
	s := &cfg.Gateway.Serve
	s.varSecrets = varSecrets(top, lookup)
	raw, ok := top["toolsearch"]
	if !ok || string(raw) == "null" {
		return nil
	}
	errAt := func(field string, err error) *Error { return &Error{Field: "toolsearch." + field, Err: err} }
	var rs rawServe
	if err := json.Unmarshal(raw, &rs); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errAt(te.Field, fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value))
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	d, err := ParseDuration(rs.ShutdownTimeout)
	if err != nil {
		return errAt("shutdownTimeout", err)
	}
	if d > 0 {
		s.ShutdownTimeout = d
	}
	h := rs.HTTP
	if h == nil {
		return nil
	}
	if h.AuthToken != nil {
		tok, missing := Expand(*h.AuthToken, lookup)
		switch {
		case len(missing) > 0:
			s.AuthTokenProblem = errAt("http.authToken", fmt.Errorf("${%s} is not set", missing[0]))
		case tok != "":
			if err := CheckAuthToken(tok); err != nil {
				return errAt("http.authToken", err)
			}
			s.AuthToken = tok
		}
	}
	for _, o := range h.AllowedOrigins {
		if strings.TrimSpace(o) == "" {
			return errAt("http.allowedOrigins", errors.New("empty origin"))
		}
	}
	for _, o := range h.AllowedHosts {
		if strings.TrimSpace(o) == "" {
			return errAt("http.allowedHosts", errors.New("empty host"))
		}
	}
	s.AllowedOrigins, s.AllowedHosts = h.AllowedOrigins, h.AllowedHosts
	if h.MaxBodyBytes != nil {
		if *h.MaxBodyBytes < 1024 {
			return errAt("http.maxBodyBytes", fmt.Errorf("%d is below 1024", *h.MaxBodyBytes))
		}
		s.MaxBodyBytes = *h.MaxBodyBytes
	}
	if h.MaxHeaderBytes != nil {
		if *h.MaxHeaderBytes < 1024 {
			return errAt("http.maxHeaderBytes", fmt.Errorf("%d is below 1024", *h.MaxHeaderBytes))
		}
		s.MaxHeaderBytes = *h.MaxHeaderBytes
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Duration
	}{{"http.readHeaderTimeout", h.ReadHeaderTimeout, &s.ReadHeaderTimeout}, {"http.idleTimeout", h.IdleTimeout, &s.IdleTimeout},
		{"http.sessionInitTimeout", h.SessionInitTimeout, &s.SessionInitTimeout}, {"http.sessionIdleTimeout", h.SessionIdleTimeout, &s.SessionIdleTimeout}} {
		d, err := ParseDuration(f.raw)
		if err != nil {
			return errAt(f.name, err)
		}
		if d > 0 {
			*f.dst = d
		}
	}
	if h.MaxSessions != nil {
		if *h.MaxSessions < 1 {
			return errAt("http.maxSessions", fmt.Errorf("%d is below 1", *h.MaxSessions))
		}
		s.MaxSessions = *h.MaxSessions
	}
	if h.Exposures != nil {
		s.Exposures = []string{}
		for _, e := range h.Exposures {
			x, err := ParseExposure(e)
			if err != nil {
				return errAt("http.exposures", err)
			}
			if !slices.Contains(s.Exposures, x) {
				s.Exposures = append(s.Exposures, x)
			}
		}
	}
	for _, r := range []struct {
		name string
		raw  *rawRate
		dst  *Rate
	}{{"http.rateLimit", h.RateLimit, &s.RateLimit}, {"http.sessionRateLimit", h.SessionRateLimit, &s.SessionRateLimit}} {
		if r.raw == nil {
			continue
		}
		if r.raw.PerSecond < 0 || r.raw.Burst < 0 {
			return errAt(r.name, errors.New("perSecond and burst must not be negative"))
		}
		if r.raw.PerSecond > 0 && r.raw.Burst == 0 {
			r.raw.Burst = max(1, int(r.raw.PerSecond))
		}
		*r.dst = Rate{PerSecond: r.raw.PerSecond, Burst: r.raw.Burst}
	}
	return nil
}

// varSecrets returns the values of the ${VAR} references in the server
// entries (command, args, env, cwd, url, headers) and in the built-in
// tools' settings that look like secrets, and the literal values of
// built-in settings whose names do (a web search "key").
func varSecrets(top map[string]json.RawMessage, lookup func(string) (string, bool)) []string {
	raw, ok := top["mcpServers"]
	if !ok {
		raw = top["servers"]
	}
	var out []string
	var walk func(name string, v any)
	walk = func(name string, v any) {
		switch v := v.(type) {
		case string:
			refs := varRefs(v)
			for _, ref := range refs {
				if val, ok := lookup(ref); ok && secretValue(ref, val) {
					out = append(out, val)
				}
			}
			if len(refs) == 0 && name != "" && secretName(name) && len(strings.TrimSpace(v)) >= 4 {
				out = append(out, v)
			}
		case []any:
			for _, e := range v {
				walk("", e)
			}
		case map[string]any:
			for k, e := range v {
				walk(k, e)
			}
		}
	}
	var servers map[string]any
	if json.Unmarshal(raw, &servers) == nil {
		for _, s := range servers {
			walk("", s) // literal env and header values: Config.Secrets
		}
	}
	var gw struct {
		Builtins any `json:"builtins"`
	}
	if json.Unmarshal(top["toolsearch"], &gw) == nil {
		walk("", gw.Builtins)
	}
	return out
}

// varRefs returns the names in the ${VAR}, ${VAR:-default} and ${env:VAR}
// references of s.
func varRefs(s string) []string {
	var names []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return names
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return names
		}
		name, _, _ := strings.Cut(s[i+2:i+j], ":-")
		name = strings.TrimPrefix(name, "env:")
		if validVarName(name) {
			names = append(names, name)
		}
		s = s[i+j+1:]
	}
}

// Secrets returns the values of the configuration that must never be shown
// in logs, errors, status output or metrics: the auth token; the password
// of the cluster's Redis URL (or $TOOLSEARCH_REDIS_PASSWORD); every header
// value of a remote server (and the credential after "Bearer " or
// "Basic "); the password and query values of a server URL, and path
// segments that look like keys; the env values of a stdio server, except
// those that are plainly not secret (a path, a number, a short flag) under
// a name that does not look secret; and the values of ${VAR} references
// that look secret by the same rule. Values shorter than 4 characters are
// left out: they cannot be told apart from ordinary text.
func (c *Config) Secrets() []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < 4 || seen[v] {
			return
		}
		seen[v] = true
		out = append(out, v)
	}
	add(c.Gateway.Serve.AuthToken)
	add(c.Gateway.Cluster.Password)
	add(c.Gateway.Cluster.Key)
	add(c.Gateway.Enrich.APIKey)
	for _, v := range urlSecrets(c.Gateway.Cluster.Redis) {
		add(v)
	}
	for _, v := range c.Gateway.Serve.varSecrets {
		add(v)
	}
	for _, v := range c.Gateway.Tracing.secrets() {
		add(v)
	}
	for _, s := range c.Servers {
		for _, k := range sortedKeys(s.Env) {
			if secretValue(k, s.Env[k]) {
				add(s.Env[k])
			}
		}
		for _, k := range sortedKeys(s.Headers) {
			v := s.Headers[k]
			add(v)
			if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && scheme != "" {
				add(cred)
			}
		}
		if s.URL != "" {
			for _, v := range urlSecrets(s.URL) {
				add(v)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return out
}

// urlSecrets returns the password, the query values and the key-like path
// segments of a URL.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p, url.QueryEscape(p))
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if looksLikeKey(seg) {
			out = append(out, seg)
		}
	}
	return out
}

// secretNameParts are the parts of a variable or env name that mark its
// value as a secret, whatever it looks like.
var secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "APIKEY", "AUTH",
	"CREDENTIAL", "CREDENTIALS", "CRED", "PAT", "PRIVATE", "COOKIE", "SESSION", "SIGNATURE", "BEARER", "JWT", "DSN"}

// secretValue reports whether the value of the env entry or variable name
// must be treated as a secret: always under a secret-looking name (API_KEY,
// GITHUB_TOKEN, DB_PASSWORD), otherwise unless it is plainly not one (a
// path, a number, a boolean, shorter than 8 characters).
func secretValue(name, value string) bool {
	v := strings.TrimSpace(value)
	if len(v) < 4 {
		return false
	}
	if secretName(name) {
		return true
	}
	if len(v) < 8 {
		return false
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		(len(v) > 2 && v[1] == ':' && (v[2] == '\\' || v[2] == '/')) {
		return false
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseBool(v); err == nil {
		return false
	}
	return true
}

// secretName reports whether a variable, env or setting name marks its
// value as a secret: one of its parts (split at '_', '-', '.' and at
// lower-to-upper case changes) is TOKEN, KEY, SECRET, PASSWORD...
func secretName(name string) bool {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' && name[i-1] >= 'a' && name[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	for _, part := range strings.FieldsFunc(strings.ToUpper(b.String()), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, s := range secretNameParts {
			if part == s || (len(s) >= 5 && strings.HasSuffix(part, s)) || (s == "KEY" && strings.HasSuffix(part, "KEY")) {
				return true
			}
		}
	}
	return false
}

// looksLikeKey reports whether a URL path segment looks like an embedded
// key: at least 20 characters of letters, digits, '-' and '_', with both
// letters and digits.
func looksLikeKey(s string) bool {
	if len(s) < 20 {
		return false
	}
	letters, digits := false, false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		case r >= '0' && r <= '9':
			digits = true
		case r == '-' || r == '_':
		default:
			return false
		}
	}
	return letters && digits
}
