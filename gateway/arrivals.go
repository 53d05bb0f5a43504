package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// Fresh tool lists arrive in batches. Putting one server's tools into the
// view costs a new catalog snapshot, an index update, the exposed names
// and a sync of every session, each in proportion to the whole catalog,
// not to the server: a hundred servers arriving one by one would cost a
// hundred times the catalog. So the lists that arrive together are put in
// together: one goroutine at a time applies every list waiting, and while
// other servers are still making their first start it first waits a
// moment (arrivalWindow) for them. A server's publish returns once its
// tools are in the view, the index and the sessions' lists, as before:
// a server is ready only once it can be found.

// arrivalWindow is how long a batch waits for more lists while servers
// are still making their first start; arrivalPoll is how often it looks
// whether they still are. A batch never waits when no other server is
// starting (one server, or a list_changed once all have started).
var (
	arrivalWindow = 50 * time.Millisecond
	arrivalPoll   = 5 * time.Millisecond
)

// arrival is one server's fresh manifest waiting to be put in the view.
type arrival struct {
	u   *upstream.Server
	srv *catalog.Server
	m   *upstream.Manifest
	// done is closed once the batch holding the arrival is applied and
	// the sessions told; then applied says whether the server was still
	// configured, err whether the catalog refused it, and added, removed
	// and changed count its tools the change touched, at version.
	done                   chan struct{}
	applied                bool
	err                    error
	added, removed, change int
	version                uint64
}

// arrivals are the manifests waiting, and whether a goroutine is applying
// them.
type arrivals struct {
	mu      sync.Mutex
	pending []*arrival
	leading bool
	// turn is held by the one server listing and preparing its tools, at
	// most lease.
	turn  chan struct{}
	lease time.Duration
}

// newArrivals returns arrivals with nothing waiting and the turn free.
func newArrivals() arrivals {
	return arrivals{turn: make(chan struct{}, 1), lease: turnLease}
}

// Before a list arrives it is prepared: the server's answer decoded,
// each definition normalised and its tokens counted, all in proportion to
// the server's own tools. A hundred servers answering together would do
// that all at once, and a client's /healthz or tools/list would queue
// behind a hundred busy goroutines; so servers list and prepare their
// tools in turn, one at a time, and the gateway keeps a CPU free to
// answer. A server slow to answer holds the turn at most turnLease: then
// the next server goes on while it still waits.
const turnLease = 25 * time.Millisecond

// takeTurn waits for the turn to list and prepare a server's tools, until
// ctx ends, and returns the function that gives it back (once; later calls
// do nothing). The turn is given back by itself after the lease.
func (a *arrivals) takeTurn(ctx context.Context) (giveBack func()) {
	if a.turn == nil {
		return func() {}
	}
	select {
	case a.turn <- struct{}{}:
	case <-ctx.Done():
		return func() {}
	}
	give := sync.OnceFunc(func() { <-a.turn })
	lease := time.AfterFunc(a.lease, give)
	return func() {
		lease.Stop()
		give()
	}
}

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
