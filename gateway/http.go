package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/config"
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
func (g *Gateway) Handler(defaultMode string) http.Handler {
	mux := http.NewServeMux()
	if defaultMode == "" {
		defaultMode = g.cfg.Gateway.Exposure
	}
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
		}, &mcp.StreamableHTTPOptions{Logger: g.log, SessionTimeout: 30 * time.Minute})
		mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, g.newSession(mode)))
			}
			h.ServeHTTP(w, r)
		}))
	}
	mux.HandleFunc("/healthz", g.serveHealth)
	mux.HandleFunc("/metrics", g.serveMetrics)
	return mux
}

type healthServer struct {
	Name   string `json:"name"`
	State  State  `json:"state"`
	Tools  int    `json:"tools"`
	Error  string `json:"error,omitempty"`
	Cached bool   `json:"from_cache,omitempty"`
	// RetryAt is when a server that used up its restarts is tried again.
	RetryAt *time.Time `json:"retry_at,omitempty"`
}

func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
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
	}{Status: "ok", Uptime: time.Since(g.started).Round(time.Second).String(), Auto: mode, Why: reason, Demo: g.demo,
		Servers: []healthServer{}}
	snap := g.Snapshot()
	for _, t := range snap.Tools() {
		if g.Visible(t) {
			out.Tools++
		}
	}
	out.Sessions = len(g.sessionList())
	for _, st := range g.Statuses() {
		hs := healthServer{Name: st.Key, State: st.State, Tools: st.Tools, Error: st.Error, Cached: st.FromCache}
		if !st.RetryAt.IsZero() {
			hs.RetryAt = &st.RetryAt
		}
		out.Servers = append(out.Servers, hs)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
