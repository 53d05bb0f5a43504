package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/search"
)

// The search index of the whole catalog is kept in the state directory
// next to the manifests. At start, when the cached manifests make the same
// catalog as when it was saved, the gateway loads it instead of analysing
// every tool, which is most of the time to its first answer. It is saved
// again, in the background, once the catalog has stopped changing for a
// moment.

// indexSaveQuiet is how long the catalog must stay unchanged before the
// index is saved; indexSaveMaxWait bounds the wait while it keeps changing.
var (
	indexSaveQuiet   = 2 * time.Second
	indexSaveMaxWait = 30 * time.Second
)

func indexPath(dir string) string { return filepath.Join(dir, "index.bin") }

// loadIndex returns the saved index for snap, or nil when there is none or
// it is for another catalog.
func (g *Gateway) loadIndex(snap *catalog.Snapshot) *search.Index {
	dir := g.cfg.Gateway.StateDir
	if dir == "" || g.demo {
		return nil
	}
	data, err := os.ReadFile(indexPath(dir))
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

// saveIndexes saves the index whenever the catalog settles, until ctx ends.
func (g *Gateway) saveIndexes(ctx context.Context) {
	if g.cfg.Gateway.StateDir == "" || g.demo {
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
			case <-time.After(indexSaveQuiet):
				break settle
			case <-deadline.C:
				break settle
			}
		}
		deadline.Stop()
		if err := g.saveIndex(); err != nil {
			g.log.Warn("could not save the search index", "err", err)
		}
	}
}

// saveIndex saves an index of the current catalog unless the one saved
// last is for the same catalog.
func (g *Gateway) saveIndex() error {
	snap := g.cur.Load().snap
	fp := search.Fingerprint(snap)
	if bytes.Equal(fp, g.savedIndex) {
		return nil
	}
	data, err := search.Build(snap).MarshalBinary()
	if err != nil {
		return err
	}
	dir := g.cfg.Gateway.StateDir
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
