package evaluate

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// The partial-hints measurement: a user enriches some servers and not the
// others, or adds a server after enriching. Hints for a random half of the
// shared catalog's servers (one draw per seed); the dev queries split by
// whether their gold tools have hints. Queries whose gold has none must do
// no worse than with no hints at all: never at hit@5, and at hit@1 not on
// average over the draws and by at most maxDrawLoss in any one (a draw can
// put a hinted tool that was a near tie just above a gold tool without
// hints, as a draw can put one below). Queries whose gold has hints must
// keep most of what full hints give them.

// partialSeeds are the draws measured (fixed, so a failure repeats).
var partialSeeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// minKeep is the share of the full-coverage gain that queries whose gold
// has hints must keep when only half the servers have hints.
const minKeep = 0.8

// maxDrawLoss bounds how far hit@1 of the queries whose gold has no hints
// may fall in one draw (a few queries of the seventy or so).
const maxDrawLoss = 0.05

// hits is, per query ID, whether a gold tool was first and whether one was
// in the first five.
type hits map[string][2]bool

// rate returns hit@1 and hit@5 over the queries ids.
func (h hits) rate(ids []string) (at1, at5 float64) {
	if len(ids) == 0 {
		return 0, 0
	}
	var a, b int
	for _, id := range ids {
		if h[id][0] {
			a++
		}
		if h[id][1] {
			b++
		}
	}
	return float64(a) / float64(len(ids)), float64(b) / float64(len(ids))
}

// queryHits runs every query against ix.
func queryHits(t *testing.T, ix *search.Index, qs []Query) hits {
	t.Helper()
	rep, err := Run(context.Background(), ix, qs, 5)
	if err != nil {
		t.Fatal(err)
	}
	out := hits{}
	for _, q := range qs {
		out[q.ID] = [2]bool{true, true}
	}
	for _, m := range rep.Misses {
		out[m.ID] = [2]bool{false, m.Rank >= 1 && m.Rank <= 5}
	}
	return out
}

// serverOf returns the server key of a tool ID.
func serverOf(id string) string {
	key, _, _ := strings.Cut(id, catalog.IDSeparator)
	return key
}

// halfOf returns a random half of the servers, drawn with seed.
func halfOf(servers []string, seed uint64) map[string]bool {
	r := rand.New(rand.NewPCG(seed, seed))
	perm := r.Perm(len(servers))
	out := map[string]bool{}
	for _, i := range perm[:len(servers)/2] {
		out[servers[i]] = true
	}
	return out
}

// TestPartialHintsSharedCatalog measures partial hint coverage on the
// shared catalog and dev queries against no hints and full hints. It
// runs without -race (.ci/run runs it so): the figures are the point,
// and the race detector would make them slow.
func TestPartialHintsSharedCatalog(t *testing.T) {
	if raceEnabled {
		t.Skip("the measurement on the shared catalog runs without -race")
	}
	snap, qs := loadShared(t)
	set, err := hints.LoadFile(sharedtest.HintsPath(t))
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := set.Apply(snap)
	if err != nil {
		t.Fatal(err)
	}
	none, all := queryHits(t, search.Build(snap), qs), queryHits(t, search.Build(full), qs)
	var servers []string
	for _, s := range snap.Servers() {
		servers = append(servers, s.Key)
	}
	slices.Sort(servers)
	seeds := partialSeeds
	var sumGot, sumNone float64 // hit@1 of the queries whose gold has no hints
	for _, seed := range seeds {
		hinted := halfOf(servers, seed)
		part := hints.New()
		for _, e := range set.Entries() {
			if hinted[serverOf(e.ID)] {
				if err := part.Put(e); err != nil {
					t.Fatal(err)
				}
			}
		}
		partial, _, err := part.Apply(snap)
		if err != nil {
			t.Fatal(err)
		}
		got := queryHits(t, search.Build(partial), qs)
		var bare, enriched []string // gold without hints, gold all with hints
		for _, q := range qs {
			n := 0
			for _, g := range q.Gold {
				if hinted[serverOf(g)] {
					n++
				}
			}
			switch n {
			case 0:
				bare = append(bare, q.ID)
			case len(q.Gold):
				enriched = append(enriched, q.ID)
			}
		}
		b1, b5 := got.rate(bare)
		n1, n5 := none.rate(bare)
		t.Logf("seed %2d: gold without hints (%d queries): hit@1 %.3f hit@5 %.3f; with no hints at all %.3f %.3f",
			seed, len(bare), b1, b5, n1, n5)
		sumGot, sumNone = sumGot+b1, sumNone+n1
		if b5 < n5 || b1 < n1-maxDrawLoss {
			t.Errorf("seed %d: queries whose gold has no hints fall from %.3f/%.3f (no hints at all) to %.3f/%.3f",
				seed, n1, n5, b1, b5)
		}
		e1, e5 := got.rate(enriched)
		z1, z5 := none.rate(enriched)
		f1, f5 := all.rate(enriched)
		t.Logf("seed %2d: gold with hints (%d queries): hit@1 %.3f hit@5 %.3f; no hints %.3f %.3f; full hints %.3f %.3f",
			seed, len(enriched), e1, e5, z1, z5, f1, f5)
		for _, m := range []struct {
			name                string
			partial, none, full float64
		}{{"hit@1", e1, z1, f1}, {"hit@5", e5, z5, f5}} {
			if gain := m.full - m.none; gain > 0 && m.partial-m.none < minKeep*gain {
				t.Errorf("seed %d: queries whose gold has hints keep %.3f of the %s gain full hints give (%.3f → %.3f), want at least %.1f",
					seed, (m.partial-m.none)/gain, m.name, m.none, m.full, minKeep)
			}
		}
	}
	n := float64(len(seeds))
	t.Logf("over %d draws, gold without hints: hit@1 %.3f, with no hints at all %.3f", len(seeds), sumGot/n, sumNone/n)
	if sumGot < sumNone {
		t.Errorf("over %d draws, queries whose gold has no hints fall from hit@1 %.3f (no hints at all) to %.3f", len(seeds), sumNone/n, sumGot/n)
	}
}
