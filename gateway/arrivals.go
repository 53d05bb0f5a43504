package gateway

// Fresh tool lists arrive in batches. Putting one server's tools into the
// view costs a new catalog snapshot, an index update, the exposed names
// and a sync of every session, each in proportion to the whole catalog,
// not to the server: a hundred servers arriving one by one would cost a
// hundred times the catalog. So the lists that arrive together are put in
// together: one goroutine at a time applies every list waiting, and while
// other servers are still making their first start it first waits a
// moment (arrivalWindow) for them (publish.go). A server's publish
// returns once its tools are in the view, the index and the sessions'
// lists, as before: a server is ready only once it can be found.

import (
	"context"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

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
