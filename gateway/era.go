package gateway

// Protocol eras. A client speaks either the session era (MCP 2025-11-25
// and earlier: initialize, then requests of one session) or the
// per-request era (MCP 2026-07-28: no initialize, each request carries the
// protocol version and the client's capabilities in its _meta). Both are
// served on the same endpoints.
//
// What differs for a 2026-07-28 client:
//   - Its tool list is one list per exposure, the same for every such client
//     (on an auto endpoint, for every client of the same clientInfo name:
//     clientmode.go), that no request of its own changes: a session's
//     dynamic exposure (found tools join the list) has no session to live
//     in, so a 2026-07-28 client asking for dynamic exposure gets search
//     exposure, and the gateway logs once why.
//   - Over HTTP its requests are served by the MCP library's stateless
//     handler, from one server per exposure (sharedSession); over stdio the
//     connection's own server serves it, fixed to the era of the
//     connection's first request.
//   - Change notifications reach it on a subscriptions/listen stream, tagged
//     with the stream's subscription id by the library.
//
// A connection speaks one era: a request whose _meta claims another
// version than the one its connection speaks is refused (eraMiddleware).
//
// What a request says of its era (the version in its _meta, the client's
// name, the bound on _meta's size) is read by package clientera; this
// file is the gateway's side: the shared servers, the sessions that keep
// to one era, the clients seen.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// dynamicWhy is why a 2026-07-28 client gets search exposure where
// dynamic was asked for.
const dynamicWhy = "MCP 2026-07-28 clients get one tool list per exposure that their own requests do not change; " +
	"dynamic exposure (found tools join the list) is served to 2025-11-25 sessions only, so they get search exposure"

// sharedSession returns the server that serves 2026-07-28 clients of the
// given exposure over HTTP, making it at first use. Every such client of
// one exposure sees the same lists. On an auto endpoint, the exposure is
// the one the request's clientInfo name gives (modernAutoKey): auto, or
// "auto:" and the exposure the client's rule gives.
func (g *Gateway) sharedSession(mode string) *session {
	e := &g.era
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.shared[mode]; s != nil {
		return s
	}
	if e.shared == nil {
		e.shared = map[string]*session{}
	}
	var s *session
	key, kind, _ := strings.Cut(mode, ownKindSep) // builtinclient.go
	if fixed, ok := strings.CutPrefix(key, modernAutoPrefix); ok {
		// Auto, decided by the client's name (clientmode.go).
		s = g.makeSession(fixed, true)
		s.reason = "auto: by the clientInfo name of each request (toolsearch.clients, or a client that defers MCP tools itself)"
		s.byClient = true
	} else {
		s = g.makeSession(key, true)
	}
	if kind != "" {
		s.mu.Lock()
		s.ownKind = kind
		s.decideBuiltins()
		s.mu.Unlock()
		s.sync()
	}
	e.shared[mode] = s
	return s
}

// sharedSessions returns the shared servers made so far.
func (g *Gateway) sharedSessions() []*session {
	e := &g.era
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*session, 0, len(e.shared))
	for _, k := range sortedKeys(e.shared) {
		out = append(out, e.shared[k])
	}
	return out
}

// logDynamic logs, once per requested exposure, that 2026-07-28 clients
// get search exposure instead of dynamic.
func (g *Gateway) logDynamic(requested, reason string) {
	e := &g.era
	e.logMu.Lock()
	if e.loggedDyn == nil {
		e.loggedDyn = map[string]bool{}
	}
	logged := e.loggedDyn[requested]
	e.loggedDyn[requested] = true
	e.logMu.Unlock()
	if !logged {
		g.log.Info("a 2026-07-28 client gets search exposure instead of dynamic", "requested", requested, "dynamic_because", reason, "why", dynamicWhy)
	}
}

// sawClient records a 2026-07-28 client served over HTTP; the first
// request of a client not seen before is logged.
func (g *Gateway) sawClient(version, client, mode string) {
	if !g.era.clients.Saw(version, client, mode, time.Now()) {
		return
	}
	g.log.Info("a client speaks MCP "+version, "era", clientera.Era(version), "client", client, "exposure", mode, "transport", "http")
}

// ClientEra is one client as /healthz shows it: the protocol version it
// speaks, its era, how it is connected and its exposure.
type ClientEra = clientera.Client

// ClientEras lists the clients connected (sessions, and the 2026-07-28
// clients over HTTP seen lately), sessions first in the order they came.
func (g *Gateway) ClientEras() []ClientEra {
	list := g.sessionList()
	slices.SortFunc(list, func(a, b *session) int { return int(a.seq - b.seq) })
	out := []ClientEra{}
	for _, s := range list {
		s.mu.Lock()
		ce := ClientEra{Protocol: s.era, Era: clientera.Era(s.era), Transport: "session", Client: s.client, Exposure: s.mode}
		s.mu.Unlock()
		out = append(out, ce)
	}
	return append(out, g.era.clients.Clients()...)
}

// eraMiddleware keeps a connection to one era and records it. The first
// request of a connection decides: initialize (the session era, recorded
// when the session is initialized) or a request whose _meta names a
// 2026-07-28 version (the per-request era, adopted here). Later requests
// that claim another era are refused, so that a forged _meta cannot
// switch a session's lists or its notifications. A _meta over
// clientera.MaxMetaBytes is refused. It also gives the cache fields to
// tool lists the library does not build (full exposure, fulllist.go).
func (s *session) eraMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if clientera.IsNotification(method) {
			return next(ctx, method, req)
		}
		meta := clientera.Meta(req)
		if err := clientera.CheckMetaSize(meta); err != nil {
			return nil, err
		}
		version := clientera.Version(meta)
		if err := s.checkEra(ctx, method, req, version, meta); err != nil {
			return nil, err
		}
		if version == "" {
			s.mu.Lock()
			version = s.era
			s.mu.Unlock()
			if method == "initialize" {
				if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
					version = p.ProtocolVersion
				}
			}
		}
		s.g.metrics.ClientRequest(version)
		if method == "subscriptions/listen" {
			return s.listen(ctx, method, req, next)
		}
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.ListToolsResult); ok && err == nil && r.CacheScope == "" {
			s.setCacheable(ctx, req, &r.Cacheable)
		}
		return res, err
	}
}

// checkEra applies the era rules to one request claiming version (""
// when its _meta names none).
func (s *session) checkEra(ctx context.Context, method string, req mcp.Request, version string, meta map[string]any) error {
	g := s.g
	if s.shared {
		// The library has checked the version against the supported
		// ones; a request without one is not of this era.
		if !clientera.Modern(version) {
			return clientera.Refusal(jsonrpc.CodeInvalidRequest, fmt.Sprintf(
				"%s without _meta %q: requests without a session carry the protocol version (2026-07-28); a 2025-11-25 client begins with initialize",
				method, mcp.MetaKeyProtocolVersion), nil, "")
		}
		s.mu.Lock()
		mode := s.mode
		s.mu.Unlock()
		g.sawClient(version, clientera.MetaClient(meta), mode)
		if g.feed != nil {
			s.feedClient(version, meta) // feed.go
		}
		return nil
	}
	s.mu.Lock()
	era := s.era
	s.mu.Unlock()
	switch {
	case era == "" && clientera.Modern(version):
		s.adopt(req, version, clientera.FromMeta(meta))
		return nil
	case era == "":
		return nil // initialize (or a request the library refuses before it)
	case clientera.Modern(era) && version != era:
		claimed := version
		if claimed == "" {
			claimed = "none"
		}
		return clientera.Refusal(jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"this connection speaks MCP %s, whose every request carries _meta %q = %q; %s claims %s",
			era, mcp.MetaKeyProtocolVersion, era, method, claimed), nil, "")
	case !clientera.Modern(era) && version != "" && clientera.Modern(version):
		return clientera.Refusal(mcp.CodeUnsupportedProtocolVersion, fmt.Sprintf(
			"this connection began with initialize and speaks MCP %s; a request of protocol version %q is refused in it", era, version),
			[]string{era}, version)
	}
	return nil
}

// adopt makes a connection that opened with a 2026-07-28 request a client
// of that era: it is registered (no initialized notification will come),
// auto is decided by the request's clientInfo (clientmode.go), and
// dynamic exposure becomes search.
func (s *session) adopt(req mcp.Request, version string, facts *clientera.Facts) {
	client := clientera.ClientName(&mcp.Implementation{Name: facts.Name, Version: facts.Version})
	g := s.g
	ss, _ := req.GetSession().(*mcp.ServerSession)
	s.mu.Lock()
	if s.era != "" {
		s.mu.Unlock()
		return
	}
	s.era, s.client, s.ss = version, client, ss
	if s.facts == nil {
		// Shown (feed.go) whatever the exposure; auto decides by them.
		s.facts = facts
	}
	auto := s.auto
	s.mu.Unlock()
	if auto {
		// The connection is one client: its first request's clientInfo
		// decides auto for it, as initialize does for a session.
		s.decideForClient(facts)
	}
	s.mu.Lock()
	requested, reason := s.mode, s.reason
	if s.mode == config.ExposureDynamic {
		s.mode, s.reason = config.ExposureSearch, dynamicWhy
	}
	mode := s.mode
	s.mu.Unlock()
	if requested == config.ExposureDynamic {
		g.logDynamic(requested, reason)
	}
	g.log.Info("a client speaks MCP "+version, "era", clientera.Era(version), "client", client, "exposure", mode, "transport", "stdio")
	g.register(s)
	s.sync()
	if ss != nil {
		go func() {
			_ = ss.Wait()
			g.unregister(s)
			g.dropSubscriptions(s)
			s.feedClosed() // feed.go
		}()
	}
}

// listen serves subscriptions/listen. On a shared server each stream
// counts as an HTTP session against the cap; every stream ends when the
// gateway begins to drain.
func (s *session) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	g := s.g
	if g.Draining() {
		return nil, &jsonrpc.Error{Code: -32000, Message: shuttingDown}
	}
	if s.shared {
		hs := g.httpSessionTable()
		lease, ok := hs.reserve(ctx)
		if !ok {
			g.metrics.SessionRefused()
			return nil, &jsonrpc.Error{Code: -32000, Message: fmt.Sprintf(
				"toolsearch has %d MCP sessions and subscription streams open, the most it serves at once (toolsearch.http.maxSessions); close one or try again later", hs.max)}
		}
		defer hs.release()
		defer lease()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.calls.drainContext(), cancel)
	defer stop()
	return next(ctx, method, req)
}

// subscribeShared subscribes a shared server to a resource for one more
// stream: the first stream subscribes the gateway, the last one out
// unsubscribes it.
func (s *session) subscribeShared(ctx context.Context, uri string) error {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.subRefs[uri] == 0 {
		if err := s.g.subscribe(ctx, s, uri); err != nil {
			return err
		}
	}
	if s.subRefs == nil {
		s.subRefs = map[string]int{}
	}
	s.subRefs[uri]++
	return nil
}

func (s *session) unsubscribeShared(ctx context.Context, uri string) error {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if s.subRefs[uri] == 0 {
		return nil
	}
	s.subRefs[uri]--
	if s.subRefs[uri] > 0 {
		return nil
	}
	delete(s.subRefs, uri)
	return s.g.unsubscribe(ctx, s, uri)
}

// closeShared ends the requests still open on the shared servers (their
// subscription streams) when the gateway closes.
func (g *Gateway) closeShared() {
	for _, s := range g.sharedSessions() {
		for ss := range s.server.Sessions() {
			_ = ss.Close()
		}
	}
}
