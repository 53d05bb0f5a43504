package gateway

// Reloading the configuration. Reload compares a new configuration with
// the one in force, server by server:
//
//   - a server added (or enabled) is started, with its cached manifest
//     when the state directory has one for it;
//   - a server removed (or disabled) is stopped and its tools, prompts and
//     resources leave the catalog;
//   - a server whose entry changed in any way (command, args, env, cwd,
//     url, headers, alwaysLoad, keywords, naming, policy, timeouts...) is
//     stopped and started again; until it has listed its tools again, the
//     old ones stay when it runs the same program (same command, args or
//     url), else its cached manifest answers, or nothing;
//   - every other server keeps running, and keeps its session.
//
// The global policy (toolsearch.policy) is applied at once, to every
// listing, search and call. Other toolsearch settings (exposure, limits,
// listen, http, stateDir, cluster, tracing...) are read when serve starts:
// a reload that changes them says so (Diff.Unapplied) and leaves them as
// they were.
//
// Clients are told through the usual catalog-change path: sessions of MCP
// 2025-11-25 and earlier get notifications/tools/list_changed (and the
// prompts and resources ones), 2026-07-28 clients listening on
// subscriptions/listen get theirs on their subscription.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// Diff is what a reload changed. Server lists are keys, sorted.
type Diff struct {
	// Added servers were started, Removed ones stopped, Changed ones
	// stopped and started again with their new entry; Unchanged ones
	// kept running.
	Added, Removed, Changed, Unchanged []string
	// Policy reports that the global policy changed.
	Policy bool
	// Unapplied names the toolsearch settings that differ from those in
	// force and are read only when serve starts ("exposure", "limits",
	// ...): they keep their old values.
	Unapplied []string
}

// Empty reports whether the reload changed nothing at all.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 && !d.Policy && len(d.Unapplied) == 0
}

// String says what changed in one line, such as "added a; removed b;
// 3 unchanged".
func (d Diff) String() string {
	var parts []string
	list := func(verb string, keys []string) {
		if len(keys) > 0 {
			parts = append(parts, verb+" "+strings.Join(keys, ", "))
		}
	}
	list("added", d.Added)
	list("removed", d.Removed)
	list("restarted", d.Changed)
	if d.Policy {
		parts = append(parts, "policy changed")
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", len(d.Unchanged)))
	if len(d.Unapplied) > 0 {
		parts = append(parts, "not applied until restart: toolsearch."+strings.Join(d.Unapplied, ", toolsearch."))
	}
	return strings.Join(parts, "; ")
}

// reloadStopTimeout bounds waiting for a removed or changed server to
// stop: closing a session waits at most upstream.CloseTimeout, stopping a process
// a few seconds more.
const reloadStopTimeout = upstream.CloseTimeout + 10*time.Second

// Reload applies cfg, a new reading of the configuration, to the running
// gateway: servers added are started, servers removed are stopped,
// servers whose entry changed are restarted, and the others keep running
// with their sessions (see the top of reload.go). Clients are told of the
// changes with list_changed. A cfg the gateway cannot apply (a policy
// pattern that does not compile, a gateway serving a static catalog) is refused with an error
// and nothing changes. Reload may be called before Start (the servers then
// start with Start) and not after Start's context is done.
func (g *Gateway) Reload(ctx context.Context, cfg *config.Config) (Diff, error) {
	if cfg == nil {
		return Diff{}, errors.New("reload: no configuration")
	}
	if g.static {
		return Diff{}, errors.New("reload: the gateway serves a static catalog (Options.Static), not a configuration's servers; restart it with a configuration")
	}
	pol, err := compilePolicy(cfg)
	if err != nil {
		return Diff{}, fmt.Errorf("reload: %w", err)
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if g.run != nil && g.run.Err() != nil {
		return Diff{}, errors.New("reload: the gateway is stopping")
	}

	old := g.ups()
	diff := Diff{Unapplied: unappliedSettings(g.cfg.Gateway, cfg.Gateway),
		Policy: !reflect.DeepEqual(g.policyRules(), cfg.Gateway.Policy)}
	next := make(map[string]*upstream.Server, len(cfg.Servers))
	var stopping []*upstream.Server // old upstreams of removed and changed servers
	for _, s := range cfg.Enabled() {
		u, ok := old[s.Key]
		switch {
		case !ok:
			diff.Added = append(diff.Added, s.Key)
			next[s.Key] = g.newUpstream(s)
		case sameServer(u.Config(), s):
			diff.Unchanged = append(diff.Unchanged, s.Key)
			next[s.Key] = u
		default:
			diff.Changed = append(diff.Changed, s.Key)
			next[s.Key] = g.newUpstream(s)
			stopping = append(stopping, u)
		}
	}
	for _, k := range g.keys() {
		if _, ok := next[k]; !ok {
			diff.Removed = append(diff.Removed, k)
			stopping = append(stopping, old[k])
		}
	}
	slices.Sort(diff.Added)
	slices.Sort(diff.Changed)
	slices.Sort(diff.Unchanged)
	if diff.Empty() {
		return diff, nil
	}
	keys := make([]string, 0, len(next)+1)
	for k := range next {
		keys = append(keys, k)
	}
	logPolicyWarnings(g.log, pol.Warnings(g.policyKeys(keys))) // policycheck.go

	// From here on the new configuration is in force: calls to a changed
	// server wait for its new start rather than reach the old one.
	g.pol.Store(pol)
	rules := cfg.Gateway.Policy
	g.polRules = &rules
	g.calls.red.Store(redact.New(append(g.cfg.Secrets(), cfg.Secrets()...)...))
	g.setServers(next)
	g.renameView()

	if err := stopAll(ctx, stopping); err != nil {
		g.log.Warn("reload: servers still stopping; going on", "err", err)
	}
	g.applyReload(diff, old, next)
	if g.run != nil {
		for _, k := range append(slices.Clone(diff.Added), diff.Changed...) {
			next[k].Launch(g.run, &g.wg)
		}
	}
	return diff, nil
}

// renameView publishes the current catalog again with a resolver of the
// policy and servers now in force, so that what clients may see and call
// follows them at once; applyReload then publishes the catalog that goes
// with them (and logs what its names refuse).
func (g *Gateway) renameView() {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := g.cur.Load()
	nv := &view{snap: cur.snap, index: cur.index, tokens: cur.tokens, extras: cur.extras, fromCache: cur.fromCache}
	nv.names, _ = newResolver(nv.snap, nv.extras, g.nameRules())
	g.cur.Store(nv)
}

// stopAll stops the upstreams and waits until each has stopped, ctx ends
// or reloadStopTimeout passes.
func stopAll(ctx context.Context, ups []*upstream.Server) error {
	ctx, cancel := context.WithTimeout(ctx, reloadStopTimeout)
	defer cancel()
	for _, u := range ups {
		u.Stop()
	}
	for _, u := range ups {
		done := u.Done()
		if done == nil {
			continue // never started
		}
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("server %q: %w", u.Key(), ctx.Err())
		}
	}
	return nil
}

// applyReload puts the catalog in line with the reloaded servers: the
// tools of removed servers leave it; a changed server keeps its tools
// while it runs the same program, else starts from its cached manifest,
// or with none; an added one starts from its cached manifest. With the
// policy changed, every server's prompts and resources are filtered
// again. The sessions are then told.
func (g *Gateway) applyReload(diff Diff, old, next map[string]*upstream.Server) {
	g.mu.Lock()
	cur := g.cur.Load()
	nv := &view{snap: cur.snap, index: cur.index, tokens: cloneMap(cur.tokens),
		extras: cloneMap(cur.extras), fromCache: cloneMap(cur.fromCache)}
	var changes []catalog.Change
	var touched []string
	drop := func(k string) {
		if _, ok := cur.snap.Server(k); ok {
			changes = append(changes, catalog.Remove(k))
			touched = append(touched, k)
		}
		delete(nv.tokens, k)
		delete(nv.extras, k)
		delete(nv.fromCache, k)
	}
	for _, k := range diff.Removed {
		drop(k)
	}
	for _, k := range append(slices.Clone(diff.Added), diff.Changed...) {
		u := next[k]
		if prev, ok := old[k]; ok && upstream.Fingerprint(prev.Config()) == upstream.Fingerprint(u.Config()) {
			if m := prev.Listed(); m != nil {
				if srv, err := g.serverFrom(u.Config(), m.Tools); err == nil {
					// The same program: its tools stay until it lists again.
					u.NoteCached(m, g.cacheFresh)
					changes = append(changes, catalog.Put(srv))
					touched = append(touched, k)
					nv.tokens[k], nv.fromCache[k] = m.Tokens, true
					continue
				}
			}
		}
		if m, srv := g.cachedServer(u.Config()); m != nil {
			u.NoteCached(m, g.cacheFresh)
			changes = append(changes, catalog.Put(srv))
			touched = append(touched, k)
			nv.tokens[k], nv.fromCache[k] = m.Tokens, true
			continue
		}
		drop(k)
	}
	if len(changes) > 0 {
		snap, _, err := g.cat.Apply(changes...)
		if err != nil {
			// Every change is built from a checked server: this is a bug.
			g.log.Error("reload: the catalog refused the change; keeping the old tools", "err", err)
		} else {
			nv.snap, nv.index = snap, cur.index.Update(snap, touched...)
		}
	}
	for k, u := range next {
		if diff.Policy || slices.Contains(touched, k) {
			if m := u.Listed(); m != nil {
				nv.extras[k] = allowedExtras(g.policy(), k, m)
			}
		}
	}
	g.nameView(nv)
	g.cur.Store(nv)
	g.mu.Unlock()
	g.indexChanged()
	g.log.Info("configuration reloaded", "added", len(diff.Added), "removed", len(diff.Removed),
		"restarted", len(diff.Changed), "unchanged", len(diff.Unchanged), "policy_changed", diff.Policy, "version", nv.snap.Version())
	g.refreshBuiltins() // built-in tools (builtin.go)
	g.syncSessions()
}

// policyRules returns the global policy globs in force.
func (g *Gateway) policyRules() config.Rules {
	if g.polRules != nil {
		return *g.polRules
	}
	return g.cfg.Gateway.Policy
}

// sameServer reports whether two entries of a server are the same in
// every field (a problem compared by its message).
func sameServer(a, b *config.Server) bool {
	x, y := *a, *b
	xp, yp := fmt.Sprint(x.Problem), fmt.Sprint(y.Problem)
	x.Problem, y.Problem = nil, nil
	return xp == yp && reflect.DeepEqual(x, y)
}

// unappliedSettings names the settings under "toolsearch" (besides the
// policy, which Reload applies) whose values differ between a and b.
func unappliedSettings(a, b config.Gateway) []string {
	type setting struct {
		name string
		same bool
	}
	settings := []setting{
		{"exposure", a.Exposure == b.Exposure},
		{"threshold", a.ThresholdPercent == b.ThresholdPercent},
		{"contextWindow", a.ContextWindow == b.ContextWindow},
		{"listen", a.Listen == b.Listen},
		{"stateDir", a.StateDir == b.StateDir},
		{"lazy", a.Lazy == b.Lazy},
		{"limits", a.Limits == b.Limits},
		{"builtins", string(a.Builtins) == string(b.Builtins)},
		{"http", reflect.DeepEqual(a.Serve, b.Serve)},
		{"hints", a.Hints == b.Hints},
		{"enrich", a.Enrich == b.Enrich},
		{"clients", reflect.DeepEqual(a.Clients, b.Clients)},
		{"cluster", reflect.DeepEqual(a.Cluster, b.Cluster)},
		{"dashboard", a.Dashboard == b.Dashboard},
		{"learning", a.Learning == b.Learning},
		{"tracing", reflect.DeepEqual(a.Tracing, b.Tracing)},
	}
	var out []string
	for _, s := range settings {
		if !s.same {
			out = append(out, s.name)
		}
	}
	return out
}
