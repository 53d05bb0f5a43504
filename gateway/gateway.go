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
// waits a few seconds for servers still starting (full.go); in
// dynamic exposure the tools a search adds carry anthropic/alwaysLoad,
// and the search answers once the client has listed them (relist.go).
//
// Clients of MCP 2025-11-25 and earlier (sessions) and of MCP 2026-07-28
// (no sessions: the version rides in each request) are served on the same
// endpoints; a 2026-07-28 client gets one list per exposure and never
// dynamic exposure, which needs a session (era.go).
//
// A search that names a server still starting, with no tools known yet,
// waits for it (up to its start timeout; search.go); other searches never
// wait. A server that used up its restarts rests for a cool-down, then is
// tried again.
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
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/usage"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/enrichment"
	"github.com/toolsearch/toolsearch/gateway/metrics"
	"github.com/toolsearch/toolsearch/gateway/tracing"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
	"github.com/toolsearch/toolsearch/internal/redact"
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
	full     fullCache     // the tool list of full exposure (full.go)
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
	// listed (feedhooks.go).
	feed         Feed
	ui           http.Handler
	feedDirty    atomic.Bool
	feedRunning  atomic.Bool
	feedMu       sync.Mutex
	feedLast     time.Time
	feedExcerpts map[*catalog.Tool]string

	// arr are the fresh manifests waiting to be put in the view
	// (arrivals.go; publish.go puts them in).
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

// The parts of a Gateway below have types of their own, each beside the
// Gateway and used by the file its field's comment names. Larger parts,
// with behaviour of their own, have files of their own (httpsessions.go,
// mrtrstate.go, skillstate.go, fulllist.go, arrivals.go).

// builtinTools is the gateway's state for its built-in tools.
type builtinTools struct {
	set *builtin.Set
	// byClient is whether what the set shows depends on whether the
	// client has tools of its own (builtinsByClient), worked out once:
	// it depends on the set's configuration only.
	byClient bool
	// resources is whether the resource tools are in the catalog now;
	// guarded by Gateway.mu.
	resources bool
}

// eraState is the gateway's state about eras: the shared servers of
// 2026-07-28 clients over HTTP, the clients seen, the cache hints of the
// upstream lists (era_cache.go).
type eraState struct {
	mu        sync.Mutex
	shared    map[string]*session // requested exposure → the server of 2026-07-28 clients
	clients   clientera.Recent    // 2026-07-28 clients over HTTP, in the order first seen
	logMu     sync.Mutex
	loggedDyn map[string]bool // requested exposures whose dynamic → search was logged
}

// learning is the gateway's learned record.
type learning struct {
	store  atomic.Pointer[usage.Store]
	opt    usage.Options
	path   string // "" without a state directory: nothing is saved
	window time.Duration

	mu  sync.Mutex
	new []learnRecord // recorded since the last save
}

// learnRecord is one recorded call.
type learnRecord struct {
	terms []string
	tool  string
	at    time.Time
}

// record adds one call to the store and to what the next save merges.
func (l *learning) record(g *Gateway, terms []string, tool string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.store.Load().Record(terms, tool, at); err != nil {
		g.log.Warn("a call was not learned from", "tool", tool, "err", err)
		return
	}
	l.new = append(l.new, learnRecord{terms: terms, tool: tool, at: at})
}

// origin is a client request the gateway is serving by talking to an
// upstream server.
type origin struct {
	ss *mcp.ServerSession
	// ctx is the client's request: over streamable HTTP it names the
	// stream the request came on, where related messages go.
	ctx context.Context
	// held is set for a call made for a 2026 client: the server's
	// requests become input_required results of the call (mrtrheld.go).
	held *heldCall
}

// forwarding is the gateway's state for what passes besides calls.
type forwarding struct {
	mu       sync.Mutex
	seq      int64
	inflight map[string]map[int64]origin // server key → request seq → origin
	// elicitations maps the id of a URL-mode elicitation to the session
	// it was sent to, for its completion notice.
	elicitations map[string]*mcp.ServerSession

	subOp sync.Mutex // serialises subscribe and unsubscribe
	// subs holds the client sessions subscribed to each upstream
	// resource, with the URI each subscribed to; acks the subscriptions
	// to 2026-07-28 servers that wait for the server's acknowledgement.
	subs map[subKey]map[*session]string
	acks map[subKey]chan struct{}

	// mrtr remembers multi round-trip calls (mrtr.go).
	mrtr *mrtrState
	// logLevel is the last level a 2025 client set with logging/setLevel,
	// which calls to 2026 servers carry in their _meta.
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	logLevel mcp.LoggingLevel
}

//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func (f *forwarding) setLogLevel(l mcp.LoggingLevel) {
	f.mu.Lock()
	f.logLevel = l
	f.mu.Unlock()
}

//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func (f *forwarding) level() mcp.LoggingLevel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logLevel
}

// subKey is one upstream resource.
type subKey struct{ server, uri string }

func newForwarding() *forwarding {
	return &forwarding{inflight: map[string]map[int64]origin{}, elicitations: map[string]*mcp.ServerSession{},
		subs: map[subKey]map[*session]string{}, acks: map[subKey]chan struct{}{}, mrtr: newMRTR()}
}

// progressTarget is where an upstream's progress notifications go.
type progressTarget struct {
	ss *mcp.ServerSession
	// ctx is the client's call: over streamable HTTP, progress goes on
	// its stream.
	ctx   context.Context
	token any
}

// callGuard counts the calls in flight and refuses new ones once the
// gateway drains. Its zero value is ready to use.
type callGuard struct {
	mu       sync.Mutex
	inflight int  // calls whose handler runs
	draining bool // no new calls
	// cut is set when a drain ended with calls still running: their
	// errors say that the gateway stopped them.
	cut atomic.Bool
	// posts counts HTTP requests that may carry an answer still being
	// written (http.go).
	posts atomic.Int64

	// drainCtx ends when a drain begins: what waits on the user (an
	// approval) ends with it.
	drainOnce   sync.Once
	drainCtx    context.Context
	drainCancel context.CancelFunc

	// red redacts the configuration's secrets (secrets); a reload adds
	// those of the new configuration.
	redOnce sync.Once
	red     atomic.Pointer[redact.Redactor]
}

// drainContext returns a context that ends when a drain begins.
func (c *callGuard) drainContext() context.Context {
	c.drainOnce.Do(func() { c.drainCtx, c.drainCancel = context.WithCancel(context.Background()) })
	return c.drainCtx
}

// enter admits a call, unless the gateway drains.
func (c *callGuard) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.inflight++
	return true
}

func (c *callGuard) leave() {
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
}

func (c *callGuard) state() (inflight int, draining bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight, c.draining
}

// fullCache is the full list of the latest catalog version a session
// asked for (views that differ only in their search index share it).
type fullCache struct {
	mu   sync.Mutex
	list *fullList
	// less holds the list without some built-in tools (sessions whose
	// client is not shown them, builtinclient.go), by the names left
	// out; it is emptied when list changes.
	less map[string]*fullList
}
