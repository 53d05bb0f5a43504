package gateway

// A search in dynamic exposure adds the tools it found to the session's
// list and the client is told with list_changed. A client that acts on it
// lists the tools again, but asynchronously: Claude Code sends its next
// model request as soon as the search result arrives, before its new list
// is in, so the model would not see the found tools until a turn later.
// So the search result waits, up to relistWait, until the client has
// listed the tools again. A client that does not list again within the
// bound is not waited for again: neither in that session nor, since
// clients of one name behave alike, in any later session of a client of
// the same name (Gateway.deafClients).

import (
	"context"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
)

const (
	// relistWait bounds how long a search result waits for the client
	// to list the tools the search added.
	relistWait = time.Second
	// relistGrace lets the answer to that tools/list reach the client
	// before the search result does.
	relistGrace = 20 * time.Millisecond
)

// relistState counts the tools/list requests a session answered.
type relistState struct {
	mu    sync.Mutex
	n     int
	ch    chan struct{} // closed and replaced at every tools/list
	never bool          // the client did not list again once: no more waits
}

// listed records a tools/list answered.
func (r *relistState) listed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

// mark returns the count now, and whether waits are on.
func (r *relistState) mark() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, !r.never
}

// await waits until a tools/list after mark, up to d. It reports whether
// one came.
func (r *relistState) await(ctx context.Context, mark int, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.n > mark {
			r.mu.Unlock()
			return true
		}
		if r.ch == nil {
			r.ch = make(chan struct{})
		}
		ch := r.ch
		r.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			r.mu.Lock()
			r.never = true
			r.mu.Unlock()
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// loadAndAwaitRelist adds found tools to a dynamic session's list (load)
// and, when that changed the list, waits for the client to list it again.
func (s *session) loadAndAwaitRelist(ctx context.Context, found []*catalog.Tool) {
	v := s.g.cur.Load()
	s.mu.Lock()
	adds := false
	for _, t := range found {
		if _, ok := s.tools[v.names.toolName(t)]; !ok {
			adds = true
			break
		}
	}
	s.mu.Unlock()
	mark, wait := s.relist.mark()
	name := ""
	s.mu.Lock()
	if s.facts != nil {
		name = s.facts.Name
	}
	s.mu.Unlock()
	if _, deaf := s.g.deafClients.Load(name); deaf {
		wait = false
	}
	s.load(found)
	if !adds || !wait {
		return
	}
	start := time.Now()
	if s.relist.await(ctx, mark, relistWait) {
		s.g.log.Debug("the client listed the tools a search added", "client", name, "after", time.Since(start).Round(time.Millisecond))
		time.Sleep(relistGrace)
		return
	}
	s.g.deafClients.Store(name, true)
	s.g.log.Info("the client did not list the tools a search added; searches of its sessions no longer wait for it", "client", name, "waited", relistWait)
}
