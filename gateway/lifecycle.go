package gateway

// Making, starting and closing a gateway, and its background enrichment.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/enrichment"
	"github.com/toolsearch/toolsearch/gateway/metrics"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// New builds a gateway from cfg: policy compiled, cached manifests loaded
// and indexed, so that searches are answered before any server has started.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pol, err := compilePolicy(cfg)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	keys := []string{builtin.Key}
	for _, s := range cfg.Servers {
		keys = append(keys, s.Key)
	}
	logPolicyWarnings(log, pol.Warnings(keys)) // policycheck.go
	g := &Gateway{
		cfg: cfg, log: log, version: opts.Version, static: opts.Static != nil, cacheFresh: opts.CacheFresh,
		sessions: map[*session]struct{}{},
		progress: map[string]progressTarget{}, metrics: metrics.New(downstreamVersions, upstreamStates), started: time.Now(),
		collisions: map[string]bool{}, fwd: newForwarding(),
		indexDirty: make(chan struct{}, 1), enrichTiming: enrichment.DefaultTiming, spawning: wire.NewSpawnSlots(0),
		cluster: opts.Cluster, indexQuiet: indexSaveQuiet,
		feed: opts.Feed, ui: opts.UI, arr: newArrivals(),
	}
	if g.version == "" {
		g.version = "dev"
	}
	g.openLearning()                     // learning.go
	g.enr = g.newEnricher(opts.NoEnrich) // below
	g.tracer = g.newTracer(opts)         // tracing.go
	g.pol.Store(pol)
	ups := map[string]*upstream.Server{}
	if opts.Static == nil {
		if err := g.loadHints(); err != nil { // hints.go
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	v := &view{tokens: map[string]int{}, extras: map[string]*upstream.Manifest{}, fromCache: map[string]bool{}}
	var servers []*catalog.Server
	if opts.Static != nil {
		v.snap = opts.Static
		for _, s := range v.snap.Servers() {
			v.tokens[s.Key] = s.Tokens()
		}
	} else {
		enabled := cfg.Enabled()
		for _, s := range enabled {
			ups[s.Key] = g.newUpstream(s)
		}
		g.setServers(ups) // withoutImpostors reads them
		// Read the cached manifests in parallel: with a hundred servers this
		// is most of the time to the first search.
		type loaded struct {
			m   *upstream.Manifest
			srv *catalog.Server
		}
		results := make([]loaded, len(enabled))
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range max(1, runtime.GOMAXPROCS(0)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(enabled) {
						return
					}
					if m, srv := g.cachedServer(enabled[i]); m != nil {
						results[i] = loaded{m, srv}
					}
				}
			}()
		}
		wg.Wait()
		for i, s := range enabled {
			r := results[i]
			if r.m == nil {
				continue
			}
			servers = append(servers, r.srv)
			v.tokens[s.Key] = r.m.Tokens
			v.extras[s.Key] = allowedExtras(g.policy(), s.Key, r.m)
			v.fromCache[s.Key] = true
			ups[s.Key].NoteCached(r.m, g.cacheFresh)
		}
		v.snap, err = catalog.NewSnapshot(servers...)
		if err != nil {
			return nil, fmt.Errorf("gateway: cached manifests: %w", err)
		}
	}
	if g.servers.Load() == nil {
		g.setServers(ups)
	}
	if err := g.initBuiltins(v); err != nil { // built-in tools (builtin.go)
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.cat = catalog.New(v.snap)
	v.index = g.startIndex(v.snap) // saved, shared or built (indexcache.go)
	if g.cluster != nil {
		g.cluster.OnChange(func(up bool) {
			if up {
				g.rejoined()
			}
		})
	}
	g.nameView(v)
	g.cur.Store(v)
	return g, nil
}

// Start starts every upstream server concurrently and returns at once. The
// servers run until ctx is cancelled (or, for one that a reload removes or
// changes, until then).
func (g *Gateway) Start(ctx context.Context) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.run = ctx
	g.startBuiltins(ctx) // built-in tools (builtin.go)
	g.startEnrich(ctx)   // background enrichment, when configured
	if g.learn != nil {
		g.wg.Go(func() { g.saveLearningLoop(ctx) }) // learning.go
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.saveIndexes(ctx) // indexcache.go
	}()
	ups := g.ups()
	for _, k := range g.keys() {
		ups[k].Launch(ctx, &g.wg)
	}
	g.wg.Go(func() { g.warnUnmatchedPolicy(ctx) }) // policycheck.go
	g.feedServers()                                // feed.go
}

// Close waits for the upstream servers to stop after Start's context was
// cancelled, then closes the client sessions still open. Cancel that
// context first: the servers run until it ends, and Close waits for them.
// Once it is cancelled, Close returns within seconds: every step is
// bounded.
func (g *Gateway) Close() {
	g.wg.Wait()
	g.closeShared() // the streams of 2026-07-28 clients (era.go)
	var wg sync.WaitGroup
	for _, s := range g.sessionList() {
		if ss := s.serverSession(); ss != nil {
			wg.Go(func() { _ = ss.Close() })
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(upstream.CloseTimeout):
		g.log.Warn("client sessions did not close in time", "timeout", upstream.CloseTimeout)
	}
}

// newEnricher makes the gateway's enricher, in the state its
// configuration gives; startEnrich runs it.
func (g *Gateway) newEnricher(noEnrich bool) *enrichment.Enricher {
	cfg := g.cfg.Gateway.Enrich
	if g.static {
		cfg.Enabled = false // a fixed catalog (Options.Static) is never enriched
	}
	opts := enrichment.Options{Config: cfg, StateDir: g.cfg.Gateway.StateDir, HintsPath: g.stateHintsPath(), Check: noEnrich,
		Coordinator: g.enrichCoordinator(), Sampler: &samplingProvider{g: g, model: cfg.Model}, Logger: g.log,
		Counted: g.metrics.EnrichCounted}
	if f, ok := g.feed.(EnrichFeed); ok {
		opts.Feed = f.EnrichChanged
	}
	return enrichment.New(enrichOwner{g}, opts)
}

// startEnrich starts the background enrichment when it is configured and
// can run. It is called by Start.
func (g *Gateway) startEnrich(ctx context.Context) {
	if g.enr.On() {
		g.metrics.EnrichOn(enrichStates)
	}
	if loop := g.enr.Start(g.enrichTiming); loop != nil {
		g.wg.Go(func() { loop(ctx) })
	}
}

// enrichCoordinator is the cluster's EnrichCoordinator, nil without one
// (or when the cluster shares no hints: without a cluster key each replica
// enriches on its own).
func (g *Gateway) enrichCoordinator() EnrichCoordinator {
	if !g.sharesValues() {
		return nil
	}
	c, _ := g.cluster.(EnrichCoordinator)
	return c
}

// enrichOwner is the gateway as its enricher sees it (enrichment.Owner):
// Snapshot, Visible, WaitSettled and Redact are the gateway's own; the
// hints it writes go into the index and to the other replicas.
type enrichOwner struct{ *Gateway }

// Rehint re-indexes the servers whose tools the hints change (hints.go).
func (o enrichOwner) Rehint(set *hints.Set) { o.rehint(set) }

// ShareHints shares the hints with the other replicas (cluster.go).
func (o enrichOwner) ShareHints(set *hints.Set) bool { return o.shareHints(set) }

// SharedHints returns the hints the other replicas shared (cluster.go).
func (o enrichOwner) SharedHints() *hints.Set { return o.sharedHintSet() }

// EnrichStatus returns the state of background enrichment: with
// Options.NoEnrich, as the state directory's record left it.
func (g *Gateway) EnrichStatus() EnrichStatus {
	if g.enr == nil {
		return EnrichStatus{State: EnrichOff}
	}
	return g.enr.Status(context.Background(), true)
}

var _ enrichment.Owner = enrichOwner{}
