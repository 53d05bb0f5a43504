package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// State is where an upstream server is in its life.
type State string

// Upstream states.
const (
	// StateIdle: a lazy server not started yet (its cached manifest answers).
	StateIdle State = "idle"
	// StateStarting: connecting and listing for the first time.
	StateStarting State = "starting"
	// StateReady: connected, tools listed, calls go through.
	StateReady State = "ready"
	// StateFailed: the last start failed or the server gave up restarting.
	StateFailed State = "failed"
	// StateRestarting: it stopped and a new start is scheduled.
	StateRestarting State = "restarting"
	// StateStopped: the gateway is shutting down.
	StateStopped State = "stopped"
)

// errTooManyPages ends a listing that does not end.
var errTooManyPages = errors.New("more than 1000 pages")

// Server is one configured upstream server and its connection: it starts
// the server, restarts it when it stops, lists what it offers and hands
// each listing to its Owner.
type Server struct {
	owner  Owner
	cfg    *config.Server
	gw     *config.Gateway // the gateway's settings: limits, lazy starts
	log    *slog.Logger
	stderr *wire.Tail
	wake   chan struct{} // lazy start
	relist chan struct{} // coalesced list_changed (listchanged.go)
	tap    *wire.Tap
	// httpClient is the one HTTP client of a remote server, kept across
	// restarts so that connections are reused (nil for stdio).
	httpClient *http.Client

	mu    sync.Mutex
	state State
	err   error
	cs    *mcp.ClientSession
	// client is the MCP client of the current start (Owner.NewClient).
	client *mcp.Client
	proc   *wire.Process
	// life ends when the session is closed: calls in flight end with it,
	// so that closing never waits for them.
	life      context.Context
	endLife   context.CancelFunc
	changed   chan struct{} // closed and replaced on every state change
	settled   chan struct{} // closed once the first start has ended
	settleOne sync.Once
	restarts  int
	gaveUp    bool
	retryAt   time.Time // when a server that gave up is tried again (zero: never, or not given up)
	since     time.Time
	listMu    sync.Mutex // serialises listings
	// oversized counts messages over the size limit; lastOversize is the
	// last one's description, at lastOversizeAt.
	oversized      int
	lastOversize   string
	lastOversizeAt time.Time
	// negotiated is the protocol version of the current (or last) session;
	// legacyOnly is set once a start asking for 2026-07-28 ran out of time
	// (era.go).
	negotiated string
	legacyOnly bool
	// caches holds the caching hints of the server's lists.
	caches Cache
	// announced are the lists the server said changed since it was last
	// listed again for it (listchanged.go).
	announced KindSet
	// probeEvery is how often a 2026-07-28 server over HTTP is checked for
	// being reachable; probeNow asks for a check at once (era.go).
	probeEvery time.Duration
	probeNow   chan struct{}

	// cached says the server starts from a cached manifest, saved at
	// cachedAt (guarded by mu); fresh leaves the server idle until its
	// first call. All three are set before run.
	cached   bool
	cachedAt time.Time
	fresh    bool
	// stop ends run; done is closed once run has returned (Launch).
	stop context.CancelFunc
	done chan struct{}
	// listed is the manifest published last, every item in it.
	listed atomic.Pointer[Manifest]
}

// New makes the server of cfg, not started yet: gw are the gateway's
// settings it reads its limits from, log its logger (every line says the
// server's key) and owner what it hands its listings and changes to.
func New(cfg *config.Server, gw *config.Gateway, log *slog.Logger, owner Owner) *Server {
	u := &Server{
		owner: owner, cfg: cfg, gw: gw, log: log.With("server", cfg.Key), stderr: wire.NewTail(4096),
		wake: make(chan struct{}, 1), relist: make(chan struct{}, 1), tap: wire.NewTap(),
		probeEvery: modernProbeEvery, probeNow: make(chan struct{}, 1),
		state: StateStarting, changed: make(chan struct{}), settled: make(chan struct{}), since: time.Now(),
	}
	if cfg.Transport == config.TransportHTTP || cfg.Transport == config.TransportSSE {
		u.httpClient = wire.HTTPClient(cfg.Headers, u.tap, u.noteOversized)
	}
	return u
}

// NoteCached records that the server starts from the cached manifest m;
// one younger than fresh leaves the server idle until its first call.
func (u *Server) NoteCached(m *Manifest, fresh time.Duration) {
	u.cached = true
	u.fresh = fresh > 0 && time.Since(m.SavedAt) < fresh
	u.listed.Store(m)
	u.mu.Lock()
	u.cachedAt = m.SavedAt
	if u.fresh {
		u.state = StateIdle // what run makes it
	}
	u.mu.Unlock()
}

// Cached reports whether the server starts from a cached manifest
// (NoteCached).
func (u *Server) Cached() bool { return u.cached }

// Launch runs the server under its own context, a child of ctx, in a
// goroutine counted in wg, until ctx ends or Stop is called.
func (u *Server) Launch(ctx context.Context, wg *sync.WaitGroup) {
	uctx, stop := context.WithCancel(ctx)
	u.stop, u.done = stop, make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(u.done)
		defer stop()
		u.run(uctx, u.cached)
	}()
}

// Stop ends the run Launch began; it does not wait (Done).
func (u *Server) Stop() {
	if u.stop != nil {
		u.stop()
	}
}

// Done is closed once the run Launch began has returned; nil when the
// server was never launched.
func (u *Server) Done() <-chan struct{} { return u.done }

// Config is the server's configuration entry.
func (u *Server) Config() *config.Server { return u.cfg }

// Key is the server's key.
func (u *Server) Key() string { return u.cfg.Key }

// Log is the server's logger.
func (u *Server) Log() *slog.Logger { return u.log }

// Stderr holds the last lines the server's process wrote to stderr.
func (u *Server) Stderr() *wire.Tail { return u.stderr }

// Tap is the tap on the server's messages: it sees the raw messages and
// waits for logs and progress to be passed on.
func (u *Server) Tap() *wire.Tap { return u.tap }

// Listed is the manifest published last (SetListed), or the cached one
// the server started from; nil when there is none.
func (u *Server) Listed() *Manifest { return u.listed.Load() }

// SetListed records m as the manifest published last, every item in it.
func (u *Server) SetListed(m *Manifest) { u.listed.Store(m) }

// Settled is closed once the first start has ended: ready, failed, idle
// or stopped.
func (u *Server) Settled() <-chan struct{} { return u.settled }

// SetState moves the server to state s, with err as its reason: the
// change is logged and the owner told (Owner.StateChanged), and those
// waiting on a change are woken.
func (u *Server) SetState(s State, err error) { u.setState(s, err) }

// SetProbeInterval sets how often a 2026-07-28 server over HTTP is
// checked for being reachable, from its next session on.
func (u *Server) SetProbeInterval(d time.Duration) {
	u.mu.Lock()
	u.probeEvery = d
	u.mu.Unlock()
}

// Connection is the session and process of the current start, whatever
// its state; nils between starts (proc is nil for remote servers).
func (u *Server) Connection() (*mcp.ClientSession, *wire.Process) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cs, u.proc
}

// setState records a state change (SetState).
func (u *Server) setState(s State, err error) {
	err = u.owner.Redact(err) // no secrets in states
	u.mu.Lock()
	u.state, u.err, u.since = s, err, time.Now()
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
	if err != nil {
		u.log.Warn("upstream "+string(s), "err", err)
	} else {
		u.log.Info("upstream " + string(s))
	}
	u.owner.StateChanged(u.cfg.Key, s)
	if s == StateReady || s == StateFailed || s == StateIdle || s == StateStopped {
		u.settleOne.Do(func() { close(u.settled) })
	}
}

// StartTimeout is how long a start of the server may take: its own
// setting, else the gateway's.
func (u *Server) StartTimeout() time.Duration {
	if u.cfg.StartTimeout > 0 {
		return u.cfg.StartTimeout
	}
	return u.gw.Limits.StartTimeout
}

// lazy reports whether the server waits for its first call to start.
func (u *Server) lazy() bool {
	return u.fresh || u.cfg.Transport == config.TransportStdio && (u.cfg.Lazy || u.gw.Lazy)
}

// run keeps the server connected until ctx ends: start, wait for the end of
// the session, restart with backoff.
func (u *Server) run(ctx context.Context, haveCache bool) {
	if u.cfg.Problem != nil {
		// A configuration problem (an unset variable) does not go away
		// by waiting: no retry.
		u.mu.Lock()
		u.gaveUp = true
		u.mu.Unlock()
		u.setState(StateFailed, u.cfg.Problem)
		return
	}
	if u.lazy() && haveCache {
		u.setState(StateIdle, nil)
		select {
		case <-u.wake:
		case <-ctx.Done():
			u.setState(StateStopped, nil)
			return
		}
	}
	failures, givenUp := 0, 0
	maxRestarts := u.gw.Limits.MaxRestarts
	for {
		if failures == 0 && u.restarts == 0 {
			u.setState(StateStarting, nil)
		} else {
			u.setState(StateRestarting, u.lastErr())
		}
		err := u.start(ctx)
		if ctx.Err() != nil {
			u.close()
			u.setState(StateStopped, nil)
			return
		}
		if err == nil {
			failures = 0
			u.setState(StateReady, nil)
			err = u.waitEnd(ctx)
			if ctx.Err() != nil {
				u.close()
				u.setState(StateStopped, nil)
				return
			}
		}
		u.close()
		failures++
		u.mu.Lock()
		u.restarts++
		u.mu.Unlock()
		if failures > maxRestarts {
			// Used up its restarts: rest for a longer while, then start
			// over, rather than stay failed for ever (a network that came
			// back, a token that was renewed).
			rest := cooldown(u.gw.Limits.RestartCooldown, givenUp)
			givenUp++
			retryAt := time.Now().Add(rest)
			u.mu.Lock()
			u.gaveUp, u.retryAt = true, retryAt
			u.mu.Unlock()
			u.setState(StateFailed, fmt.Errorf("%w (gave up after %d attempts; next try at %s, in %v)",
				err, failures, retryAt.Format(time.TimeOnly), rest.Round(time.Second)))
			u.owner.Restarted(u.cfg.Key)
			select {
			case <-time.After(rest):
			case <-ctx.Done():
				u.setState(StateStopped, nil)
				return
			}
			u.mu.Lock()
			u.gaveUp, u.retryAt = false, time.Time{}
			u.mu.Unlock()
			failures = 0
			continue
		}
		u.setState(StateFailed, err)
		u.owner.Restarted(u.cfg.Key)
		delay := backoff(failures)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			u.setState(StateStopped, nil)
			return
		}
	}
}

// cooldown is the rest after the n-th give-up (from 0): base, doubling each
// time, at most an hour (or base, if that is longer).
func cooldown(base time.Duration, n int) time.Duration {
	if base <= 0 {
		base = config.DefaultRestartCooldown
	}
	d := base
	for i := 0; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return max(base, min(d, time.Hour))
}

// backoff is the wait before the n-th restart in a row (from 1): 200ms,
// doubling each time, at most 30s.
func backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// lastErr is the error of the last state change.
func (u *Server) lastErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// WithTail appends what the server's stderr says went wrong to err
// (wire.StderrSummary).
func (u *Server) WithTail(err error) error {
	if err == nil {
		return nil
	}
	if t := wire.StderrSummary(u.stderr.String()); t != "" {
		return fmt.Errorf("%w; stderr: %s", err, t)
	}
	return err
}

// start connects and lists everything within the start timeout.
func (u *Server) start(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, u.StartTimeout())
	defer cancel()
	client := u.owner.NewClient(u)
	u.tap.Reset()
	var transport mcp.Transport
	var proc *wire.Process
	spawned := func() {} // gives back the spawn slot (wire.SpawnSlots)
	defer func() { spawned() }()
	switch u.cfg.Transport {
	case config.TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = wire.Environ(u.cfg.EnvPassthrough, u.cfg.Env)
		cmd.Dir = u.cfg.Cwd
		release, err := u.owner.SpawnSlot(sctx)
		if err != nil {
			return fmt.Errorf("start %s: waited %v for other servers to start: %w", u.cfg.Command, u.StartTimeout(), err)
		}
		spawned = release
		p, err := wire.StartProcess(cmd, u.stderr, u.log, u.noteOversized)
		if err != nil {
			return fmt.Errorf("start %s: %w", u.cfg.Command, err)
		}
		proc = p
		transport = u.tap.Wrap(p.Transport())
	case config.TransportHTTP:
		// The streamable connection cannot be wrapped: its tap is in the
		// HTTP client.
		transport = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpClient, MaxRetries: 2}
	case config.TransportSSE:
		transport = u.tap.WrapDetached(&mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpClient})
	default:
		return fmt.Errorf("unknown transport %q", u.cfg.Transport)
	}
	u.mu.Lock()
	u.proc = proc
	u.mu.Unlock()
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	// Connect in a goroutine so that a process that exits at once is
	// reported at once, not at the timeout.
	done := make(chan result, 1)
	wanted := u.wantedProtocol()
	go func() {
		cs, err := client.Connect(sctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: wanted})
		done <- result{cs, err}
	}()
	var exited <-chan struct{}
	if proc != nil {
		exited = proc.Exited()
	}
	var res result
	select {
	case res = <-done:
	case <-exited:
		cancel()
		res = <-done
		if res.err == nil {
			_ = res.cs.Close()
		}
		res = result{err: fmt.Errorf("exited during initialize (%v)", proc.ExitErr())}
	}
	spawned() // answered initialize, or gave up: the next may spawn
	if res.err != nil {
		if proc != nil {
			// A server that dies during initialize often breaks the
			// connection (half an answer) a moment before its exit is
			// seen: wait a moment for the exit, so the error says so.
			select {
			case <-proc.Exited():
			case <-time.After(500 * time.Millisecond):
			}
			go proc.Stop()
		}
		switch {
		case errors.Is(sctx.Err(), context.DeadlineExceeded):
			u.noteStartTimeout(wanted)
			return u.WithTail(fmt.Errorf("did not answer initialize within %v", u.StartTimeout()))
		case proc != nil && proc.ExitErr() != nil:
			return u.WithTail(fmt.Errorf("exited during initialize (%v)", proc.ExitErr()))
		}
		return u.WithTail(fmt.Errorf("initialize: %w", res.err))
	}
	life, endLife := context.WithCancel(context.Background())
	negotiated := ""
	if ir := res.cs.InitializeResult(); ir != nil {
		negotiated = ir.ProtocolVersion
	}
	u.mu.Lock()
	u.cs, u.client, u.life, u.endLife = res.cs, client, life, endLife
	u.negotiated = negotiated
	u.mu.Unlock()
	u.log.Debug("connected", "protocol", negotiated, "asked", wanted)
	if err := u.listAll(sctx); err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("did not list its tools within %v", u.StartTimeout())
		}
		return u.WithTail(err)
	}
	u.owner.Resubscribe(sctx, u.cfg.Key, res.cs)
	return nil
}

// waitEnd blocks until the session ends, re-listing on list_changed once
// the server is quiet (listchanged.go).
func (u *Server) waitEnd(ctx context.Context) error {
	u.mu.Lock()
	cs, proc := u.cs, u.proc
	u.mu.Unlock()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	// A 2026-07-28 session over HTTP has no stream of its own whose end
	// says the server is gone: it is checked now and then (probe).
	var probe <-chan time.Time
	if u.cfg.Transport == config.TransportHTTP && ModernSession(cs) {
		u.mu.Lock()
		every := u.probeEvery
		u.mu.Unlock()
		t := time.NewTicker(every)
		defer t.Stop()
		probe = t.C
	}
	var (
		debounce  relistDebounce
		relistDue <-chan time.Time
	)
	defer debounce.stop()
	for {
		var probeNow <-chan struct{}
		if probe != nil {
			probeNow = u.probeNow
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-probe:
			if err := u.reachable(ctx, cs); err != nil {
				return err
			}
		case <-probeNow:
			if err := u.reachable(ctx, cs); err != nil {
				return err
			}
		case err := <-ended:
			if proc != nil {
				select {
				case <-proc.Exited():
				case <-time.After(time.Second):
				}
				if e := proc.ExitErr(); e != nil {
					return u.WithTail(fmt.Errorf("exited (%v)", e))
				}
			}
			if err == nil {
				err = errors.New("connection closed")
			}
			return u.WithTail(fmt.Errorf("session ended: %w", err))
		case <-u.relist:
			relistDue = debounce.request(time.Now())
		case <-relistDue:
			relistDue = nil
			debounce.fired()
			u.relistAnnounced(ctx)
		}
	}
}

// CloseTimeout bounds closing an upstream session: the SDK's Close waits
// for the messages in flight, which a stuck server may never answer.
const CloseTimeout = 5 * time.Second

// close ends the session: calls in flight are cancelled, the session is
// closed (waiting at most CloseTimeout) and the process stopped.
func (u *Server) close() {
	u.mu.Lock()
	cs, proc, endLife := u.cs, u.proc, u.endLife
	u.cs, u.client, u.proc, u.life, u.endLife = nil, nil, nil, nil, nil
	u.mu.Unlock()
	if endLife != nil {
		endLife()
	}
	if cs != nil {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_ = cs.Close()
		}()
		select {
		case <-closed:
		case <-time.After(CloseTimeout):
			u.log.Warn("closing the session took too long; going on", "timeout", CloseTimeout)
		}
	}
	if proc != nil {
		proc.Stop()
	}
}

// listAll lists tools, resources, resource templates and prompts, and
// publishes them.
func (u *Server) listAll(ctx context.Context) error {
	u.listMu.Lock()
	defer u.listMu.Unlock()
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return errors.New("not connected")
	}
	caps := cs.InitializeResult().Capabilities
	m := &Manifest{Key: u.cfg.Key, Fingerprint: Fingerprint(u.cfg), Capabilities: caps}
	if caps == nil {
		m.Capabilities = &mcp.ServerCapabilities{}
	}
	now := time.Now()
	if caps == nil || caps.Tools != nil || (caps.Resources == nil && caps.Prompts == nil) {
		giveBack := u.owner.TakeTurn(ctx)
		tools, hints, err := u.listTools(ctx, cs)
		giveBack()
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		m.Tools = tools
		u.SetListCache(ListTools, hints.result(now))
	}
	if caps != nil && caps.Resources != nil {
		rs, hints, err := listPages(ctx, cs.ListResources, func(c string) *mcp.ListResourcesParams { return &mcp.ListResourcesParams{Cursor: c} },
			func(r *mcp.ListResourcesResult) []*mcp.Resource { return r.Resources },
			func(r *mcp.ListResourcesResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Warn("resources/list failed", "err", err)
		}
		m.Resources = rs
		u.SetListCache(ListResources, hints.result(now))
		ts, hints, err := listPages(ctx, cs.ListResourceTemplates, func(c string) *mcp.ListResourceTemplatesParams { return &mcp.ListResourceTemplatesParams{Cursor: c} },
			func(r *mcp.ListResourceTemplatesResult) []*mcp.ResourceTemplate { return r.ResourceTemplates },
			func(r *mcp.ListResourceTemplatesResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Debug("resources/templates/list failed", "err", err)
		}
		m.Templates = ts
		u.SetListCache(ListTemplates, hints.result(now))
	}
	if caps != nil && caps.Prompts != nil {
		ps, hints, err := listPages(ctx, cs.ListPrompts, func(c string) *mcp.ListPromptsParams { return &mcp.ListPromptsParams{Cursor: c} },
			func(r *mcp.ListPromptsResult) []*mcp.Prompt { return r.Prompts },
			func(r *mcp.ListPromptsResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Warn("prompts/list failed", "err", err)
		}
		m.Prompts = ps
		u.SetListCache(ListPrompts, hints.result(now))
	}
	m.Skills = u.owner.ListSkills(ctx, u, cs, caps)
	return u.owner.Publish(ctx, u, m)
}

// listTools pages through tools/list, keeping each definition's bytes as
// the server sent them (seen by the wire tap); the SDK's decoded tools are
// the fallback when the raw pages cannot be matched with them.
func (u *Server) listTools(ctx context.Context, cs *mcp.ClientSession) ([]json.RawMessage, cacheHints, error) {
	var (
		capMu    sync.Mutex
		captured []json.RawMessage
		capErr   error
	)
	u.tap.SetCapture(func(res json.RawMessage) {
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		err := json.Unmarshal(res, &page)
		capMu.Lock()
		defer capMu.Unlock()
		if err != nil {
			capErr = err
			return
		}
		captured = append(captured, page.Tools...)
	})
	defer u.tap.SetCapture(nil)
	ctx = wire.TapContext(ctx)
	var (
		tools   []*mcp.Tool // as the SDK decoded them
		listed  int         // bytes of the first counted tools
		counted int
		hints   cacheHints
	)
	// rawsSoFar returns the raw definitions captured, when they match the
	// tools decoded so far one for one, else nil.
	rawsSoFar := func() []json.RawMessage {
		capMu.Lock()
		defer capMu.Unlock()
		if capErr == nil && len(captured) == len(tools) {
			return captured
		}
		return nil
	}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return nil, hints, errTooManyPages
		}
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, hints, err
		}
		hints.add(res.Cacheable)
		tools = append(tools, res.Tools...)
		// The bounds count the bytes the server sent; a tool is encoded
		// again only when its bytes were not seen.
		raws := rawsSoFar()
		for ; counted < len(tools); counted++ {
			b := json.RawMessage(nil)
			if raws != nil {
				b = raws[counted]
			} else if b, err = json.Marshal(tools[counted]); err != nil {
				return nil, hints, fmt.Errorf("tool %q: %w", quoteShort(tools[counted].Name), err)
			}
			listed += keptSize(b)
		}
		if len(tools) > MaxServerTools {
			return nil, hints, fmt.Errorf("the server lists more than %d tools, the most the gateway takes from one server", MaxServerTools)
		}
		if listed > maxServerListBytes {
			return nil, hints, fmt.Errorf("the server's tool definitions pass %d MiB, the most the gateway takes from one server", maxServerListBytes>>20)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	raws := rawsSoFar()
	if raws == nil {
		capMu.Lock()
		u.log.Debug("tool definitions re-encoded: the raw tools/list pages were not seen", "raw", len(captured), "decoded", len(tools), "err", capErr)
		capMu.Unlock()
		raws = make([]json.RawMessage, len(tools))
		for i, t := range tools {
			b, err := json.Marshal(t)
			if err != nil {
				return nil, hints, fmt.Errorf("tool %q: %w", quoteShort(t.Name), err)
			}
			raws[i] = b
		}
	}
	return boundDefinitions(raws, func(msg string, args ...any) { u.log.Warn(msg, args...) }), hints, nil
}

// Conn is a ready session with what goes with it.
type Conn struct {
	Key     string // the server's
	Session *mcp.ClientSession
	Proc    *wire.Process   // nil for remote servers
	Life    context.Context // done once the session is closed
}

// Live is session, with the process behind the session and its life.
func (u *Server) Live(ctx context.Context) (Conn, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return Conn{}, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != cs || u.life == nil {
		// Closed meanwhile: the call will fail as the session is closed.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		return Conn{Key: u.cfg.Key, Session: cs, Life: done}, nil
	}
	return Conn{Key: u.cfg.Key, Session: cs, Proc: u.proc, Life: u.life}, nil
}

// LiveAfter is live, for a session other than old: it waits, up to the
// start timeout, for the server to be restarted.
func (u *Server) LiveAfter(ctx context.Context, old *mcp.ClientSession) (Conn, error) {
	deadline := time.NewTimer(u.StartTimeout() + time.Second)
	defer deadline.Stop()
	for {
		u.mu.Lock()
		st, cs, ch := u.state, u.cs, u.changed
		u.mu.Unlock()
		if cs != old && (st == StateReady || st == StateFailed || st == StateStopped) {
			return u.Live(ctx)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Conn{}, ctx.Err()
		case <-deadline.C:
			return Conn{}, fmt.Errorf("server %q was not restarted within %v", u.cfg.Key, u.StartTimeout())
		}
	}
}

// session returns the live session, waiting up to the start timeout for a
// server that is starting (and starting a lazy one).
func (u *Server) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs, ready := u.cs, u.state == StateReady
	u.mu.Unlock()
	if ready && cs != nil {
		return cs, nil // the common case, without a timer
	}
	select {
	case u.wake <- struct{}{}:
	default:
	}
	deadline := time.NewTimer(u.StartTimeout() + time.Second)
	defer deadline.Stop()
	for {
		u.mu.Lock()
		st, err, cs, ch, gaveUp := u.state, u.err, u.cs, u.changed, u.gaveUp
		u.mu.Unlock()
		switch {
		case st == StateReady && cs != nil:
			return cs, nil
		case st == StateStopped:
			return nil, fmt.Errorf("server %q is stopped", u.cfg.Key)
		case st == StateFailed && gaveUp:
			return nil, fmt.Errorf("server %q failed: %v", u.cfg.Key, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			if err != nil {
				return nil, fmt.Errorf("server %q is %s: %v", u.cfg.Key, st, err)
			}
			return nil, fmt.Errorf("server %q is still %s", u.cfg.Key, st)
		}
	}
}

// Status is what an upstream server's state looks like from outside.
type Status struct {
	Key       string
	Transport string
	State     State
	// Error is why the server failed or is restarting (empty otherwise).
	Error    string
	Restarts int
	Since    time.Time
	// RetryAt is when a server that used up its restarts is tried again
	// (zero when it has not given up).
	RetryAt time.Time
	// Oversized counts the messages over the size limit the server sent
	// (package wire); LastOversize says what the last one was and what
	// was done, at LastOversizeAt.
	Oversized      int
	LastOversize   string
	LastOversizeAt time.Time
	// Protocol is the MCP version the server's session negotiated (empty
	// before its first connection).
	Protocol string
	// CachedAt is when the cached manifest the server started from was
	// saved (zero when it started without one).
	CachedAt time.Time
}

// Status reports the server's visible state.
func (u *Server) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := Status{Key: u.cfg.Key, Transport: u.cfg.Transport, State: u.state, Restarts: u.restarts, Since: u.since, RetryAt: u.retryAt,
		Oversized: u.oversized, LastOversize: u.lastOversize, LastOversizeAt: u.lastOversizeAt, Protocol: u.negotiated,
		CachedAt: u.cachedAt}
	if u.err != nil {
		s.Error = u.err.Error()
	}
	return s
}

// ReadySession is the server's session and MCP client while it is ready,
// or nils: what the rest of the gateway may use of its connection, read
// under its lock.
func (u *Server) ReadySession() (*mcp.ClientSession, *mcp.Client) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != StateReady {
		return nil, nil
	}
	return u.cs, u.client
}

// StateNow is the server's state and a channel closed at its next change.
func (u *Server) StateNow() (State, <-chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state, u.changed
}

// noteOversized records a message over the size limit (package wire): the
// count and the last one for status, the metric.
func (u *Server) noteOversized(ev wire.OversizeEvent) {
	u.mu.Lock()
	u.oversized++
	u.lastOversize, u.lastOversizeAt = ev.Describe(), time.Now()
	u.mu.Unlock()
	u.owner.Oversized(u.cfg.Key, ev.Action)
}

// quoteShort bounds a name a server sent, for messages: at most 100
// bytes, valid UTF-8.
func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
