package gateway

// What auto exposure gives a client, decided when the client connects.
//
// The rule, in order:
//
//  1. An exposure other than auto (the configuration, --exposure, or an
//     HTTP path such as /mcp/search) is what every client gets.
//  2. toolsearch.clients maps a client's name to the exposure auto gives
//     it: full, search, dynamic, or auto for the token threshold alone.
//  3. A client that defers MCP tools behind its own tool search gets full,
//     with the _meta hints (anthropic/alwaysLoad on the gateway's always-
//     loaded tools): stacking the gateway's search on the client's own
//     would make the model search twice for every tool. No MCP capability
//     says that a client defers tools (Claude Code 2.1.328 declares roots
//     and elicitation, and optionally MCP Apps and Tasks extensions, and
//     nothing about tool search: see package clients), so such clients
//     are known by the clientInfo name they send:
//     clientera.DeferringClients. The name is self-reported, and that is
//     acceptable here because the only thing it changes is the shape of
//     the list: policy applies to every listing, search and call in every
//     exposure, so a client that lies gets nothing it could not get from
//     full exposure anyway.
//  4. Otherwise the token threshold: full while every definition clients
//     may see fits under it, dynamic past it (and a session in full
//     switches to dynamic when the catalog grows past it, see sync).
//
// The decision and its reason are logged for each client, and Exposure
// (what toolsearch status prints) names the clients rules 2 and 3 apply
// to.
//
// When it is made:
//   - A session of MCP 2025-11-25 or older: at initialize, by its
//     clientInfo.
//   - A 2026-07-28 client has no initialize: its clientInfo comes in the
//     _meta of every request, and its tool list must not vary per
//     connection or by its own earlier requests (the specification's
//     tools/list rule), though it may vary by the requesting client. So
//     auto is decided by what each request declares: over HTTP, each
//     request is served by the shared server of the exposure its own
//     clientInfo name gives (modernAutoKey), so the same client always
//     gets the same list and no request changes another's; over stdio,
//     where the connection is one client, its first request decides for
//     the connection. Dynamic becomes search for these clients (era.go).
//     As the list on an auto endpoint depends on the client's declared
//     name, its tools/list results say cacheScope "private", so that no
//     shared cache serves one client's list to another (era_cache.go).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// firstListBound is how long a session's first tools/list in full
// exposure may wait for servers still starting (fulllist.go):
// limits.firstListWait, and for a quick lister (clientera.QuickLister)
// no later than its bound after initialize.
func (g *Gateway) firstListBound(c *clientera.Facts) time.Duration {
	bound := g.cfg.Gateway.Limits.FirstListWait
	if c == nil {
		return bound
	}
	if q, ok := clientera.QuickLister(c.Name); ok {
		left := q
		if !c.At.IsZero() {
			left = q - time.Since(c.At)
		}
		bound = max(min(bound, left), 0)
	}
	return bound
}

// modernAutoPrefix begins the keys of the shared servers (era.go) that
// serve 2026-07-28 clients on an auto endpoint whose exposure their
// clientInfo name decides: "auto:full", "auto:search".
const modernAutoPrefix = "auto:"

// modernAutoKey is the shared server that serves a 2026-07-28 request on
// an auto endpoint from a client of the given clientInfo name: the
// exposure rules 2 and 3 give the client (dynamic as search), or auto
// (the threshold) for any other client and for a request without
// clientInfo.
func (g *Gateway) modernAutoKey(name string) string {
	if m, _, ok := g.clientRule(&clientera.Facts{Name: name}); ok {
		return modernAutoPrefix + clientera.ModernMode(m)
	}
	return config.ExposureAuto
}

// resolveModeFor is resolveMode for one client: mode as configured, or
// for auto the rule at the top of this file. c may be nil (no client
// known yet).
func (g *Gateway) resolveModeFor(mode string, c *clientera.Facts) (string, string) {
	if mode != config.ExposureAuto && mode != "" {
		return mode, "set by configuration"
	}
	if m, reason, ok := g.clientRule(c); ok {
		return m, reason
	}
	mode, reason := g.thresholdMode()
	if c != nil && c.Name != "" {
		if _, named := g.cfg.Gateway.Clients[c.Name]; named {
			reason = fmt.Sprintf("%s (toolsearch.clients leaves client %q to the threshold)", reason, c.Name)
		}
	}
	return mode, reason
}

// clientRule is what rules 2 and 3 give the client, if either applies:
// its exposure (as configured, dynamic included) and why.
func (g *Gateway) clientRule(c *clientera.Facts) (mode, reason string, ok bool) {
	if c == nil || c.Name == "" {
		return "", "", false
	}
	if m, named := g.cfg.Gateway.Clients[c.Name]; named {
		if m == config.ExposureAuto {
			return "", "", false
		}
		return m, fmt.Sprintf("auto: toolsearch.clients gives client %q %s", c.Name, m), true
	}
	if c.DefersTools() {
		return config.ExposureFull, fmt.Sprintf("auto: client %q defers MCP tools behind its own tool search, "+
			"so it gets every tool with the _meta hints rather than a second search (known by its clientInfo name: it declares no capability for it)", c.Name), true
	}
	return "", "", false
}

// autoClientsNote names the clients auto gives an exposure of their own,
// whatever the threshold, for Exposure (what toolsearch status prints).
func (g *Gateway) autoClientsNote() string {
	var parts []string
	for _, n := range clientera.DeferringClients() {
		if _, ok := g.cfg.Gateway.Clients[n]; !ok {
			parts = append(parts, n+" gets full (it defers MCP tools itself)")
		}
	}
	var named []string
	for n, m := range g.cfg.Gateway.Clients {
		if m != config.ExposureAuto {
			named = append(named, n+" gets "+m)
		} else {
			named = append(named, n+" goes by the threshold")
		}
	}
	slices.Sort(named)
	if len(named) > 0 {
		parts = append(parts, strings.Join(named, ", ")+" (toolsearch.clients)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; by client: " + strings.Join(parts, "; ")
}

// clientMiddleware decides a session's exposure when its client says
// who it is (initialize), before the client has listed anything, and
// puts the instructions of that exposure in the initialize result. It
// also counts the client's tools/list requests (relist.go).
func (s *session) clientMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			s.awaitRoots(ctx) // the first answer to roots/list (builtinclient.go)
			res, err := next(ctx, method, req)
			if err == nil {
				s.relist.listed() // relist.go
			}
			return res, err
		}
		if method != "initialize" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.InitializeParams)
		mode := s.decideForClient(clientera.FromInitialize(p))
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && s.auto {
			ir.Instructions = s.g.instructions(mode, true)
		}
		return res, err
	}
}

// decideForClient records the client's facts and, for a session in
// auto, re-decides its exposure by them; it returns the session's mode.
// No listing has been served yet, so a change needs no list_changed.
func (s *session) decideForClient(c *clientera.Facts) string {
	g := s.g
	s.mu.Lock()
	s.facts = c
	// The built-in tools this client is shown, and whether its roots
	// are to be asked for (builtinclient.go).
	s.decideBuiltins()
	if s.wantsRoots(c) && s.rootsDone == nil {
		s.rootsDone = make(chan struct{})
	}
	if !s.auto {
		mode, reason := s.mode, s.reason
		s.mu.Unlock()
		g.log.Info("client connected", "client", c.Name, "client_version", c.Version, "exposure", mode, "why", reason)
		return mode
	}
	mode, reason := g.resolveModeFor(config.ExposureAuto, c)
	switch {
	case mode == s.mode:
	case mode == config.ExposureFull:
		// The search and call tools registered so far stay with the
		// server, unseen: full mode's listings and calls are answered
		// from the view's list (fulllist.go).
		s.full = g.fullToolsFor(g.cur.Load(), s.builtinOff)
	case s.mode == config.ExposureFull:
		s.leaveFull()
	}
	s.mode, s.reason = mode, reason
	s.mu.Unlock()
	g.log.Info("client connected", "client", c.Name, "client_version", c.Version, "exposure", mode, "why", reason)
	s.sync()
	return mode
}

// Exposure returns the mode auto picks now for a client it knows nothing
// of, with the reason, which also names the clients auto gives full
// whatever the threshold (clientmode.go).
func (g *Gateway) Exposure() (mode, reason string) {
	mode, reason = g.resolveMode(config.ExposureAuto)
	if g.cfg.Gateway.Exposure == config.ExposureAuto || g.cfg.Gateway.Exposure == "" {
		reason += g.autoClientsNote()
	}
	return mode, reason
}

// resolveMode returns the exposure a session gets and why: mode itself
// unless it is auto, which is decided by the token threshold here and by
// what the client is when it is known (resolveModeFor, clientmode.go).
func (g *Gateway) resolveMode(mode string) (string, string) {
	return g.resolveModeFor(mode, nil)
}

// thresholdMode is auto's decision by size alone: full while every
// definition clients may see fits under the threshold, dynamic past it.
func (g *Gateway) thresholdMode() (string, string) {
	v := g.cur.Load()
	total := g.visibleTokens(v)
	th := g.cfg.Gateway.Threshold()
	if total <= th {
		return config.ExposureFull, fmt.Sprintf("auto: all tool definitions (%d tokens) fit under the threshold (%d tokens, %.4g%% of %d)",
			total, th, g.cfg.Gateway.ThresholdPercent, g.cfg.Gateway.ContextWindow)
	}
	return config.ExposureDynamic, fmt.Sprintf("auto: the tool definitions (%d tokens) exceed the threshold (%d tokens, %.4g%% of %d)",
		total, th, g.cfg.Gateway.ThresholdPercent, g.cfg.Gateway.ContextWindow)
}
