// Package dashboard is the live dashboard that toolsearch serve --http
// shows at /ui: the upstream servers (and, when it is on, the background
// enrichment that writes their tools' search hints), the client sessions
// and their exposure, the searches (with what was then loaded and called,
// and those that led to no call) and the context economy (what the full
// tool list would have cost each session against what it was sent).
//
// A Dashboard is a gateway.Feed: the gateway tells it what happens, and it
// keeps the latest events in memory, in a ring of at most Options.Keep,
// each for at most Options.Retention. It is also the http.Handler the
// gateway serves at /ui (gateway.Options.UI), behind the guard of /mcp:
// the same Host and Origin checks and the same token. The pages are plain
// HTML, CSS and JavaScript embedded in the binary; they read the state at
// /ui/api/state and learn of changes from the event stream /ui/events
// (server-sent events).
//
// Everything shown may come from an upstream server or a model: the
// pages build text nodes only, never markup, and are served with a
// Content-Security-Policy that runs no inline script. Nothing of a tool
// call's arguments or results reaches the dashboard unless
// toolsearch.dashboard recordArguments is on.
package dashboard

import (
	"slices"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Options configure a Dashboard.
type Options struct {
	// Keep bounds the events kept (searches, loads, calls, session
	// changes); the oldest go first. Zero is config.DefaultDashboardKeep.
	Keep int
	// Retention is how long an event is kept. Zero is
	// config.DefaultDashboardRetention.
	Retention time.Duration
	// RecordArguments says the gateway records calls' arguments and
	// results (the pages say so).
	RecordArguments bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// FromConfig returns the options of the configuration's dashboard
// settings.
func FromConfig(d config.Dashboard) Options {
	return Options{Keep: d.Keep, Retention: d.Retention, RecordArguments: d.RecordArguments}
}

// Dashboard keeps what the gateway tells it and serves the pages.
// Create it with New; it is safe for concurrent use.
type Dashboard struct {
	opts Options

	mu       sync.Mutex
	seq      uint64 // counts changes; the pages refresh when it moves
	servers  []gateway.ServerView
	enrich   *Enrich // nil until the gateway tells of enrichment
	skills   *Skills // nil until the gateway tells of skills, or while no server declares them
	sessions map[string]*sessionRow
	events   *ring[event]
	// changed is closed (and replaced) at every change: the event
	// streams wait on it.
	changed chan struct{}
	closed  chan struct{}
	once    sync.Once
	// streams counts the event streams being served.
	streams int
}

// event is one thing that happened, as kept in the ring.
type event struct {
	Seq     uint64
	Time    time.Time
	Search  *gateway.SearchEvent
	Load    *gateway.LoadEvent
	Call    *gateway.CallEvent
	Session *gateway.SessionEvent // a change of exposure or tokens
}

// sessionRow is the latest state of one session.
type sessionRow struct {
	last     gateway.SessionEvent
	opened   time.Time
	closedAt time.Time // zero while open
	searches int
	calls    int
	// clients are the MCP 2026-07-28 clients a shared server served, by
	// name and protocol; at most maxSeenClients, the least recent dropped.
	clients map[seenKey]*seenClient
}

type seenKey struct{ client, protocol string }

// seenClient is one client of a shared server.
type seenClient struct {
	first, last time.Time
	requests    int
	defers      bool
}

// maxSeenClients bounds the clients kept per shared server.
const maxSeenClients = 32

// New returns an empty Dashboard.
func New(opts Options) *Dashboard {
	if opts.Keep <= 0 {
		opts.Keep = config.DefaultDashboardKeep
	}
	if opts.Retention <= 0 {
		opts.Retention = config.DefaultDashboardRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Dashboard{opts: opts, sessions: map[string]*sessionRow{}, events: newRing[event](opts.Keep),
		changed: make(chan struct{}), closed: make(chan struct{})}
}

// Close ends the event streams being served (so that an HTTP server's
// shutdown does not wait for them). Events told afterwards are still kept.
func (d *Dashboard) Close() {
	d.once.Do(func() { close(d.closed) })
}

var (
	_ gateway.Feed       = (*Dashboard)(nil)
	_ gateway.EnrichFeed = (*Dashboard)(nil)
	_ gateway.ClientFeed = (*Dashboard)(nil)
)

// Searched implements gateway.Feed.
func (d *Dashboard) Searched(ev gateway.SearchEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev.Queries = slices.Clone(ev.Queries)
	ev.Results = slices.Clone(ev.Results)
	if r := d.sessions[ev.Session]; r != nil {
		r.searches++
	}
	d.add(event{Time: ev.Time, Search: &ev})
}

// Loaded implements gateway.Feed.
func (d *Dashboard) Loaded(ev gateway.LoadEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev.Tools = slices.Clone(ev.Tools)
	d.add(event{Time: ev.Time, Load: &ev})
}

// Called implements gateway.Feed.
func (d *Dashboard) Called(ev gateway.CallEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.sessions[ev.Session]; r != nil {
		r.calls++
	}
	d.add(event{Time: ev.Time, Call: &ev})
}

// SessionChanged implements gateway.Feed. A state equal to the last one
// told changes nothing; a session closed stays closed.
func (d *Dashboard) SessionChanged(ev gateway.SessionEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.sessions[ev.Session]
	if r == nil {
		if ev.Closed {
			return // never seen open: nothing to show
		}
		d.pruneSessions()
		r = &sessionRow{opened: ev.Time}
		d.sessions[ev.Session] = r
	} else {
		if !r.closedAt.IsZero() {
			return
		}
		same := r.last
		same.Time = ev.Time
		if same == ev {
			return
		}
	}
	if ev.Closed {
		// What the session was stays shown.
		r.closedAt = ev.Time
		r.last.Closed, r.last.Time = true, ev.Time
	} else {
		r.last = ev
	}
	d.add(event{Time: ev.Time, Session: &ev})
}

// ClientSeen implements gateway.ClientFeed: the request of a client of
// a shared server is counted to it. A new client is a change; another
// request of a known one is shown at the next change.
func (d *Dashboard) ClientSeen(ev gateway.ClientEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.sessions[ev.Session]
	if r == nil {
		return // its server was never told of
	}
	if ev.Time.IsZero() {
		ev.Time = d.opts.Now()
	}
	k := seenKey{ev.Client, ev.Protocol}
	if c := r.clients[k]; c != nil {
		c.last = ev.Time
		c.requests++
		return
	}
	if r.clients == nil {
		r.clients = map[seenKey]*seenClient{}
	}
	if len(r.clients) >= maxSeenClients {
		var oldest seenKey
		var at time.Time
		for k, c := range r.clients {
			if at.IsZero() || c.last.Before(at) {
				oldest, at = k, c.last
			}
		}
		delete(r.clients, oldest)
	}
	r.clients[k] = &seenClient{first: ev.Time, last: ev.Time, requests: 1, defers: ev.Defers}
	d.bump()
}

// ServersChanged implements gateway.Feed.
func (d *Dashboard) ServersChanged(servers []gateway.ServerView) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.servers = slices.Clone(servers)
	d.bump()
}

// EnrichChanged implements gateway.EnrichFeed. A state equal to the last
// one told changes nothing.
func (d *Dashboard) EnrichChanged(st gateway.EnrichStatus) {
	e := enrichOf(st)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.enrich != nil && *d.enrich == e {
		return
	}
	d.enrich = &e
	d.bump()
}

// SkillsChanged implements gateway.SkillFeed. A state equal to the last
// one told changes nothing.
func (d *Dashboard) SkillsChanged(st gateway.SkillStats) {
	sk := skillsOf(st)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.skills == nil && sk == nil || d.skills != nil && sk != nil && d.skills.equal(sk) {
		return
	}
	d.skills = sk
	d.bump()
}

// add keeps ev and drops what is too old. d.mu is held.
func (d *Dashboard) add(ev event) {
	if ev.Time.IsZero() {
		ev.Time = d.opts.Now()
	}
	ev.Seq = d.seq + 1
	d.events.push(ev)
	d.expire()
	d.bump()
}

// expire drops the events older than the retention. d.mu is held.
func (d *Dashboard) expire() {
	cut := d.opts.Now().Add(-d.opts.Retention)
	d.events.dropWhile(func(e event) bool { return e.Time.Before(cut) })
}

// pruneSessions forgets closed sessions past the retention, and the
// oldest closed ones beyond Keep, so that the table stays bounded. d.mu
// is held.
func (d *Dashboard) pruneSessions() {
	cut := d.opts.Now().Add(-d.opts.Retention)
	var closed []string
	for id, r := range d.sessions {
		if r.closedAt.IsZero() {
			continue
		}
		if r.closedAt.Before(cut) {
			delete(d.sessions, id)
			continue
		}
		closed = append(closed, id)
	}
	if extra := len(closed) - d.opts.Keep + 1; extra > 0 {
		slices.SortFunc(closed, func(a, b string) int { return d.sessions[a].closedAt.Compare(d.sessions[b].closedAt) })
		for _, id := range closed[:extra] {
			delete(d.sessions, id)
		}
	}
}

// bump tells the streams something changed. d.mu is held.
func (d *Dashboard) bump() {
	d.seq++
	close(d.changed)
	d.changed = make(chan struct{})
}

// ring is a bounded queue: pushing onto a full ring drops its oldest.
type ring[T any] struct {
	buf   []T
	start int // index of the oldest
	n     int
}

func newRing[T any](size int) *ring[T] { return &ring[T]{buf: make([]T, size)} }

func (r *ring[T]) push(v T) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = v
		r.n++
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// dropWhile drops the oldest while old says so.
func (r *ring[T]) dropWhile(old func(T) bool) {
	var zero T
	for r.n > 0 && old(r.buf[r.start]) {
		r.buf[r.start] = zero
		r.start = (r.start + 1) % len(r.buf)
		r.n--
	}
}

// all returns the kept values, oldest first.
func (r *ring[T]) all() []T {
	out := make([]T, 0, r.n)
	for i := range r.n {
		out = append(out, r.buf[(r.start+i)%len(r.buf)])
	}
	return out
}

func (r *ring[T]) len() int { return r.n }
