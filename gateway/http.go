package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/config"
	"github.com/toolsearch/toolsearch/httpguard"
)

// ServeStdio serves one client over stdin and stdout in the given exposure
// mode until the client disconnects or ctx ends.
func (g *Gateway) ServeStdio(ctx context.Context, mode string) error {
	return g.Serve(ctx, mode, &mcp.StdioTransport{})
}

// Serve serves one client over the given transport in the given exposure
// mode until the client disconnects or ctx ends.
func (g *Gateway) Serve(ctx context.Context, mode string, t mcp.Transport) error {
	s := g.newSession(mode)
	g.log.Info("serving", "exposure", s.mode, "why", s.reason)
	return s.server.Run(ctx, t)
}

// Connect connects one client over the given transport and returns at once
// (tests and in-process use).
func (g *Gateway) Connect(ctx context.Context, mode string, t mcp.Transport) (*mcp.ServerSession, error) {
	return g.newSession(mode).server.Connect(ctx, t, nil)
}

type sessionKey struct{}

// Handler returns the HTTP handler of the gateway: streamable HTTP MCP at
// /mcp (the configured exposure) and at /mcp/auto, /mcp/full, /mcp/search
// and /mcp/dynamic, plus /healthz and /metrics.
//
// Every request first passes the guard of package httpguard, set from the
// configuration's serve settings: Host and Origin checks (DNS rebinding),
// the bearer token when one is configured (every path but /healthz, which
// without the token answers only whether the gateway is up), rate limits,
// and the body bound. While the gateway drains (Drain), a request that
// would open a new MCP session is answered 503.
func (g *Gateway) Handler(defaultMode string) http.Handler {
	mux := http.NewServeMux()
	if defaultMode == "" {
		defaultMode = g.cfg.Gateway.Exposure
	}
	sv := g.cfg.Gateway.Serve
	paths := map[string]string{
		"/mcp": defaultMode, "/mcp/auto": config.ExposureAuto, "/mcp/full": config.ExposureFull,
		"/mcp/search": config.ExposureSearch, "/mcp/dynamic": config.ExposureDynamic,
	}
	// versions answers the SDK's per-request protocol-version check for
	// requests of existing sessions; it serves nothing.
	versions := mcp.NewServer(&mcp.Implementation{Name: "toolsearch"}, &mcp.ServerOptions{SupportedProtocolVersions: downstreamVersions})
	for path, mode := range paths {
		h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
			if s, ok := r.Context().Value(sessionKey{}).(*session); ok {
				return s.server
			}
			return versions
		}, &mcp.StreamableHTTPOptions{Logger: g.log, SessionTimeout: 30 * time.Minute,
			// The guard checks Host (with the allowed hosts) and bounds
			// bodies before the SDK sees the request.
			DisableLocalhostProtection: true, MaxRequestBodyBytes: sv.MaxBodyBytes})
		mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				if g.Draining() {
					w.Header().Set("Retry-After", "5")
					http.Error(w, shuttingDown, http.StatusServiceUnavailable)
					return
				}
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, g.newSession(mode)))
			}
			h.ServeHTTP(w, r)
		}))
	}
	mux.HandleFunc("/healthz", g.serveHealth)
	mux.HandleFunc("/metrics", g.serveMetrics)
	return httpguard.New(g.countPosts(mux), httpguard.Options{
		Token: sv.AuthToken, OpenPaths: []string{"/healthz"},
		AllowedOrigins: sv.AllowedOrigins, AllowedHosts: sv.AllowedHosts,
		MaxBodyBytes: sv.MaxBodyBytes,
		Global:       httpguard.Rate{PerSecond: sv.RateLimit.PerSecond, Burst: sv.RateLimit.Burst},
		PerSession:   httpguard.Rate{PerSecond: sv.SessionRateLimit.PerSecond, Burst: sv.SessionRateLimit.Burst},
		Logger:       g.log,
	})
}

// HTTPServer returns an HTTP server for Handler with the configured bounds:
// header size, header read timeout and idle timeout. It sets no write
// timeout: an event stream lives as long as its session.
func (g *Gateway) HTTPServer(defaultMode string) *http.Server {
	sv := g.cfg.Gateway.Serve
	return &http.Server{
		Handler:           g.Handler(defaultMode),
		MaxHeaderBytes:    sv.MaxHeaderBytes,
		ReadHeaderTimeout: sv.ReadHeaderTimeout,
		IdleTimeout:       sv.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
}

type healthServer struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	Tools  int    `json:"tools"`
	Error  string `json:"error,omitempty"`
	Cached bool   `json:"from_cache,omitempty"`
	// RetryAt is when a server that used up its restarts is tried again.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Oversized counts the messages over the size limit the server sent;
	// LastOversize says what the last one was and what was done.
	Oversized      int        `json:"oversized_messages,omitempty"`
	LastOversize   string     `json:"last_oversized,omitempty"`
	LastOversizeAt *time.Time `json:"last_oversized_at,omitempty"`
}

// serveHealth answers /healthz: the gateway's state, its servers and their
// errors (secrets redacted). Without the token, when one is configured, it
// says only whether the gateway is up. While draining it answers 503 with
// status "shutting_down".
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if g.Draining() {
		status, code = "shutting_down", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !httpguard.Authorized(r) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(struct {
			Status string `json:"status"`
		}{status})
		return
	}
	mode, reason := g.Exposure()
	out := struct {
		Status   string         `json:"status"`
		Uptime   string         `json:"uptime"`
		Tools    int            `json:"tools"`
		Auto     string         `json:"auto_exposure"`
		Why      string         `json:"auto_reason"`
		Demo     bool           `json:"demo,omitempty"`
		Sessions int            `json:"sessions"`
		Servers  []healthServer `json:"servers"`
		InFlight int            `json:"calls_in_flight"`
	}{Status: status, Uptime: time.Since(g.started).Round(time.Second).String(), Auto: mode, Why: reason, Demo: g.demo,
		Servers: []healthServer{}}
	snap := g.Snapshot()
	for _, t := range snap.Tools() {
		if g.Visible(t) {
			out.Tools++
		}
	}
	out.Sessions = len(g.sessionList())
	for _, st := range g.Statuses() {
		hs := healthServer{Name: st.Key, State: st.State, Tools: st.Tools, Error: g.Redact(st.Error), Cached: st.FromCache}
		if !st.RetryAt.IsZero() {
			hs.RetryAt = &st.RetryAt
		}
		if st.Oversized > 0 {
			hs.Oversized, hs.LastOversize, hs.LastOversizeAt = st.Oversized, st.LastOversize, &st.LastOversizeAt
		}
		out.Servers = append(out.Servers, hs)
	}
	out.InFlight = g.InFlight()
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
