package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// The search index of the whole catalog is kept in the state directory
// next to the manifests. At start, when the cached manifests make the same
// catalog as when it was saved, the gateway loads it instead of analysing
// every tool, which is most of the time to its first answer. It is saved
// again, in the background, once the catalog has stopped changing for a
// moment.
//
// At that moment an index that updates have split into segments is also
// replaced by one built whole: keyword queries on a whole index read only
// the blocks of tools that can reach the top results.

// indexSaveQuiet is how long the catalog must stay unchanged before the
// index is saved (each gateway takes it when it is made: Gateway.indexQuiet);
// indexSaveMaxWait bounds the wait while it keeps changing.
var (
	indexSaveQuiet   = 2 * time.Second
	indexSaveMaxWait = 30 * time.Second
)

func indexPath(dir string) string { return filepath.Join(dir, "index.bin") }

// loadIndex returns the saved index for snap, or nil when there is none or
// maxIndexBytes bounds a saved index read back (about 320 bytes a tool:
// 32 MB for 100,000 tools).
const maxIndexBytes = 512 << 20

// it is for another catalog.
func (g *Gateway) loadIndex(snap *catalog.Snapshot) *search.Index {
	dir := g.cfg.Gateway.StateDir
	if dir == "" || g.static {
		return nil
	}
	data, err := safefile.ReadFile(indexPath(dir), maxIndexBytes)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			g.log.Warn("could not read the saved search index", "err", err)
		}
		return nil
	}
	ix, err := search.Load(snap, data)
	switch {
	case errors.Is(err, search.ErrStale):
		g.log.Debug("the saved search index is for another catalog; building it", "err", err)
		return nil
	case err != nil:
		g.log.Warn("ignoring the saved search index", "err", err)
		return nil
	}
	g.savedIndex = ix.SavedFingerprint()
	return ix
}

// indexChanged tells the saver the catalog changed.
func (g *Gateway) indexChanged() {
	select {
	case g.indexDirty <- struct{}{}:
	default:
	}
}

// saveIndexes settles the index whenever the catalog settles, until ctx
// ends.
func (g *Gateway) saveIndexes(ctx context.Context) {
	if g.static {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.indexDirty:
		}
		deadline := time.NewTimer(indexSaveMaxWait)
	settle:
		for {
			select {
			case <-ctx.Done():
				deadline.Stop()
				return
			case <-g.indexDirty:
			case <-time.After(g.indexQuiet):
				break settle
			case <-deadline.C:
				break settle
			}
		}
		deadline.Stop()
		if err := g.settleIndex(); err != nil {
			g.log.Warn("could not save the search index", "err", err)
		}
		g.releaseStartMemory()
	}
}

// releaseStartMemory gives the memory a start used and no longer holds
// back to the system, once, when the catalog first settles with every
// server past its first start. Starting many servers makes garbage (their
// listings read, decoded and indexed) many times the catalog's size; the
// runtime would keep most of it mapped for minutes, as if the next start
// were due. A forced collection of a heap of tens of megabytes costs a few
// milliseconds, once.
func (g *Gateway) releaseStartMemory() {
	if g.startReleased {
		return
	}
	for _, k := range g.keys() {
		select {
		case <-g.ups()[k].Settled():
		default:
			return // more arrivals to come: the next settle releases
		}
	}
	g.startReleased = true
	debug.FreeOSMemory()
}

// startIndex is the index a gateway starts with for snap: the state
// directory's saved one, else the one another replica shared, else one
// built here (counted in indexBuilds). An index not yet known to be in the
// cluster is shared once the catalog settles, including one read from the
// state directory: a replica that restarts with its disk shares what it
// loaded, so that a new replica need not build it.
func (g *Gateway) startIndex(snap *catalog.Snapshot) *search.Index {
	ix := g.loadIndex(snap)
	if ix == nil {
		ix = g.loadSharedIndex(snap) // another replica's (cluster.go)
	}
	if ix == nil {
		g.indexBuilds.Add(1)
		ix = search.Build(snap)
		g.indexChanged()
	} else if g.sharesValues() && g.sharedIndex == nil {
		g.indexChanged()
	}
	return ix
}

// settleIndex replaces the current index by one built whole when updates
// split it, saves an index of the current catalog in the state directory
// unless the one saved last is for the same catalog, and shares it with
// the other replicas unless the one shared last is.
func (g *Gateway) settleIndex() error {
	v := g.cur.Load()
	snap := v.snap
	dir := g.cfg.Gateway.StateDir
	if g.reshareIndex.Swap(false) {
		g.sharedIndex = nil
	}
	share := g.sharesValues()
	var fp []byte
	if dir != "" || share {
		fp = search.Fingerprint(snap)
	}
	save := dir != "" && !bytes.Equal(fp, g.savedIndex)
	share = share && !bytes.Equal(fp, g.sharedIndex)
	if !save && !share && v.index.Compact() {
		return nil
	}
	whole := v.index
	if !whole.Compact() {
		whole = search.Build(snap)
		g.mu.Lock()
		if cur := g.cur.Load(); cur.snap == snap {
			nv := &view{snap: cur.snap, index: whole, tokens: cur.tokens, extras: cur.extras,
				fromCache: cur.fromCache, names: cur.names}
			g.cur.Store(nv)
		}
		g.mu.Unlock()
	}
	if !save && !share {
		return nil
	}
	data, err := whole.MarshalBinary()
	if err != nil {
		return err
	}
	if share && g.shareIndex(snap, fp, data) { // for the other replicas (cluster.go)
		g.sharedIndex = fp
	}
	if !save {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save search index: %w", err)
	}
	f, err := os.CreateTemp(dir, "index.*.tmp")
	if err != nil {
		return fmt.Errorf("save search index: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), indexPath(dir))
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save search index: %w", werr)
	}
	g.savedIndex = fp
	g.log.Debug("saved the search index", "tools", len(snap.Tools()), "bytes", len(data))
	return nil
}
