package gateway

// The MCP sessions served over HTTP: bounded in number and in time. A
// session counts from its initialize request until it ends. One whose
// client has not sent notifications/initialized within the init timeout is
// closed, and so is one with no request (a POST or a DELETE) in progress
// for the idle timeout: an event stream the client keeps open does not
// count, as in the MCP library's own idle timeout. Beyond the cap, a new
// session is refused with 503 and Retry-After.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/metrics"
)

// Why a session was closed by the gateway.
const (
	expiredUninitialized = metrics.ExpiredUninitialized
	expiredIdle          = metrics.ExpiredIdle
)

// httpSessions is the gateway's table of HTTP sessions.
type httpSessions struct {
	// cluster, when set, counts the sessions of every replica against
	// max, and store (set when the cluster keeps sessions) counts a
	// session that several replicas hold once.
	cluster           Cluster
	store             SessionStore
	metrics           *metrics.Set
	log               *slog.Logger
	max               int
	initTimeout, idle time.Duration

	mu        sync.Mutex
	open      int                     // reserved or live
	byID      map[string]*httpSession // live, by session id
	adopting  map[string]*sync.Mutex  // session ids being taken over (sessionshare.go)
	refused   int                     // refusals since the last logged one
	refusedAt time.Time               // when a refusal was last logged
}

// httpSession is one live session and its timer.
type httpSession struct {
	t      *httpSessions
	s      *session
	ss     *mcp.ServerSession
	mu     sync.Mutex
	active int       // requests in progress
	last   time.Time // when the last one ended (or the session began)
	timer  *time.Timer
	closed bool // the session has ended: the timer stays stopped
}

// reserve counts a session about to be made, if the cap allows. With a
// cluster, the cap is for the whole service (cluster.go), and the session
// holds a place there until it ends; while the cluster is down, the cap
// counts this replica's sessions only. lease gives the cluster's place
// back (a no-op without one).
func (t *httpSessions) reserve(ctx context.Context) (lease func(), ok bool) {
	return t.reserveFor(ctx, "")
}

// reserveFor is reserve for the session id of a cluster that keeps
// sessions, which counts it once however many replicas hold it
// (sessionshare.go).
func (t *httpSessions) reserveFor(ctx context.Context, id string) (lease func(), ok bool) {
	lease = func() {}
	if c := t.cluster; c != nil && t.max < math.MaxInt {
		reserve := c.ReserveSession
		if st := t.store; st != nil && id != "" {
			reserve = func(ctx context.Context, max int) (func(), bool, error) { return st.ReserveSessionFor(ctx, id, max) }
		}
		release, ok, err := reserve(ctx, t.max)
		switch {
		case err == nil && !ok:
			return nil, false
		case err == nil:
			lease = release
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open >= t.max {
		lease()
		return nil, false
	}
	t.open++
	t.metrics.SetHTTPSessions(t.open)
	return lease, true
}

// count is the number of sessions open (reserved or live).
func (t *httpSessions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open
}

func (t *httpSessions) release() {
	t.mu.Lock()
	t.open--
	n := t.open
	t.mu.Unlock()
	t.metrics.SetHTTPSessions(n)
}

// refuse answers a request for a session beyond the cap.
func (t *httpSessions) refuse(w http.ResponseWriter) {
	t.metrics.SessionRefused()
	// One log line per ten seconds at most, with the count.
	t.mu.Lock()
	t.refused++
	n, logIt := t.refused, time.Since(t.refusedAt) >= 10*time.Second
	if logIt {
		t.refused, t.refusedAt = 0, time.Now()
	}
	t.mu.Unlock()
	if logIt {
		t.log.Warn("refusing new MCP sessions: too many are open", "max_sessions", t.max, "refused", n)
	}
	// Sessions that never finish initializing are gone by then.
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(t.initTimeout.Seconds())))))
	writeJSONRPCError(w, http.StatusServiceUnavailable, -32000, fmt.Sprintf(
		"toolsearch has %d MCP sessions open, the most it serves at once (toolsearch.http.maxSessions); close one or try again later", t.max))
}

// opened follows the session the initialize request made, if it made
// one; otherwise it gives its place back (and its lease, see reserve).
func (t *httpSessions) opened(s *session, lease func()) {
	var ss *mcp.ServerSession
	for x := range s.server.Sessions() {
		ss = x
	}
	if ss == nil {
		lease()
		t.release()
		return
	}
	t.track(s, ss, lease)
}

// track follows a live session until it ends.
func (t *httpSessions) track(s *session, ss *mcp.ServerSession, lease func()) *httpSession {
	hs := &httpSession{t: t, s: s, ss: ss, last: time.Now()}
	hs.mu.Lock()
	hs.timer = time.AfterFunc(t.initTimeout, hs.check)
	hs.mu.Unlock()
	t.mu.Lock()
	t.byID[ss.ID()] = hs
	t.mu.Unlock()
	go func() {
		_ = ss.Wait()
		hs.mu.Lock()
		hs.closed = true
		hs.timer.Stop()
		hs.mu.Unlock()
		t.mu.Lock()
		delete(t.byID, ss.ID())
		t.mu.Unlock()
		lease()
		t.release()
	}()
	return hs
}

// lookup returns the live session of id, nil when this replica has none.
func (t *httpSessions) lookup(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// lockID serializes taking over the session id (sessionshare.go).
func (t *httpSessions) lockID(id string) (unlock func()) {
	t.mu.Lock()
	if t.adopting == nil {
		t.adopting = map[string]*sync.Mutex{}
	}
	m := t.adopting[id]
	if m == nil {
		m = &sync.Mutex{}
		t.adopting[id] = m
	}
	t.mu.Unlock()
	m.Lock()
	return func() {
		t.mu.Lock()
		if t.adopting[id] == m {
			delete(t.adopting, id)
		}
		t.mu.Unlock()
		m.Unlock()
	}
}

// busy marks a request of the session id in progress; the function it
// returns marks its end.
func (t *httpSessions) busy(id string) func() {
	t.mu.Lock()
	hs := t.byID[id]
	t.mu.Unlock()
	if hs == nil {
		return func() {}
	}
	hs.mu.Lock()
	hs.active++
	hs.mu.Unlock()
	return func() {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		hs.active--
		hs.last = time.Now()
		if hs.active == 0 && !hs.closed && hs.s.serverSession() != nil {
			hs.timer.Reset(hs.t.idle)
		}
	}
}

// check runs at the session's deadline: an uninitialized session is
// closed, an idle one too; any other waits for its next deadline.
func (hs *httpSession) check() {
	t := hs.t
	hs.mu.Lock()
	closed := hs.closed
	hs.mu.Unlock()
	if closed {
		return
	}
	if hs.s.serverSession() == nil {
		t.expire(hs, expiredUninitialized, "the client did not send notifications/initialized within "+t.initTimeout.String())
		return
	}
	hs.mu.Lock()
	if hs.active > 0 {
		hs.mu.Unlock()
		return // the end of the request sets the timer again
	}
	left := t.idle - time.Since(hs.last)
	if left > 0 {
		hs.timer.Reset(left)
		hs.mu.Unlock()
		return
	}
	hs.mu.Unlock()
	t.expire(hs, expiredIdle, "no request for "+t.idle.String())
}

func (t *httpSessions) expire(hs *httpSession, reason, why string) {
	t.metrics.SessionExpired(reason)
	t.log.Debug("closing an MCP session", "why", why)
	_ = hs.s.closeClient(hs.ss, errSessionExpired) // forward.go
}
