package gateway

// Search hints (package hints): phrasings written for each tool ahead of
// time, which the index searches. The gateway reads the hints other
// replicas shared (cluster.go), then the state directory's hints.jsonl
// (written by toolsearch enrich, or by the gateway's own background
// enrichment, package enrichment), and then the file toolsearch.hints
// names, each winning over the ones before. Hints are put on a server's tools as the
// server is built, before it joins the catalog: from a cached manifest at
// start and at every publish, so a server's index always has the hints
// known when it was last indexed. Hints written while the gateway runs
// re-index the servers whose tools they change (rehint).

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
)

// hintsFile is the state directory's hints file.
const hintsFile = "hints.jsonl"

// stateHintsPath is the state directory's hints file, "" without a state
// directory.
func (g *Gateway) stateHintsPath() string {
	if g.cfg.Gateway.StateDir == "" {
		return ""
	}
	return filepath.Join(g.cfg.Gateway.StateDir, hintsFile)
}

// loadHints reads the hints files. The state directory's file is a cache:
// when it cannot be read it is ignored, with a warning. The configured
// file is the user's: when it cannot be read, the gateway does not start.
func (g *Gateway) loadHints() error {
	set := hints.New()
	shared := g.sharedHintSet() // other replicas' (cluster.go)
	if shared != nil {
		set.Merge(shared)
	}
	if p := g.stateHintsPath(); p != "" {
		s, err := hints.LoadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			g.log.Warn("ignoring the state directory's hints file", "err", err)
		default:
			set.Merge(s)
			if shared == nil || !sameHints(shared, s) {
				g.shareHints(s)
			}
		}
	}
	if p := g.cfg.Gateway.Hints; p != "" {
		s, err := hints.LoadFile(p)
		if err != nil {
			return fmt.Errorf("toolsearch.hints: %w", err)
		}
		g.userHints = s
		set.Merge(s)
	}
	if set.Len() > 0 {
		g.log.Info("search hints loaded", "tools", set.Len())
	}
	g.hintSet.Store(set)
	return nil
}

// withHints puts the known hints on the tools of srv, a server just built
// and not yet in any snapshot, and returns it.
func (g *Gateway) withHints(srv *catalog.Server) *catalog.Server {
	set := g.hintSet.Load()
	if set == nil || set.Len() == 0 {
		return srv
	}
	if _, stale := set.ApplyServer(srv); len(stale) > 0 && g.firstTime(srv.Key+"\x00stale hints") {
		g.log.Info("some search hints were written for older tool definitions and are ignored until they are written again",
			"server", srv.Key, "tools", len(stale))
	}
	return srv
}

// rehint takes hints written while the gateway runs (fresh, from the
// state directory's file) and re-indexes the servers whose tools they
// change. Tool definitions are unchanged, so clients are told nothing.
// When no tool's hints change, it changes nothing.
func (g *Gateway) rehint(fresh *hints.Set) {
	// The hints known stay (those other replicas shared at start are in
	// no file here); fresh ones win, and the configured file over both.
	set := hints.New()
	if old := g.hintSet.Load(); old != nil {
		set.Merge(old)
	}
	set.Merge(fresh)
	if g.userHints != nil {
		set.Merge(g.userHints)
	}
	g.hintSet.Store(set)
	g.mu.Lock()
	old := g.cur.Load()
	var changes []catalog.Change
	var keys []string
	for _, srv := range old.snap.Servers() {
		if !hintsChange(srv, set) {
			continue
		}
		keys = append(keys, srv.Key)
		changes = append(changes, catalog.Put(srv.WithHints(func(t *catalog.Tool) []string {
			if h, _ := set.For(t); h != nil {
				return h
			}
			return t.Hints
		})))
	}
	if len(changes) == 0 {
		g.mu.Unlock()
		return
	}
	snap, _, err := g.cat.Apply(changes...)
	if err != nil {
		g.mu.Unlock()
		g.log.Warn("could not apply new search hints", "err", err)
		return
	}
	nv := &view{snap: snap, index: old.index.Update(snap, keys...), tokens: cloneMap(old.tokens), extras: cloneMap(old.extras), fromCache: cloneMap(old.fromCache)}
	g.nameView(nv)
	g.cur.Store(nv)
	g.mu.Unlock()
	g.indexChanged()
	g.log.Info("search hints applied", "servers", len(keys))
}

// sameHints reports whether every entry of b is in a, alike.
func sameHints(a, b *hints.Set) bool {
	for _, e := range b.Entries() {
		x, ok := a.Get(e.ID)
		if !ok || x.Digest != e.Digest || !slices.Equal(x.Hints, e.Hints) {
			return false
		}
	}
	return true
}

// hintsChange reports whether set gives some tool of srv other hints than
// it has.
func hintsChange(srv *catalog.Server, set *hints.Set) bool {
	for _, t := range srv.Tools {
		h, _ := set.For(t)
		if h != nil && !slices.Equal(h, t.Hints) {
			return true
		}
	}
	return false
}
