// Package gateway is toolsearch's MCP gateway: it connects to every upstream
// MCP server of a configuration (stdio, streamable HTTP, SSE), keeps their
// tools in one catalog and search index, and serves MCP clients a small tool
// list — a search tool and a call tool — or every tool, depending on the
// exposure mode.
//
// Exposure auto is decided per client when it connects (clientmode.go): a
// client that defers MCP tools behind its own tool search (Claude Code)
// gets full, toolsearch.clients may name the exposure of a client, and
// any other client gets full while every definition clients may see fits
// under the threshold (a share of the context window), and dynamic above
// it. That is decided again at every catalog change: a session in full
// switches to dynamic once the definitions exceed the threshold (search
// and call tools added, the tools it listed kept, list_changed sent), and
// never switches back. In full exposure a session's first tools/list
// waits a few seconds for servers still starting (fulllist.go); in
// dynamic exposure the tools a search adds carry anthropic/alwaysLoad,
// and the search answers once the client has listed them (relist.go).
//
// Clients of MCP 2025-11-25 and earlier (sessions) and of MCP 2026-07-28
// (no sessions: the version rides in each request) are served on the same
// endpoints; a 2026-07-28 client gets one list per exposure and never
// dynamic exposure, which needs a session (era.go).
//
// A search that names a server still starting, with no tools known yet,
// waits for it (up to its start timeout); other searches never wait. A
// server that used up its restarts rests for a cool-down, then is tried
// again.
//
// Tools and prompts are named server__tool, or keep their bare names when
// their server is configured so (naming bare, or auto with one server) and
// the name collides with no other; each catalog view's resolver
// (resolve.go) decides the names, and listing, search and routing all ask
// it.
//
// Besides listings and calls, everything a client and a server say to each
// other passes through (forward.go): sampling, elicitation and roots
// requests go to the client whose request the server is serving; roots
// changes, logs, progress, cancellation, resource subscriptions and their
// updates, and completions go where they belong.
//
// The built-in tools (package builtin) are one more catalog server; which
// of them a client is shown is decided per client, by its clientInfo name
// and MCP roots for a 2025-11-25 session and by the configuration alone
// for a 2026-07-28 client (builtinclient.go).
//
// A running gateway takes a new configuration with Reload (reload.go):
// servers added start, removed ones stop, changed ones restart, and the
// others keep running and keep their sessions; serve calls it on SIGHUP.
//
// A Feed (Options.Feed, feed.go) is told of every search, load, call,
// session change and server state, for the dashboard at /ui (package
// gateway/dashboard, served through Options.UI); a gateway without one
// builds no event.
//
// Data flows one way: upstream tools/list → catalog snapshot → index →
// search → references → routing. Policy (package policy) is applied by
// each view's resolver, for every listing, search and call.
//
// Words of this package. Four things are sessions, each with its own
// word: a client session (session, session.go) is one connected MCP
// client and what it has been shown; an HTTP session (httpSessions,
// httpsessions.go) is the transport's record of a 2025-11-25 session over
// streamable HTTP, its id and its timeouts; a shared session (SessionStore,
// sessionshare.go) is an HTTP session's state kept in the cluster, so that
// another replica can take it over; an upstream session (upstream.Conn,
// package upstream) is the gateway's own connection to one server. An era is a
// family of protocol versions: modern is MCP 2026-07-28 (no sessions, the
// version rides in each request), legacy the 2025 versions (initialize,
// then a session). A view is one published state of the catalog (its
// snapshot, index, resolver and per-server figures): replaced whole, never
// changed.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/enrichment"
	"github.com/toolsearch/toolsearch/gateway/metrics"
	"github.com/toolsearch/toolsearch/gateway/tracing"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// Options configure a Gateway.
type Options struct {
	// Logger receives the gateway's logs (stderr in stdio mode). Nil
	// discards them.
	Logger *slog.Logger
	// Version is reported to clients and upstream servers.
	Version string
	// Static, when set, is served in place of the configuration's
	// servers: its tools are searchable and listed, and every call of
	// one answers that no server is configured. The gateway never loads
	// a catalog of its own: a program that wants to show the search on
	// sample tools (package core/catalog/demo) passes them here.
	Static *catalog.Snapshot
	// Cluster, when set, is what this gateway shares with the other
	// replicas of one service (cluster.go; package cluster). Nil is a
	// gateway on its own.
	Cluster Cluster
	// CacheFresh, when positive, leaves every server whose cached
	// manifest was saved less than CacheFresh ago unstarted (idle, as a
	// lazy server is) until its first call: its cached tools answer. The
	// command line's search, tools and lint read a configuration so.
	CacheFresh time.Duration
	// Feed, when set, is told what happens as it happens: searches,
	// loads, calls, sessions and server states (feed.go). Nil costs
	// nothing.
	Feed Feed
	// UI, when set, is served at /ui behind the same guard as /mcp (the
	// dashboard, package gateway/dashboard).
	UI http.Handler
	// NoEnrich keeps background enrichment from running even when the
	// configuration turns it on: EnrichStatus then says what the state
	// directory's record holds (toolsearch status and serve --check ask
	// no model).
	NoEnrich bool
	// TracerProvider, when set, receives the gateway's spans (tracing.go;
	// package tracing): one per client request, search and tool call.
	// Nil is tracing off. serve builds one from toolsearch.tracing
	// (package tracing/otlp); a program that embeds the gateway may build
	// its own, with an exporter of its own.
	TracerProvider *tracing.Provider
}

// Status is the visible state of one upstream server.
type Status struct {
	Key       string
	Transport string
	State     State
	Error     string
	Tools     int
	Tokens    int
	Restarts  int
	FromCache bool
	Since     time.Time
	// RetryAt is when a server that used up its restarts is tried again
	// (zero when it has not given up).
	RetryAt time.Time
	// Oversized counts the messages over the size limit the server sent
	// (package wire); LastOversize says what the last one was and what
	// the gateway did, at LastOversizeAt.
	Oversized      int
	LastOversize   string
	LastOversizeAt time.Time
	// Protocol is the MCP version the server's session negotiated (empty
	// before its first connection): 2026-07-28, or the version of the
	// initialize handshake a server without it fell back to.
	Protocol string
	// CachedAt is when the cached manifest the gateway started from was
	// saved (zero when it started without one).
	CachedAt time.Time
}

// pool is the set of upstream servers: never changed once published, a
// reload publishes a new one.
type pool struct {
	ups  map[string]*upstream.Server
	keys []string // sorted
}

// ups returns the upstream servers by key. The map must not be changed.
func (g *Gateway) ups() map[string]*upstream.Server {
	if p := g.servers.Load(); p != nil {
		return p.ups
	}
	return nil
}

// keys returns the keys of the upstream servers, sorted. The slice must
// not be changed.
func (g *Gateway) keys() []string {
	if p := g.servers.Load(); p != nil {
		return p.keys
	}
	return nil
}

// setServers publishes a new set of upstream servers.
func (g *Gateway) setServers(ups map[string]*upstream.Server) {
	keys := make([]string, 0, len(ups))
	for k := range ups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	g.servers.Store(&pool{ups: ups, keys: keys})
}

// policy returns the policy in force.
func (g *Gateway) policy() *policy.Policy { return g.pol.Load() }

// view is the gateway's current picture of the world, replaced as a whole.
type view struct {
	snap  *catalog.Snapshot
	index *search.Index
	// tokens per server key (o200k), from a manifest or counted.
	tokens map[string]int
	// extras per server key: resources, templates, prompts.
	extras map[string]*upstream.Manifest
	// fromCache marks servers whose tools came from a cached manifest and
	// have not been listed live yet.
	fromCache map[string]bool
	// validators caches the compiled input schemas of this view's tools.
	validators validators
	// names says what clients may see of this view and by what names
	// (resolve.go).
	names *resolver
}

// Gateway connects upstream servers and serves clients. Create it with New,
// start it with Start, and stop it by cancelling Start's context and calling
// Close.
type Gateway struct {
	cfg     *config.Config
	log     *slog.Logger
	version string
	pol     atomic.Pointer[policy.Policy] // replaced by Reload (reload.go)
	static  bool                          // serving Options.Static: no servers, calls refused

	cat *catalog.Catalog
	mu  sync.Mutex // serialises publish
	cur atomic.Pointer[view]
	// servers are the upstream servers, replaced as a whole by Reload:
	// read them with ups and keys.
	servers atomic.Pointer[pool]
	// run is the context Start was given, which Reload starts new
	// servers under; reloadMu serialises Start and Reload.
	run      context.Context
	reloadMu sync.Mutex
	// cacheFresh is Options.CacheFresh.
	cacheFresh time.Duration
	// polRules are the global policy globs in force once a reload
	// changed them (nil: those of cfg); guarded by reloadMu.
	polRules *config.Rules

	// skills are the skills clients see (skills.go).
	skills skillState

	sessMu   sync.Mutex
	sessions map[*session]struct{}
	sessSeq  atomic.Int64
	httpOnce sync.Once
	httpSess *httpSessions // the sessions served over HTTP (httpsessions.go)
	full     fullCache     // the tool list of full exposure (fulllist.go)
	fwd      *forwarding   // what passes besides calls (forward.go)
	era      eraState      // 2026-07-28 clients, cache hints (era.go)

	progMu   sync.Mutex
	progress map[string]progressTarget
	progSeq  atomic.Int64

	metrics *metrics.Set
	wg      sync.WaitGroup
	started time.Time
	builtin *builtinTools // the built-in tools (builtin.go)
	calls   callGuard     // calls in flight, draining, secrets (drain.go)

	collMu     sync.Mutex
	collisions map[string]bool // bare names refused, already logged (naming.go)
	// indexDirty tells the index saver the catalog changed; savedIndex is
	// the fingerprint of the catalog saved last (indexcache.go).
	indexDirty chan struct{}
	savedIndex []byte
	indexQuiet time.Duration // indexSaveQuiet when the gateway was made
	// startReleased is set once the memory of the start was given back
	// (releaseStartMemory, indexcache.go); only the index saver reads it.
	startReleased bool

	// hintSet holds the search hints known (hints.go); userHints those
	// of the configured hints file, which win over the state directory's.
	hintSet   atomic.Pointer[hints.Set]
	userHints *hints.Set
	// enr is the background enrichment (package enrichment; the gateway
	// is its owner, enrichOwner), started with the waits of enrichTiming.
	enr          *enrichment.Enricher
	enrichTiming enrichment.Timing

	// deafClients holds the names of clients that did not list the tools
	// a search added in dynamic exposure (relist.go).
	deafClients sync.Map

	// cluster is shared with the other replicas (cluster.go), nil on
	// its own; sharedLoads counts indexes loaded from it; reshareIndex
	// asks the index saver to write the index again (a restarted cluster
	// lost it); sharedIndex is the fingerprint of the catalog whose index
	// is known to be in the cluster (as savedIndex is for the state
	// directory); indexBuilds counts indexes built at start, when neither
	// had one.
	cluster      Cluster
	sharedLoads  atomic.Int64
	reshareIndex atomic.Bool
	sharedIndex  []byte
	indexBuilds  atomic.Int64

	// feed and ui are Options.Feed and Options.UI. feedDirty says a
	// server state changed since the last told to the feed, feedRunning
	// that a goroutine is telling them; feedMu guards feedLast, when the
	// last was told, and feedExcerpts, the excerpts of the tools it
	// listed (feed.go).
	feed         Feed
	ui           http.Handler
	feedDirty    atomic.Bool
	feedRunning  atomic.Bool
	feedMu       sync.Mutex
	feedLast     time.Time
	feedExcerpts map[*catalog.Tool]string

	// arr are the fresh manifests waiting to be put in the view
	// (arrivals.go).
	arr arrivals
	// spawning are the slots stdio servers spawn in, a few at once.
	spawning *wire.SpawnSlots

	// learn is what ranking learned from use (learning.go), nil when
	// learning is off.
	learn *learning

	// tracer starts the spans of requests, searches and calls
	// (tracing.go); nil when tracing is off.
	tracer *tracing.Tracer
}

// cachedServer reads the server's cached manifest from the state
// directory (else another replica's, through the cluster) and builds its
// catalog server; nil when there is none, or it is for another
// configuration of the server, or it cannot be read (which is logged).
func (g *Gateway) cachedServer(s *config.Server) (*upstream.Manifest, *catalog.Server) {
	m, err := loadManifest(g.cfg.Gateway.StateDir, s)
	if err != nil {
		g.log.Warn("ignoring cached manifest", "server", s.Key, "err", err)
	}
	if m == nil {
		m = g.sharedManifest(s) // another replica's (cluster.go)
	}
	if m == nil {
		return nil, nil
	}
	// Cached tools were normalised before they were saved.
	srv, err := catalog.NewServer(s.Key, m.Tools, s.Keywords, s.AlwaysLoad)
	if err == nil {
		srv, err = g.withoutImpostors(srv)
	} else {
		srv, err = g.serverFrom(s, m.Tools)
	}
	if err != nil {
		g.log.Warn("ignoring cached manifest", "server", s.Key, "err", err)
		return nil, nil
	}
	return m, g.withHints(srv)
}

// compilePolicy compiles the configuration's global and per-server
// policy globs.
func compilePolicy(cfg *config.Config) (*policy.Policy, error) {
	rules := func(r config.Rules) policy.Rules {
		return policy.Rules{Allow: r.Allow, Deny: r.Deny, Ask: r.Ask,
			Prompts:   policy.Globs{Allow: r.Prompts.Allow, Deny: r.Prompts.Deny},
			Resources: policy.Globs{Allow: r.Resources.Allow, Deny: r.Resources.Deny},
			Skills:    policy.Globs{Allow: r.Skills.Allow, Deny: r.Skills.Deny}}
	}
	perServer := map[string]policy.Rules{}
	for _, s := range cfg.Servers {
		perServer[s.Key] = rules(s.Rules())
	}
	return policy.New(rules(cfg.Gateway.Policy), perServer)
}

// WaitSettled waits until every upstream has finished its first start
// (ready, failed or idle), or ctx ends.
func (g *Gateway) WaitSettled(ctx context.Context) error {
	for _, k := range g.keys() {
		select {
		case <-g.ups()[k].Settled():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Statuses returns the state of every upstream server in key order.
func (g *Gateway) Statuses() []Status {
	v := g.cur.Load()
	out := make([]Status, 0, len(g.keys()))
	for _, k := range g.keys() {
		st := upstreamStatus(g.ups()[k])
		if srv, ok := v.snap.Server(k); ok {
			st.Tools = len(srv.Tools)
		}
		st.Tokens = v.tokens[k]
		st.FromCache = v.fromCache[k]
		out = append(out, st)
	}
	return out
}

// Snapshot returns the current catalog snapshot (every tool, denied ones
// included; use Visible to filter).
func (g *Gateway) Snapshot() *catalog.Snapshot { return g.cur.Load().snap }

// Visible reports whether policy lets clients see the tool: the policy of
// the published view (its resolver, resolve.go), which listing, search
// and calls all read, so that a reload changes what each of them shows at
// the same moment. (A tool whose name impersonates another server's never
// reaches the catalog: withoutImpostors, naming.go.)
func (g *Gateway) Visible(t *catalog.Tool) bool { return g.cur.Load().names.visible(t) }

// viewPolicy is the policy of the published view, which Visible and the
// skills' decisions read.
func (g *Gateway) viewPolicy() *policy.Policy { return g.cur.Load().names.pol }

// EnrichStatus returns the state of background enrichment: with
// Options.NoEnrich, as the state directory's record left it.
func (g *Gateway) EnrichStatus() EnrichStatus {
	if g.enr == nil {
		return EnrichStatus{State: EnrichOff}
	}
	return g.enr.Status(context.Background(), true)
}

var _ enrichment.Owner = enrichOwner{}

// serverFrom normalises raw tool definitions and builds a catalog server.
func (g *Gateway) serverFrom(s *config.Server, raws []json.RawMessage) (*catalog.Server, error) {
	norm := make([]json.RawMessage, 0, len(raws))
	seen := map[string]bool{}
	for _, r := range raws {
		n, changed, err := normaliseTool(r)
		if err != nil {
			g.log.Warn("dropping a tool definition that cannot be read", "server", s.Key, "err", err)
			continue
		}
		var name struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(n, &name)
		if seen[name.Name] {
			g.log.Warn("dropping a duplicate tool", "server", s.Key, "tool", name.Name)
			continue
		}
		seen[name.Name] = true
		if changed {
			g.log.Info("normalised an input schema to type object", "server", s.Key, "tool", name.Name)
		}
		norm = append(norm, n)
	}
	srv, err := catalog.NewServer(s.Key, norm, s.Keywords, s.AlwaysLoad)
	if err != nil {
		return nil, err
	}
	srv, err = g.withoutImpostors(srv)
	if err != nil {
		return nil, err
	}
	return g.withHints(srv), nil // hints.go
}

// normaliseTool makes a definition's inputSchema an object schema, as MCP
// requires and the SDK's server enforces. A definition that already has one
// is returned unchanged, byte for byte.
func normaliseTool(raw json.RawMessage) (json.RawMessage, bool, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false, err
	}
	var name string
	if err := json.Unmarshal(m["name"], &name); err != nil || strings.TrimSpace(name) == "" {
		return nil, false, errors.New(`missing "name"`)
	}
	schema := bytes.TrimSpace(m["inputSchema"])
	var sm map[string]json.RawMessage
	if len(schema) > 0 && json.Unmarshal(schema, &sm) == nil && sm != nil {
		var typ string
		if json.Unmarshal(sm["type"], &typ) == nil && typ == "object" {
			return raw, false, nil
		}
		if _, has := sm["type"]; !has {
			sm["type"] = json.RawMessage(`"object"`)
			m["inputSchema"], _ = json.Marshal(sm)
			out, err := json.Marshal(m)
			return out, true, err
		}
	}
	m["inputSchema"] = json.RawMessage(`{"type":"object"}`)
	out, err := json.Marshal(m)
	return out, true, err
}

// publish puts a server's fresh manifest into the catalog and the index
// (with the others arriving at the same time: arrivals.go), tells the
// sessions and saves the manifest. It returns once the server's tools can
// be found.
func (g *Gateway) publish(ctx context.Context, u *upstream.Server, m *upstream.Manifest, live bool) error {
	giveBack := g.arr.takeTurn(ctx) // arrivals.go
	defer giveBack()
	srv, err := g.serverFrom(u.Config(), m.Tools)
	if err != nil {
		return fmt.Errorf("server %q: %w", u.Key(), err)
	}
	// The manifest keeps the normalised definitions (unchanged ones byte for
	// byte), so that loading it needs no second pass.
	m.Tools = m.Tools[:0]
	for _, t := range srv.Tools {
		m.Tools = append(m.Tools, t.Raw)
	}
	m.Tokens = srv.Tokens()
	m.SavedAt = time.Now().UTC()
	u.SetListed(m)
	a := &arrival{u: u, srv: srv, m: m}
	giveBack()
	g.arrive(a)
	if a.err != nil {
		return a.err
	}
	if !a.applied {
		return nil
	}
	if err := saveManifest(g.cfg.Gateway.StateDir, m); err != nil {
		g.log.Warn("could not cache the manifest", "server", u.Key(), "err", err)
	}
	g.shareManifest(u.Config(), m) // for the other replicas (cluster.go)
	if a.added+a.removed+a.change > 0 {
		g.log.Info("tools changed", "server", u.Key(), "added", a.added, "removed", a.removed, "changed", a.change, "version", a.version)
	}
	return nil
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// visibleTokens sums the tokens of the tools policy lets clients see.
func (g *Gateway) visibleTokens(v *view) int {
	total := 0
	for _, s := range v.snap.Servers() {
		total += v.tokens[s.Key]
	}
	if v.names.pol.Empty() {
		return total
	}
	for _, t := range v.snap.Tools() {
		if !v.names.visible(t) {
			total -= t.Tokens()
		}
	}
	return total
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

// Search runs a query over the tools policy lets clients see. A query that
// names a server still starting (its name, a server prefix, one of its
// tools, select: of its tools) first waits for that server, up to its start
// timeout; any other query is answered at once.
func (g *Gateway) Search(ctx context.Context, query string, max int) (search.Result, error) {
	return g.SearchMany(ctx, query, nil, max)
}

// SearchMany runs query and each of queries as Search runs one query, and
// answers with one list merged as search.SearchMany merges it: tools named
// outright first, then the ranked hits fused by rank, up to max. A query
// that fails fails the search with a *search.QueryError naming it.
func (g *Gateway) SearchMany(ctx context.Context, query string, queries []string, max int) (search.Result, error) {
	return g.searchMany(ctx, query, queries, max, g.Visible)
}

// searchMany is SearchMany over the tools visible reports true for (a
// session's: policy, less the built-ins it leaves out).
func (g *Gateway) searchMany(ctx context.Context, query string, queries []string, max int, visible func(*catalog.Tool) bool) (res search.Result, err error) {
	ctx, span := g.tracer.StartSearch(ctx, query, queries) // tracing.go
	defer func() { g.tracer.EndSearch(span, string(res.Form), len(res.Hits), res.Total, err) }()
	if len(queries) <= search.MaxQueries {
		// Past the limit the search is refused: nothing to wait for.
		g.awaitTargets(ctx, query)
		for _, q := range queries {
			g.awaitTargets(ctx, q)
		}
	}
	start := time.Now()
	v := g.cur.Load()
	one := func(ctx context.Context, req search.Request) (search.Result, error) {
		if res, err, done := g.searchAliases(ctx, v, req.Query, req.MaxResults, visible); done {
			return res, err
		}
		return v.index.Search(ctx, req)
	}
	req := search.Request{Query: query, MaxResults: max, Visible: visible, Learned: g.learned()}
	res, err = search.SearchEach(ctx, req, queries, one)
	if err == nil && len(res.Hits) == 0 && len(queries) <= search.MaxQueries && g.awaitStarting(ctx) {
		// Nothing found while servers were starting: their tools may be
		// what was asked for, so the search is made again once they
		// have started (await.go).
		v = g.cur.Load()
		res, err = search.SearchEach(ctx, req, queries, one)
	}
	g.metrics.Search(time.Since(start), len(res.Hits), err)
	return res, err
}

// searchAliases answers a select: or exact-name query that names one of
// the aliases given to tools with invalid names (resolve.go), which the
// index does not know: aliases are looked up here, every other name of
// the query by the index, in the order given. done is false when the
// query names no alias.
func (g *Gateway) searchAliases(ctx context.Context, v *view, query string, max int, visible func(*catalog.Tool) bool) (res search.Result, err error, done bool) {
	if v.names == nil || len(v.names.aliases) == 0 {
		return res, nil, false
	}
	q := strings.TrimSpace(query)
	names, form := []string{q}, search.FormExact
	if len(q) >= len("select:") && strings.EqualFold(q[:len("select:")], "select:") {
		names, form = strings.Split(q[len("select:"):], ","), search.FormSelect
	}
	aliased := func(n string) (*catalog.Tool, bool) { // n is an alias itself
		tg, err := v.names.Resolve(n)
		return tg.tool, err == nil && tg.alias && tg.exposed == strings.TrimSpace(n)
	}
	if !slices.ContainsFunc(names, func(n string) bool { _, ok := aliased(n); return ok }) {
		return res, nil, false
	}
	res.Form = form
	seen := map[*catalog.Tool]bool{}
	add := func(t *catalog.Tool) {
		if !seen[t] {
			seen[t] = true
			res.Hits = append(res.Hits, search.Hit{Tool: t, Score: 1e6, Why: "selected by name"})
		}
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if t, ok := aliased(n); ok {
			if visible(t) {
				add(t)
			} else {
				res.Unknown = append(res.Unknown, n)
			}
			continue
		}
		sub, err := v.index.Search(ctx, search.Request{Query: "select:" + n, MaxResults: max, Visible: visible})
		if err != nil {
			return search.Result{}, err, true
		}
		for _, h := range sub.Hits {
			add(h.Tool)
		}
		res.Unknown = append(res.Unknown, sub.Unknown...)
		res.Ambiguous = append(res.Ambiguous, sub.Ambiguous...)
	}
	res.Total = len(res.Hits)
	return res, nil, true
}
