package hints

import (
	"fmt"
	"sort"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Report says what applying a set to a catalog did.
type Report struct {
	// Entries is the number of entries in the set.
	Entries int
	// Applied counts the tools given hints.
	Applied int
	// Stale lists, sorted, the IDs of tools whose entry has a digest that
	// no longer matches their definition: those hints were not applied.
	Stale []string
	// Unknown lists, sorted, the IDs of entries that name no tool of the
	// catalog.
	Unknown []string
}

// String sums the report up in one line.
func (r Report) String() string {
	return fmt.Sprintf("%d entries: %d tools given hints, %d stale (ignored), %d naming no tool of the catalog",
		r.Entries, r.Applied, len(r.Stale), len(r.Unknown))
}

// For returns the hints for t: those of its entry, when it has one whose
// digest matches t's definition or has no digest. stale is true when it
// has an entry whose digest does not match (no hints are returned then).
func (s *Set) For(t *catalog.Tool) (hints []string, stale bool) {
	e, ok := s.Get(t.ID())
	if !ok {
		return nil, false
	}
	if e.Digest != "" && e.Digest != Digest(t) {
		return nil, true
	}
	return e.Hints, false
}

// Current reports whether the set holds hints for t that need not be
// written again: an entry whose digest matches t's definition, or one
// without a digest (hints written by hand, which enrich leaves alone).
func (s *Set) Current(t *catalog.Tool) bool {
	e, ok := s.Get(t.ID())
	return ok && (e.Digest == "" || e.Digest == Digest(t))
}

// Apply returns snap with the set's hints on its tools, as a new version
// of the snapshot (snap and its tools are not changed), and what it did.
// A tool without an entry keeps the hints it had. When no tool gets hints,
// snap itself is returned.
func (s *Set) Apply(snap *catalog.Snapshot) (*catalog.Snapshot, Report, error) {
	rep := Report{Entries: s.Len()}
	var changes []catalog.Change
	for _, srv := range snap.Servers() {
		n := 0
		for _, t := range srv.Tools {
			h, stale := s.For(t)
			if stale {
				rep.Stale = append(rep.Stale, t.ID())
			}
			if h != nil {
				n++
			}
		}
		if n == 0 {
			continue
		}
		rep.Applied += n
		changes = append(changes, catalog.Put(srv.WithHints(func(t *catalog.Tool) []string {
			if h, _ := s.For(t); h != nil {
				return h
			}
			return t.Hints
		})))
	}
	rep.Unknown = s.unknown(snap)
	sort.Strings(rep.Stale)
	if len(changes) == 0 {
		return snap, rep, nil
	}
	next, _, err := snap.Apply(changes...)
	if err != nil {
		return nil, rep, fmt.Errorf("apply hints: %w", err)
	}
	return next, rep, nil
}

// ApplyServer sets the set's hints on the tools of srv, a server that is
// not yet part of any snapshot (its tools are changed in place, which is
// only safe before anyone else can see them). It returns how many tools
// got hints and the IDs of those whose entry was stale.
func (s *Set) ApplyServer(srv *catalog.Server) (applied int, stale []string) {
	for _, t := range srv.Tools {
		h, st := s.For(t)
		if st {
			stale = append(stale, t.ID())
		}
		if h != nil {
			t.Hints = h
			applied++
		}
	}
	return applied, stale
}

// unknown lists, sorted, the IDs of entries that name no tool of snap.
func (s *Set) unknown(snap *catalog.Snapshot) []string {
	var out []string
	for _, e := range s.entries {
		if _, ok := snap.Tool(e.ID); !ok {
			out = append(out, e.ID)
		}
	}
	sort.Strings(out)
	return out
}
