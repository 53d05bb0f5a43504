// Package proxy is a Messages API proxy that keeps tool search working
// through Anthropic-compatible endpoints that break it (company gateways,
// routers, other providers speaking the Messages API).
//
// A Proxy serves POST /v1/messages (streaming and not) and passes every
// other route (/v1/messages/count_tokens, /v1/models, ...) through to one
// upstream. Per upstream it runs in one of two modes:
//
//   - Passthrough: the request and response bodies go through byte for
//     byte, the response streamed, never buffered whole (the request body
//     is read whole first, within bounds: see The front door); for an
//     upstream that supports tool search.
//   - Emulate: for an upstream that does not, or may not. The proxy
//     learns, per model, what the upstream takes (see level): a request
//     goes as the client sent it until the upstream answers a 400 that
//     names a feature the request used (a role, block type, field or beta,
//     however worded; see readRefusal); then the same request is sent
//     again at a lower level, before anything reaches the client: once per
//     refused feature, at most three times. A 400 that names nothing the
//     request used is retried one level lower, where that changes the
//     request. A lower level is remembered for the model only once the
//     upstream takes a request sent at it; the last refusal reaches the
//     client unchanged. The
//     levels follow the strategies of package messages. Lowered, inline
//     definitions (tool_definition) are named by reference and declared
//     in tools with defer_loading; then the tools tool_addition blocks
//     enabled go in tools and system-role messages inside messages are
//     folded into user text; then client-side tool search (a search tool answered
//     with tool_reference blocks, tools with defer_loading, as Claude Code
//     sends them) is rewritten into a request the upstream accepts:
//     deferred tools not yet discovered are left out, discovered ones are
//     sent as ordinary tools, references in the history become text,
//     mcp_toolset configs lose defer_loading, and the tool-search betas are
//     removed; the upstream's answer goes back unchanged. Server-side tool search
//     (tool_search_tool_bm25_20251119 / _regex_20251119) is run by the
//     proxy: the upstream gets an ordinary search tool, the proxy answers
//     its calls with toolsearch's engine over the request's deferred tools,
//     continues the conversation upstream, and answers the client with the
//     blocks the API returns (server_tool_use, tool_search_tool_result,
//     then the model's turn), streamed in the API's event order when the
//     client streams (each upstream round is streamed too, and relayed as
//     it arrives). A round the proxy holds is bounded: 32 MiB of it, and of
//     the turn's blocks; past that the client gets an api_error naming the
//     bound.
//
// ModeAuto chooses between them from what the configuration says the
// upstream supports, and logs the choice. Errors keep the API's shape
// ({"type":"error","error":{...}}); an upstream failure reaches the client
// as an error, never as a truncated success. Request headers go upstream
// as they came (credentials included, optionally replaced or moved to the
// header the upstream expects); no header value is ever logged.
//
// # The front door
//
// A proxy that holds an API key (Config.APIKey) lends it to whoever can
// reach it, so every request first passes the guard of package httpguard,
// as toolsearch serve's do, and is refused before anything goes upstream
//
//   - with 403 when it reached a loopback listener with a Host that is not
//     a loopback name nor in Config.AllowedHosts (DNS rebinding), or
//     carries a browser Origin that is not loopback nor in
//     Config.AllowedOrigins;
//   - with 401 when Config.Token is set and the request does not carry it.
//     The token always goes in its own header, TokenHeader, because
//     x-api-key and "Authorization: Bearer" are the client's credentials
//     for the upstream. Only when the proxy holds the key itself, and so
//     forwards none of the client's, is the token accepted in those two
//     headers as well (a client then sets its API key to the token). The
//     token never goes upstream;
//   - with 413 when its body is larger than Config.MaxBodyBytes, and 408
//     when the body does not arrive within Config.BodyTimeout: the body is
//     read whole before the upstream is called, so that a slow client
//     holds no upstream connection;
//   - with 415 when it is a POST to /v1/messages or below
//     (count_tokens, batches) whose Content-Type is not application/json:
//     a page's form or text/plain POST, which a browser sends without
//     asking first, never reaches the upstream. The path is judged however
//     it is spelt (case, percent-encoding, //, ., .., a backslash, path
//     parameters), as an upstream might route it: any path with a
//     "messages" segment is held to JSON.
//
// HTTPServer returns a server that also bounds the request headers, their
// read time and idle connections. It sets no write timeout, so that event
// streams last as long as the upstream's answer.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/internal/httpguard"
)

// TokenHeader is the header that carries Config.Token. It is never
// forwarded upstream.
const TokenHeader = "X-Toolsearch-Token"

// Defaults of the front door's bounds.
const (
	DefaultMaxBodyBytes      = 32 << 20
	DefaultBodyTimeout       = 30 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultMaxRoundBytes is Config.MaxRoundBytes when unset.
	DefaultMaxRoundBytes = 32 << 20
)

// Mode says how the proxy treats tool search for its upstream.
type Mode uint8

// Modes.
const (
	// ModeAuto decides from Config.ToolSearch and the upstream's host.
	ModeAuto Mode = iota
	// ModePassthrough forwards bytes unchanged.
	ModePassthrough
	// ModeEmulate rewrites tool search into what the upstream accepts.
	ModeEmulate
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModePassthrough:
		return "passthrough"
	case ModeEmulate:
		return "emulate"
	}
	return "auto"
}

// ParseMode reads "auto", "passthrough" or "emulate".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ModeAuto, nil
	case "passthrough", "pass":
		return ModePassthrough, nil
	case "emulate":
		return ModeEmulate, nil
	}
	return 0, fmt.Errorf("mode %q: want auto, passthrough or emulate", s)
}

// Support is what the configuration says about an upstream feature.
type Support uint8

// Support values.
const (
	// Unknown leaves the decision to ModeAuto's rules.
	Unknown Support = iota
	// Supported: the upstream takes the feature.
	Supported
	// Unsupported: the upstream refuses or drops it.
	Unsupported
)

// ParseSupport reads "", "unknown", "yes"/"true" or "no"/"false".
func ParseSupport(s string) (Support, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "unknown", "auto":
		return Unknown, nil
	case "yes", "true", "supported":
		return Supported, nil
	case "no", "false", "unsupported":
		return Unsupported, nil
	}
	return 0, fmt.Errorf("%q: want yes, no or unknown", s)
}

// Auth says how client credentials reach the upstream.
type Auth uint8

// Auth styles.
const (
	// AuthAsSent forwards x-api-key and Authorization as the client sent them.
	AuthAsSent Auth = iota
	// AuthBearer sends the key as "Authorization: Bearer <key>" (many
	// gateways and routers).
	AuthBearer
	// AuthXAPIKey sends the key as "x-api-key: <key>" (Anthropic's way).
	AuthXAPIKey
)

// ParseAuth reads "as-sent", "bearer" or "x-api-key".
func ParseAuth(s string) (Auth, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "as-sent":
		return AuthAsSent, nil
	case "bearer", "authorization":
		return AuthBearer, nil
	case "x-api-key", "api-key":
		return AuthXAPIKey, nil
	}
	return 0, fmt.Errorf("auth %q: want as-sent, bearer or x-api-key", s)
}

// Config configures a Proxy.
type Config struct {
	// Upstream is the base URL of the Messages API endpoint, such as
	// "https://gateway.example.com" or "http://127.0.0.1:4000/anthropic";
	// request paths are appended to it.
	Upstream string
	// Mode is passthrough, emulate or auto.
	Mode Mode
	// ToolSearch says whether the upstream supports tool search
	// (defer_loading, tool_reference, the server search tools); ModeAuto
	// passes through when it does, emulates when it does not, and when
	// Unknown passes through only to Anthropic's own API host. When
	// emulating, Unsupported emulates tool search from the first request
	// and Unknown probes (requests go as sent until the upstream refuses).
	ToolSearch Support
	// SystemMessages says whether the upstream takes {"role":"system"}
	// messages inside messages (the mid-conversation-system beta). When
	// emulating, Unsupported folds them into user text from the first
	// request and Unknown probes (folded after the first refusal,
	// remembered per model); in passthrough they are never touched.
	SystemMessages Support
	// APIKey, when set, replaces the client's credentials upstream.
	APIKey string
	// Auth says which header carries the key upstream.
	Auth Auth
	// Token, when set, is what clients must send to use the proxy: in
	// TokenHeader, or, when APIKey is set, also as x-api-key or
	// "Authorization: Bearer". It is a secret: never print it.
	Token string
	// AllowedHosts are the Host values accepted on a loopback listener
	// besides loopback names (a reverse proxy's name), with or without a
	// port.
	AllowedHosts []string
	// AllowedOrigins are the browser origins accepted besides loopback
	// ones: "https://app.example.com", a host name, or "*" for any.
	AllowedOrigins []string
	// MaxBodyBytes bounds every request body; 0 means 32 MiB (the
	// Messages API's own bound).
	MaxBodyBytes int64
	// BodyTimeout bounds reading a request body; 0 means 30 seconds.
	BodyTimeout time.Duration
	// MaxHeaderBytes, ReadHeaderTimeout and IdleTimeout are the bounds of
	// the server HTTPServer returns; 0 means 64 KiB, 10 seconds and 2
	// minutes.
	MaxHeaderBytes    int
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxSearchRounds bounds the upstream calls of one emulated server-side
	// search turn; 0 means 8. When reached, the turn ends with stop_reason
	// "pause_turn", as the API does.
	MaxSearchRounds int
	// MaxResults is how many tools an emulated server-side search loads at
	// most; 0 means 5.
	MaxResults int
	// MaxRoundBytes bounds what the proxy holds of one upstream round of an
	// emulated server-side search (the event data of a streamed round, the
	// body of a whole one) and of the model's blocks over a turn; 0 means
	// 32 MiB, the Messages API's own bound on a request, which the blocks go
	// back upstream in. Past it the client gets an api_error naming the
	// bound.
	MaxRoundBytes int64
	// Transport makes the upstream calls; nil means a clone of
	// http.DefaultTransport with more idle connections per host.
	Transport http.RoundTripper
	// Logger receives one record per request and the mode decision; nil
	// means slog.Default(). Header values are never logged.
	Logger *slog.Logger
}

// Proxy is an http.Handler that forwards the Messages API to one upstream.
// It is safe for concurrent use.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	mode     Mode
	why      string
	levels   *levels
	rp       *httputil.ReverseProxy
	client   *http.Client
	engines  *engineCache
	log      *slog.Logger
	front    http.Handler
}

// New checks cfg, decides the mode and returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("proxy: upstream URL %q: want http(s)://host[:port][/path]", redactURL(u))
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSearchRounds <= 0 {
		cfg.MaxSearchRounds = 8
	}
	if cfg.MaxResults <= 0 {
		cfg.MaxResults = 5
	}
	if cfg.MaxRoundBytes <= 0 {
		cfg.MaxRoundBytes = DefaultMaxRoundBytes
	}
	if cfg.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		t.ForceAttemptHTTP2 = true
		cfg.Transport = t
	}
	p := &Proxy{cfg: cfg, upstream: u, log: cfg.Logger, engines: newEngineCache(0, 0)}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.mode, p.why = decideMode(cfg, u)
	p.levels = newLevels(cfg)
	p.client = &http.Client{Transport: cfg.Transport}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewriteOutgoing,
		Transport:      cfg.Transport,
		FlushInterval:  -1,
		ModifyResponse: p.checkRefusal,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
	p.front = httpguard.New(http.HandlerFunc(p.serveLogged), httpguard.Options{
		Token:          cfg.Token,
		TokenHeaders:   tokenHeaders(cfg),
		AllowedHosts:   cfg.AllowedHosts,
		AllowedOrigins: cfg.AllowedOrigins,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		BodyTimeout:    cfg.BodyTimeout,
		Logger:         p.log,
		Names: httpguard.Names{Server: "proxy", AllowedHosts: "--allowed-host", AllowedOrigins: "--allowed-origin",
			MaxBodyBytes: "--max-body-bytes"},
		WriteError: func(w http.ResponseWriter, status int, msg string) { writeError(w, status, errorType(status), msg) },
	})
	start, startWhy := p.levels.get("")
	p.log.Info("proxy: mode chosen", "upstream", redactURL(u), "mode", p.mode.String(), "why", p.why,
		"emulate_search", start.emulate, "fold_system_messages", start.fold, "level_why", startWhy)
	return p, nil
}

// tokenHeaders are the headers that may carry the proxy's token: its own
// header, and the client's credential headers only when the proxy holds
// the upstream key and so forwards none of the client's.
func tokenHeaders(cfg Config) []string {
	if cfg.APIKey != "" {
		return []string{TokenHeader, "Authorization", "X-Api-Key"}
	}
	return []string{TokenHeader}
}

// HTTPServer returns an HTTP server for the proxy with the configured
// bounds: header size, header read time and idle time. It sets no read or
// write timeout (the guard bounds the body's read; an event stream lasts
// as long as the upstream's answer).
func (p *Proxy) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           p,
		MaxHeaderBytes:    p.cfg.MaxHeaderBytes,
		ReadHeaderTimeout: p.cfg.ReadHeaderTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
}

// Mode returns the mode in force (never ModeAuto) and why it was chosen.
func (p *Proxy) Mode() (Mode, string) { return p.mode, p.why }

// decideMode resolves ModeAuto.
func decideMode(cfg Config, u *url.URL) (Mode, string) {
	switch cfg.Mode {
	case ModePassthrough:
		return ModePassthrough, "configured"
	case ModeEmulate:
		return ModeEmulate, "configured"
	}
	switch cfg.ToolSearch {
	case Supported:
		return ModePassthrough, "auto: the upstream is configured as supporting tool search"
	case Unsupported:
		return ModeEmulate, "auto: the upstream is configured as not supporting tool search"
	}
	if h := strings.ToLower(u.Hostname()); h == "api.anthropic.com" {
		return ModePassthrough, "auto: the upstream is Anthropic's API, which supports tool search"
	}
	return ModeEmulate, "auto: the upstream is not Anthropic's API and is not configured as supporting tool search"
}

// redactURL drops userinfo from a URL for logs and errors.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// ctxKey keys the per-request rewrite state in a request's context.
type ctxKey struct{}

// outgoing is what rewriteOutgoing changes in one forwarded request, and,
// in emulate mode, what a retry at a lower level needs.
type outgoing struct {
	dropBetas []string
	// in is the client's request, body its body and req the body parsed;
	// nil outside emulate mode.
	in    *http.Request
	route string
	body  []byte
	req   *request
	// level is the level the request was sent at; retries counts the
	// tries before this one (each at a strictly lower level).
	level   level
	retries int
	// sent is the body sent upstream, which a refusal is read against.
	sent []byte
	// pending is set on a retry after a refusal: the level is remembered
	// if the upstream takes it.
	pending *pendingLevel
}

// rewriteOutgoing points a forwarded request at the upstream and applies
// the credential and beta rules.
func (p *Proxy) rewriteOutgoing(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	// SetURL joins the paths; keep the client's query as it was.
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	if o, ok := pr.In.Context().Value(ctxKey{}).(*outgoing); ok {
		p.applyHeaders(pr.Out.Header, o.dropBetas)
	} else {
		p.applyHeaders(pr.Out.Header, nil)
	}
}

// applyHeaders applies the credential rules and removes betas. The
// proxy's own token header never goes upstream.
func (p *Proxy) applyHeaders(h http.Header, dropBetas []string) {
	h.Del(TokenHeader)
	if len(dropBetas) > 0 {
		if vals := h.Values("anthropic-beta"); len(vals) > 0 {
			if kept := filterBetas(vals, dropBetas); kept != "" {
				h.Set("anthropic-beta", kept)
			} else {
				h.Del("anthropic-beta")
			}
		}
	}
	key := p.cfg.APIKey
	if key == "" && p.cfg.Auth != AuthAsSent {
		key = h.Get("x-api-key")
		if key == "" {
			if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
				key = a[7:]
			}
		}
	}
	if key == "" {
		return
	}
	switch {
	case p.cfg.Auth == AuthBearer:
		h.Del("x-api-key")
		h.Set("Authorization", "Bearer "+key)
	case p.cfg.Auth == AuthXAPIKey:
		h.Del("Authorization")
		h.Set("x-api-key", key)
	case h.Get("Authorization") != "" && h.Get("x-api-key") == "":
		h.Set("Authorization", "Bearer "+key)
	default:
		h.Del("Authorization")
		h.Set("x-api-key", key)
	}
}

// upstreamError answers a request whose upstream call failed before a
// response began.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var refused *refusedError
	if errors.As(err, &refused) {
		o := refused.o
		how := p.serveEmulated(w, o.in, o.route, o.body, o.req, o.retries+1, &refused.next, refused.pending)
		p.log.Info("proxy: request retried", "model", o.req.model, "retry", o.retries+1, "how", how)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		p.log.Debug("proxy: client went away", "path", r.URL.Path)
		return
	}
	p.log.Warn("proxy: upstream call failed", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusBadGateway, "api_error", "the proxy could not reach the upstream: "+errText(err))
}

// errText is an error's text without URLs' userinfo (net/url errors quote
// the URL).
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return ue.Op + " " + redactURL(u) + ": " + ue.Err.Error()
		}
		return ue.Err.Error()
	}
	return err.Error()
}

// writeError writes an error in the API's shape.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, msg))
}

// errorBody is the API's error object.
func errorBody(typ, msg string) []byte {
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// statusWriter records the status of a response for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ServeHTTP serves one request: the front door first, then the route.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.front.ServeHTTP(w, r)
}

// serveLogged serves a request the front door let in, and logs it.
func (p *Proxy) serveLogged(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	how := p.serve(sw, r)
	p.log.Info("proxy: request", "method", r.Method, "path", r.URL.Path, "how", how,
		"status", sw.status, "ms", float64(time.Since(start).Microseconds())/1000)
}

// serve routes a request and returns how it was handled, for the log.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) string {
	if msg := checkContentType(r); msg != "" {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", msg)
		return "refused"
	}
	route := strings.TrimSuffix(r.URL.Path, "/")
	rewritable := r.Method == http.MethodPost && (route == "/v1/messages" || route == "/v1/messages/count_tokens")
	if p.mode == ModePassthrough || !rewritable {
		p.rp.ServeHTTP(w, r)
		return "passthrough"
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body is larger than %d bytes", p.cfg.MaxBodyBytes))
			return "refused"
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "reading the request body: "+err.Error())
		return "refused"
	}
	req, err := parseRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return "refused"
	}
	return p.serveEmulated(w, r, route, body, req, 0, nil, nil)
}

// serveEmulated sends a request at the level learnt for its model (see
// levels): as sent, with inline definitions named by reference, with
// system messages folded, or with tool search emulated. A refusal that
// names a feature the request carried sends the request again at a lower
// level (through upstreamError): at most three times, each time strictly
// lower. A retry names its level (at), and pending what it remembers if
// the upstream takes it.
func (p *Proxy) serveEmulated(w http.ResponseWriter, r *http.Request, route string, body []byte, req *request, retries int, at *level, pending *pendingLevel) string {
	lv, _ := p.levels.get(req.model)
	if at != nil {
		lv.noInline = lv.noInline || at.noInline
		lv.fold = lv.fold || at.fold
		lv.emulate = lv.emulate || at.emulate
	}
	o := &outgoing{in: r, route: route, body: body, req: req, level: lv, retries: retries, pending: pending}
	if lv.emulate {
		o.dropBetas = append(o.dropBetas, toolSearchBetas...)
	}
	switch {
	case lv.fold:
		o.dropBetas = append(o.dropBetas, foldBetas...)
	case lv.noInline:
		o.dropBetas = append(o.dropBetas, inlineBetas...)
	}
	suffix := ""
	if retries > 0 {
		suffix = " (retried)"
	}
	switch {
	case lv.fold:
		// Folded system messages keep their text only: their tool changes
		// go into tools first.
		if n := req.applyToolChanges(); n > 0 {
			p.log.Debug("proxy: tool changes of system messages applied to tools", "tools", n)
		}
	case lv.noInline:
		if n, ok := req.inlineByReference(); ok {
			p.log.Debug("proxy: inline definitions named by reference", "appended_to_tools", n)
		}
	}
	// asSent is the request as the level leaves it before any emulation:
	// the client's bytes unless a rewrite above (now or on an earlier try)
	// changed it.
	asSent := func() []byte {
		if req.edited {
			return req.top.Marshal()
		}
		return body
	}
	switch {
	case !lv.emulate && !lv.fold && req.edited:
		p.forwardWith(w, r, asSent(), o)
		return "emulate: inline tools by reference" + suffix
	case !lv.emulate && !lv.fold:
		p.forwardWith(w, r, body, o)
		return "emulate: as sent" + suffix
	case !lv.emulate:
		out, n := req.withSystemFolded()
		p.log.Debug("proxy: system messages folded", "folded", n)
		p.forwardWith(w, r, out, o)
		return "emulate: system messages folded" + suffix
	case !req.needsEmulation(lv.fold):
		p.forwardWith(w, r, asSent(), o)
		return "emulate: nothing to rewrite" + suffix
	}
	if req.search >= 0 {
		if route == "/v1/messages/count_tokens" {
			out, err := p.serverSideCountBody(r.Context(), req, lv.fold)
			if err != nil {
				writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
				return "refused"
			}
			p.forwardWith(w, r, out, o)
			return "emulate: server-side search (count)" + suffix
		}
		p.serveServerSearch(w, r, req, lv.fold, o.dropBetas)
		return "emulate: server-side search" + suffix
	}
	out, st := req.rewriteClientSide(lv.fold)
	p.log.Debug("proxy: client-side search rewritten", "dropped", st.Dropped, "undeferred", st.Undeferred,
		"references", st.References, "system_folded", st.SystemFolded, "mcp_toolsets", st.Toolsets)
	p.forwardWith(w, r, out, o)
	return "emulate: client-side search" + suffix
}

// forwardWith sends a request upstream with a new body, with the
// per-request state o, and streams the answer back unchanged.
func (p *Proxy) forwardWith(w http.ResponseWriter, r *http.Request, body []byte, o *outgoing) {
	o.sent = body
	ctx := context.WithValue(r.Context(), ctxKey{}, o)
	r2 := r.Clone(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.Header.Del("Content-Length")
	r2.Header.Del("Transfer-Encoding")
	r2.TransferEncoding = nil
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	p.rp.ServeHTTP(w, r2)
}

// checkContentType refuses a POST to the Messages endpoints that is not
// JSON. A browser sends a text/plain, form or multipart POST to any site
// without asking first (no CORS preflight); a JSON one it does not. The
// path is judged as an upstream might route it (messagesPath), not as it
// is spelt.
func checkContentType(r *http.Request) string {
	if !strings.EqualFold(r.Method, http.MethodPost) || !messagesPath(r.URL) {
		return ""
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return ""
	}
	if ct == "" {
		return "the request has no Content-Type: send the body as JSON with \"Content-Type: application/json\""
	}
	return fmt.Sprintf("Content-Type %q is not accepted here: send the body as JSON with \"Content-Type: application/json\"", clipText(ct, 100))
}

// maxUnescapes bounds how many times messagesPath percent-decodes a path.
const maxUnescapes = 4

// messagesPath reports whether a request path may reach the Messages API
// (/v1/messages and below) at an upstream, whatever its spelling: the path
// as sent is percent-decoded until it no longer changes (an upstream may
// decode %252f twice), backslashes are read as slashes, it is cleaned (//,
// ., ..) and case-folded, and a segment counts as "messages" with its path
// parameters (;x=1) and trailing dots and spaces removed. Any such segment
// counts, wherever it is, so that a prefix the upstream routes
// (/anthropic/v1/messages) is held to JSON too.
func messagesPath(u *url.URL) bool {
	p := u.EscapedPath()
	for range maxUnescapes {
		d, err := url.PathUnescape(p)
		if err != nil || d == p {
			break
		}
		p = d
	}
	p = strings.ToLower(path.Clean("/" + strings.ReplaceAll(p, `\`, "/")))
	for _, seg := range strings.Split(p, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if strings.TrimRight(seg, ". \t") == "messages" {
			return true
		}
	}
	return false
}

// clipText bounds text from a request before it is echoed.
func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// apiErrorFrom returns an upstream error body as the API's error shape:
// unchanged when it already is one, else wrapped.
func apiErrorFrom(status int, body []byte) []byte {
	var e struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Type == "error" && len(e.Error) > 0 {
		return body
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return errorBody(errorType(status), fmt.Sprintf("upstream answered %d: %s", status, msg))
}

// errorType is the API's error type for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestTimeout:
		return "timeout_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}
