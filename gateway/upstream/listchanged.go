package upstream

// A server's list_changed: the lists it names are marked stale, and the
// server is listed again once it has been quiet for relistQuiet, or
// relistMaxDelay after the burst began if it never goes quiet; the owner
// is then told which lists changed (Owner.ListsChanged).

import (
	"context"
	"time"
)

const (
	// relistQuiet is how long a server must be quiet after a list_changed
	// before it is listed again.
	relistQuiet = 50 * time.Millisecond
	// relistMaxDelay bounds the wait for quiet: a server that announces
	// changes without pause is listed again this long after the first.
	relistMaxDelay = time.Second
)

// KindSet is a set of ListKinds.
type KindSet uint8

// With returns k with kinds added.
func (k KindSet) With(kinds ...ListKind) KindSet {
	for _, kind := range kinds {
		k |= 1 << kind
	}
	return k
}

// Has reports whether kind is in k.
func (k KindSet) Has(kind ListKind) bool { return k&(1<<kind) != 0 }

// ListChanged is told that the server sent a list_changed of kinds: the
// lists are stale until listed again, the kinds are noted for passing on,
// and a listing is asked for (waitEnd debounces it).
func (u *Server) ListChanged(kinds ...ListKind) {
	u.MarkStale(kinds...)
	u.mu.Lock()
	u.announced = u.announced.With(kinds...)
	u.mu.Unlock()
	select {
	case u.relist <- struct{}{}:
	default:
	}
}

// takeAnnounced returns the kinds announced since the last call, and
// forgets them.
func (u *Server) takeAnnounced() KindSet {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := u.announced
	u.announced = 0
	return k
}

// relistDebounce says when a listing asked for by list_changed is due: a
// burst of requests gives one listing, relistQuiet after the last of them
// and at most relistMaxDelay after the first.
type relistDebounce struct {
	timer *time.Timer
	first time.Time
	armed bool
}

// request notes one more request at now and returns the channel that fires
// when the listing is due.
func (d *relistDebounce) request(now time.Time) <-chan time.Time {
	if !d.armed {
		d.first, d.armed = now, true
	}
	wait := max(min(relistQuiet, relistMaxDelay-now.Sub(d.first)), 0)
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	return d.timer.C
}

// fired is told the listing is being done: the next request begins a new
// burst.
func (d *relistDebounce) fired() { d.armed = false }

// stop stops the timer, if any.
func (d *relistDebounce) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

// relistAnnounced lists the server again after its list_changed and
// tells the owner which lists changed.
func (u *Server) relistAnnounced(ctx context.Context) {
	kinds := u.takeAnnounced()
	lctx, cancel := context.WithTimeout(ctx, u.StartTimeout())
	defer cancel()
	if err := u.listAll(lctx); err != nil {
		u.log.Warn("re-listing after list_changed failed", "err", err)
		return
	}
	u.owner.ListsChanged(u.cfg.Key, kinds)
}
