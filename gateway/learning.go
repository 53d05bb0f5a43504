package gateway

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/usage"
)

// Learning from use (toolsearch.learning, docs/learning.md): after a
// session's search, the first call of one of the tools it returned,
// within learnWindow, records (the query's terms → that tool) in a
// usage.Store, and every later search ranks a tool called after queries
// like it higher, by a factor of at most 1 + search.Weights.Learned
// (twice its score by default). Only the analysed terms of the query and
// the tool's ID are kept: never the call's arguments or its result.
//
// What a client can do to others' ranking is bounded: it can record only
// tools a search returned to it, once per search; a recorded tool gains
// only on queries it matches on its own words, at most the factor above,
// and never above a tool named exactly or by select:. Sessions of
// 2026-07-28 clients, which have no session to tie a search to a call,
// record nothing (their searches still learn).
//
// The record is kept in the state directory's usage.json. A gateway saves
// what it recorded since its last save by merging it into the file as it
// is then, so that gateways sharing a state directory (one per client, as
// stdio clients start them) add up rather than overwrite each other. With
// toolsearch.cluster on, the replicas share one record in Redis the same
// way (a shared value of kind "usage"), and each keeps its file as well:
// a replica starts from the shared record when there is one, and merges
// into it at each save. The write back is made only if the record is
// still the one read (SwapBlob), so two replicas saving at the same
// instant both count: the later reads again and merges once more. The
// shared record lives for toolsearch.cluster.ttl after it was last read or
// written, as every shared value does.

// learnWindow is how long after a search a call still counts as chosen
// from its results.
const learnWindow = 2 * time.Minute

// learnSaveEvery is how often new records are saved.
const learnSaveEvery = 30 * time.Second

// sharedUsage and sharedUsageName name the record replicas share.
const (
	sharedUsage     = "usage"
	sharedUsageName = "learned"
)

// pendingSearch is a session's last search, waiting for the call it
// leads to.
type pendingSearch struct {
	terms []string
	tools map[string]bool // the IDs of the tools it returned
	at    time.Time
}

// openLearning loads the learned record when the configuration turns
// learning on. A file that cannot be read or is refused leaves learning
// off for this run, with an error in the log, and the file as it is.
func (g *Gateway) openLearning() {
	lc := g.cfg.Gateway.Learning
	if !lc.Enabled {
		return
	}
	l := &learning{opt: usage.Options{HalfLife: lc.HalfLife, MaxEntries: lc.MaxEntries}, window: learnWindow}
	if dir := g.cfg.Gateway.StateDir; dir != "" {
		l.path = filepath.Join(dir, usage.FileName)
	}
	s, err := g.loadLearned(context.Background(), l)
	if err != nil {
		g.log.Error("learning is off for this run: "+err.Error(), "fix", "toolsearch usage reset clears the file")
		return
	}
	l.store.Store(s)
	g.learn = l
	g.log.Info("learning from use", "entries", s.Len(), "file", l.path, "halfLife", l.opt.HalfLife)
}

// loadLearned reads the record to start from or merge into: the shared
// one when the cluster has it, else the state directory's file, else an
// empty one. A shared record that is refused is logged and passed over
// (the next save replaces it); a refused file is an error.
func (g *Gateway) loadLearned(ctx context.Context, l *learning) (*usage.Store, error) {
	s, _, err := g.loadLearnedShared(ctx, l)
	return s, err
}

// loadLearnedShared is loadLearned, with the shared value it read (nil
// for none), for a SwapBlob that writes back over it only.
func (g *Gateway) loadLearnedShared(ctx context.Context, l *learning) (*usage.Store, []byte, error) {
	var data []byte
	if g.sharesValues() {
		cctx, cancel := context.WithTimeout(ctx, clusterTimeout)
		var err error
		data, err = g.cluster.GetBlob(cctx, sharedUsage, sharedUsageName)
		cancel()
		switch {
		case err != nil:
			g.log.Warn("the shared learned usage could not be read; using the state directory's", "err", err)
		case data != nil:
			s, err := usage.Decode(data, l.opt, time.Now())
			if err == nil {
				return s, data, nil
			}
			g.log.Warn("the shared learned usage is refused; the next save replaces it", "err", err)
		}
	}
	var s *usage.Store
	var err error
	if l.path != "" {
		s, err = usage.Load(l.path, l.opt)
	} else {
		s, err = usage.New(l.opt)
	}
	return s, data, err
}

// maxSwaps bounds how often a save reads and merges again because another
// replica saved first.
const maxSwaps = 5

// learned is the Learner searches rank with, nil when learning is off.
func (g *Gateway) learned() search.Learner {
	if g.learn == nil {
		return nil
	}
	return g.learn.store.Load().SharesNow
}

// noteSearch remembers a session's search for the call that may follow:
// a single keyword query (a select:, an exact name, a regex or several
// queries teach nothing about words) with the tools it returned.
func (s *session) noteSearch(query string, queries []string, res search.Result) {
	l := s.g.learn
	if l == nil || s.shared {
		return
	}
	var p *pendingSearch
	if len(queries) == 0 && res.Form == search.FormKeyword && len(res.Hits) > 0 {
		if terms := s.g.cur.Load().index.Terms(query); len(terms) > 0 {
			p = &pendingSearch{terms: terms, tools: make(map[string]bool, len(res.Hits)), at: time.Now()}
			for _, h := range res.Hits {
				p.tools[h.Tool.ID()] = true
			}
		}
	}
	s.mu.Lock()
	s.lastSearch = p
	s.mu.Unlock()
}

// noteCall records a call of the tool to (none when its name resolved to
// no tool), when it is the first call of a tool the session's last search
// returned, within the window. It keeps the query's terms and the tool's
// ID, nothing of the call itself.
func (s *session) noteCall(to target) {
	l := s.g.learn
	if l == nil || s.shared {
		return
	}
	s.mu.Lock()
	p := s.lastSearch
	s.mu.Unlock()
	if p == nil {
		return
	}
	if to.tool == nil || !p.tools[to.tool.ID()] {
		return
	}
	s.mu.Lock()
	if s.lastSearch != p { // another call took it
		s.mu.Unlock()
		return
	}
	s.lastSearch = nil
	s.mu.Unlock()
	now := time.Now()
	if now.Sub(p.at) > l.window {
		return
	}
	l.record(s.g, p.terms, to.tool.ID(), now)
}

// saveLearning merges the records made since the last save into the file
// as it is now and writes it back; the merged record is then the one
// searches rank with. A file refused meanwhile is left as it is, and the
// records are kept for the next try. Calls are not held up by the file:
// records made while it is written are added to the merged record after.
func (g *Gateway) saveLearning() error {
	l := g.learn
	if l == nil || (l.path == "" && !g.sharesValues()) {
		return nil
	}
	l.mu.Lock()
	batch := l.new
	l.new = nil
	l.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	requeue := func() {
		l.mu.Lock()
		l.new = append(batch, l.new...)
		l.mu.Unlock()
	}
	ctx := context.Background() // a save at shutdown outlives the run
	var merged *usage.Store
	shared := false
	for try := 1; ; try++ {
		m, old, err := g.loadLearnedShared(ctx, l)
		if err != nil {
			requeue()
			return err
		}
		for _, r := range batch {
			if err := m.Record(r.terms, r.tool, r.at); err != nil {
				requeue()
				return fmt.Errorf("save learned usage: %w", err)
			}
		}
		merged = m
		if !g.sharesValues() {
			break
		}
		again, err := g.shareLearned(ctx, old, merged)
		if again && try < maxSwaps {
			continue // another replica saved meanwhile: merge into its record
		}
		if again {
			err = fmt.Errorf("other replicas saved %d times while this one merged", maxSwaps)
		}
		switch {
		case err == nil:
			shared = true
		case l.path == "":
			requeue()
			return fmt.Errorf("share learned usage: %w", err)
		default:
			g.log.Warn("learned usage not shared; saved in the state directory", "err", err)
		}
		break
	}
	if l.path != "" {
		if err := merged.Save(l.path); err != nil {
			if !shared { // else the batch is in the shared record: not again
				requeue()
			}
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.new { // recorded while the file was written
		_ = merged.Record(r.terms, r.tool, r.at) // checked when first recorded
	}
	l.store.Store(merged)
	return nil
}

// shareLearned writes the merged record to the cluster over old, the
// shared value it was merged into; again is true when another replica
// wrote one meanwhile, and nothing was written.
func (g *Gateway) shareLearned(ctx context.Context, old []byte, merged *usage.Store) (again bool, err error) {
	data, err := merged.Encode()
	if err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	sw, ok := g.cluster.(BlobSwapper)
	if !ok {
		return false, g.cluster.PutBlob(cctx, sharedUsage, sharedUsageName, data)
	}
	swapped, err := sw.SwapBlob(cctx, sharedUsage, sharedUsageName, old, data)
	return err == nil && !swapped, err
}

// saveLearningLoop saves new records every learnSaveEvery, and once more
// when ctx ends.
func (g *Gateway) saveLearningLoop(ctx context.Context) {
	tick := time.NewTicker(learnSaveEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := g.saveLearning(); err != nil {
				g.log.Warn("learned usage not saved", "err", err)
			}
			return
		case <-tick.C:
			if err := g.saveLearning(); err != nil && !errors.Is(err, context.Canceled) {
				g.log.Warn("learned usage not saved", "err", err)
			}
		}
	}
}
