package gateway

// Publishing: a server's fresh or cached manifest becomes a catalog server
// (its definitions normalised, hinted and checked for impostors), and
// fresh ones are put into the view in batches (arrivals.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// arrive puts a into the view with the others waiting, and returns once it
// is there. The first to arrive while nobody is applying applies the batch
// (and hands on to a new goroutine if more arrived meanwhile).
func (g *Gateway) arrive(a *arrival) {
	a.done = make(chan struct{})
	g.arr.mu.Lock()
	g.arr.pending = append(g.arr.pending, a)
	lead := !g.arr.leading
	g.arr.leading = true
	g.arr.mu.Unlock()
	if lead {
		g.leadArrivals()
	}
	<-a.done
}

// leadArrivals applies the manifests waiting, after the window while other
// servers are starting; if more arrived meanwhile, a new goroutine applies
// them, so that the caller's own server is not kept waiting.
func (g *Gateway) leadArrivals() {
	g.gatherArrivals()
	g.arr.mu.Lock()
	batch := g.arr.pending
	g.arr.pending = nil
	g.arr.mu.Unlock()
	g.applyArrivals(batch)
	g.arr.mu.Lock()
	more := len(g.arr.pending) > 0
	g.arr.leading = more
	g.arr.mu.Unlock()
	if more {
		go g.leadArrivals()
	}
}

// gatherArrivals waits, at most arrivalWindow, while a server with no
// manifest waiting is still making its first start.
func (g *Gateway) gatherArrivals() {
	deadline := time.Now().Add(arrivalWindow)
	for g.othersStarting() && time.Now().Before(deadline) {
		time.Sleep(arrivalPoll)
	}
}

// othersStarting reports whether a server with no manifest waiting has not
// finished its first start (ready, failed or idle).
func (g *Gateway) othersStarting() bool {
	g.arr.mu.Lock()
	waiting := make(map[*upstream.Server]bool, len(g.arr.pending))
	for _, a := range g.arr.pending {
		waiting[a.u] = true
	}
	g.arr.mu.Unlock()
	for _, u := range g.ups() {
		if waiting[u] {
			continue
		}
		select {
		case <-u.Settled():
		default:
			return true
		}
	}
	return false
}

// applyArrivals puts every manifest of batch whose server is still
// configured into the catalog and the index at once, then tells the
// sessions, and marks each arrival done.
func (g *Gateway) applyArrivals(batch []*arrival) {
	defer func() {
		for _, a := range batch {
			close(a.done)
		}
	}()
	g.mu.Lock()
	ups := g.ups()
	var live []*arrival
	for _, a := range batch {
		// A server a reload removed or replaced, listing as it stopped,
		// is left out.
		if ups[a.u.Key()] == a.u {
			live = append(live, a)
		}
	}
	if len(live) == 0 {
		g.mu.Unlock()
		return
	}
	old := g.cur.Load()
	changes := make([]catalog.Change, len(live))
	for i, a := range live {
		changes[i] = catalog.Put(a.srv)
	}
	snap, diff, err := g.cat.Apply(changes...)
	if err == nil {
		for _, a := range live {
			a.applied = true
		}
	} else {
		// One of them is refused: each is applied alone, so that only
		// the one refused fails.
		diff = catalog.Diff{}
		for _, a := range live {
			s, d, err := g.cat.Apply(catalog.Put(a.srv))
			if err != nil {
				a.err = fmt.Errorf("server %q: %w", a.u.Key(), err)
				continue
			}
			a.applied, snap = true, s
			diff.Added = append(diff.Added, d.Added...)
			diff.Removed = append(diff.Removed, d.Removed...)
			diff.Changed = append(diff.Changed, d.Changed...)
		}
	}
	var keys []string
	for _, a := range live {
		if a.applied {
			keys = append(keys, a.u.Key())
		}
	}
	if len(keys) == 0 {
		g.mu.Unlock()
		return
	}
	nv := &view{snap: snap, index: old.index.Update(snap, keys...),
		tokens: cloneMap(old.tokens), extras: cloneMap(old.extras), fromCache: cloneMap(old.fromCache)}
	for _, a := range live {
		if !a.applied {
			continue
		}
		k := a.u.Key()
		nv.tokens[k] = a.m.Tokens
		nv.extras[k] = allowedExtras(g.policy(), k, a.m)
		delete(nv.fromCache, k)
		a.added, a.removed, a.change = countOf(diff.Added, k), countOf(diff.Removed, k), countOf(diff.Changed, k)
		a.version = snap.Version()
	}
	g.nameView(nv)
	g.cur.Store(nv)
	g.mu.Unlock()
	g.indexChanged()
	g.enr.Kick()        // background enrichment (package enrichment)
	g.feedServers()     // feed.go
	g.refreshBuiltins() // built-in tools (builtin.go)
	g.syncSessions()
}

// countOf counts the tool IDs of server key in ids.
func countOf(ids []string, key string) int {
	n := 0
	for _, id := range ids {
		if strings.HasPrefix(id, key+catalog.IDSeparator) {
			n++
		}
	}
	return n
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
