package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/httpguard"
)

// ServeStdio serves one client over stdin and stdout in the given exposure
// mode until the client disconnects or ctx ends. A message whose id the
// MCP library would answer with another id is refused (ids.go).
func (g *Gateway) ServeStdio(ctx context.Context, mode string) error {
	return g.Serve(ctx, mode, stdioTransport(os.Stdin, os.Stdout))
}

// stdioTransport is the transport of a stdio client on in and out, with
// ids checked (ids.go).
func stdioTransport(in io.ReadCloser, out io.Writer) mcp.Transport {
	s := &idCheckedStdio{w: out}
	pr, pw := io.Pipe()
	go s.filter(in, pw)
	return &mcp.IOTransport{Reader: &stdinReader{pr, in}, Writer: nopWriteCloser{s}}
}

// stdinReader reads the checked input; closing it closes the input too,
// as the library's stdio transport does.
type stdinReader struct {
	*io.PipeReader
	in io.Closer
}

func (r *stdinReader) Close() error {
	_ = r.PipeReader.Close()
	return r.in.Close()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
// and /mcp/dynamic, plus /healthz and /metrics. Of the /mcp/<exposure>
// endpoints, those the configuration does not serve
// (config.Serve.ServedExposures) answer 404, saying which are served.
//
// Each endpoint serves both protocol eras: sessions of MCP 2025-11-25 and
// earlier (initialize, then requests with Mcp-Session-Id), and requests of
// MCP 2026-07-28 (no session; the version in Mcp-Protocol-Version and in
// each request's _meta), which the MCP library's stateless handler serves
// from one server per exposure, never dynamic (era.go, era_http.go).
//
// Every request first passes the guard of package httpguard, set from the
// configuration's serve settings: Host and Origin checks (DNS rebinding),
// the bearer token when one is configured (every path but /healthz, which
// without the token answers only whether the gateway is up), rate limits,
// and the body bound. While the gateway drains (Drain), a request that
// would open a new MCP session is answered 503.
//
// With a cluster that keeps sessions (sessionshare.go), the gateway serves
// 2025-11-25 sessions itself, saving each in the cluster, so that any
// replica takes over a session whose replica died.
//
// Sessions are bounded (httpsessions.go): at most maxSessions open at once (a
// new one beyond is answered 503 with Retry-After), closed when their
// client has not sent notifications/initialized within sessionInitTimeout,
// or when they have had no request in progress for sessionIdleTimeout.
func (g *Gateway) Handler(defaultMode string) http.Handler {
	mux := http.NewServeMux()
	if defaultMode == "" {
		defaultMode = g.cfg.Gateway.Exposure
	}
	sv := g.cfg.Gateway.Serve
	served := g.servedExposures(defaultMode)
	paths := map[string]string{
		"/mcp": defaultMode, "/mcp/auto": config.ExposureAuto, "/mcp/full": config.ExposureFull,
		"/mcp/search": config.ExposureSearch, "/mcp/dynamic": config.ExposureDynamic,
	}
	hs := g.httpSessionTable()
	// events keeps what each session's event streams sent, so that a
	// client whose stream ended (SSE polling, wire/ssepoll.go, or a dropped
	// connection) reconnects with Last-Event-ID and misses nothing. The
	// library bounds it (10 MiB over all sessions, oldest dropped first)
	// and forgets a session's events when the session ends.
	events := mcp.NewMemoryEventStore(nil)
	// The sessions a cluster keeps keep their events there too, so that
	// a stream resumes on any replica (sessionevents.go).
	var shared mcp.EventStore
	if st := g.sessionStore(); st != nil {
		shared = newSharedEvents(g, st, events)
	}
	// versions answers the SDK's per-request protocol-version check for
	// requests of existing sessions; it serves nothing.
	versions := mcp.NewServer(&mcp.Implementation{Name: "toolsearch"}, &mcp.ServerOptions{SupportedProtocolVersions: downstreamVersions})
	for path, mode := range paths {
		if path != "/mcp" && !slices.Contains(served, mode) {
			mux.Handle(path, notServed(path, g.cfg.Gateway.Exposure, served))
			continue
		}
		h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
			if s, ok := r.Context().Value(sessionKey{}).(*session); ok {
				return s.server
			}
			return versions
		}, &mcp.StreamableHTTPOptions{Logger: g.log,
			// The guard checks Host (with the allowed hosts) and bounds
			// bodies before the SDK sees the request; httpsessions.go
			// closes idle sessions.
			DisableLocalhostProtection: true, MaxRequestBodyBytes: sv.MaxBodyBytes, EventStore: events})
		modern := g.statelessHandler(mode)
		mux.Handle(path, checkIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// A 2026-07-28 request goes to the stateless handler, any
			// other to the sessions' (era_http.go).
			if g.routeModern(w, r, modern) {
				return
			}
			// With a cluster that keeps sessions, the gateway serves
			// them itself (sessionshare.go).
			if g.serveShared(w, r, mode, hs, shared) {
				return
			}
			if id := r.Header.Get("Mcp-Session-Id"); id != "" {
				if r.Method != http.MethodGet {
					// An open event stream does not keep a session
					// from being idle: requests do.
					defer hs.busy(id)()
				}
				if r.Method == http.MethodDelete {
					// The library's close waits for the requests in
					// flight: they end first (forward.go).
					if x := hs.lookup(id); x != nil {
						x.s.hangUp(errSessionDeleted)
					}
				}
				h.ServeHTTP(w, r)
				return
			}
			if r.Method != http.MethodPost {
				h.ServeHTTP(w, r)
				return
			}
			if g.Draining() {
				w.Header().Set("Retry-After", "5")
				http.Error(w, shuttingDown, http.StatusServiceUnavailable)
				return
			}
			lease, ok := hs.reserve(r.Context())
			if !ok {
				hs.refuse(w)
				return
			}
			s := g.newSession(mode)
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
			hs.opened(s, lease)
		})))
	}
	mux.HandleFunc("/healthz", g.serveHealth)
	mux.HandleFunc("/metrics", g.serveMetrics)
	g.uiHandler(mux) // the dashboard, when there is one (feed.go)
	return httpguard.New(g.clusterLimit(g.countPosts(mux)), httpguard.Options{
		Token: sv.AuthToken, OpenPaths: []string{"/healthz"},
		AllowedOrigins: sv.AllowedOrigins, AllowedHosts: sv.AllowedHosts,
		MaxBodyBytes: sv.MaxBodyBytes,
		Global:       httpguard.Rate{PerSecond: sv.RateLimit.PerSecond, Burst: sv.RateLimit.Burst},
		PerSession:   httpguard.Rate{PerSecond: sv.SessionRateLimit.PerSecond, Burst: sv.SessionRateLimit.Burst},
		Logger:       g.log,
	})
}

// servedExposures are the exposures served at /mcp/<exposure>: those the
// configuration allows, and the default mode of /mcp.
func (g *Gateway) servedExposures(defaultMode string) []string {
	served := g.cfg.Gateway.Serve.ServedExposures(g.cfg.Gateway.Exposure)
	if !slices.Contains(served, defaultMode) {
		served = append(served, defaultMode)
	}
	return served
}

// Endpoints returns the MCP endpoints Handler(defaultMode) serves, /mcp
// first.
func (g *Gateway) Endpoints(defaultMode string) []string {
	if defaultMode == "" {
		defaultMode = g.cfg.Gateway.Exposure
	}
	out := []string{"/mcp"}
	served := g.servedExposures(defaultMode)
	for _, e := range []string{config.ExposureAuto, config.ExposureFull, config.ExposureSearch, config.ExposureDynamic} {
		if slices.Contains(served, e) {
			out = append(out, "/mcp/"+e)
		}
	}
	return out
}

// notServed answers every request to an endpoint whose exposure is not
// served: 404, with a JSON-RPC error an MCP client shows, naming what is.
func notServed(path, configured string, served []string) http.Handler {
	var eps []string
	for _, e := range served {
		eps = append(eps, "/mcp/"+e)
	}
	msg := fmt.Sprintf("%s is not served: with exposure %q this gateway serves /mcp and %s "+
		"(toolsearch.http.exposures lists the exposures to serve)", path, configured, strings.Join(eps, ", "))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSONRPCError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, msg)
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
// status "shutting_down". A replica whose cluster is unreachable answers
// 200 with status "degraded" (it serves from local state), and the
// cluster's state under "cluster". With background enrichment on, its
// state, progress and spend are under "enrich": a provider that fails or a
// spent budget is a reason there, never a status other than "ok".
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if g.Draining() {
		status, code = "shutting_down", http.StatusServiceUnavailable
	} else if g.cluster != nil && !g.cluster.Up() {
		// Still serving, from local state (cluster.go): ready all the
		// same.
		status = "degraded"
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
		Clients  []ClientEra    `json:"clients"`
		Uptime   string         `json:"uptime"`
		Tools    int            `json:"tools"`
		Auto     string         `json:"auto_exposure"`
		Why      string         `json:"auto_reason"`
		Static   bool           `json:"static_catalog,omitempty"`
		Sessions int            `json:"sessions"`
		HTTPOpen int            `json:"http_sessions_open"`
		Servers  []healthServer `json:"servers"`
		InFlight int            `json:"calls_in_flight"`
		Cluster  any            `json:"cluster,omitempty"`
		Enrich   *EnrichStatus  `json:"enrich,omitempty"`
	}{Status: status, Uptime: time.Since(g.started).Round(time.Second).String(), Auto: mode, Why: reason, Static: g.static,
		Servers: []healthServer{}}
	v := g.cur.Load()
	for _, t := range v.snap.Tools() {
		if v.names.visible(t) {
			out.Tools++
		}
	}
	out.Sessions = len(g.sessionList())
	out.Clients = g.ClientEras()
	out.HTTPOpen = g.httpSessionTable().count()
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
	if g.cluster != nil {
		out.Cluster = g.cluster.Status()
	}
	if g.enr.On() { // background enrichment (package enrichment)
		st := g.enr.Status(r.Context(), true)
		out.Enrich = &st
	}
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}

// httpSessionTable returns the table of the sessions served over HTTP
// (httpsessions.go), made at its first use.
func (g *Gateway) httpSessionTable() *httpSessions {
	g.httpOnce.Do(func() {
		sv := g.cfg.Gateway.Serve
		t := &httpSessions{cluster: g.cluster, store: g.sessionStore(), metrics: g.metrics, log: g.log,
			max: sv.MaxSessions, initTimeout: sv.SessionInitTimeout, idle: sv.SessionIdleTimeout, byID: map[string]*httpSession{}}
		if t.max <= 0 {
			t.max = math.MaxInt
		}
		if t.store != nil {
			t.store.OnSessionEnded(t.endedElsewhere) // sessionshare.go
		}
		g.httpSess = t
	})
	return g.httpSess
}
