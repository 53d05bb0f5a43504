package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/utf8cut"

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

// upstream is one configured server and its connection.
type upstream struct {
	g      *Gateway
	cfg    *config.Server
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
	// client is the MCP client of the current start (forward.go).
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
	// (upstream_era.go).
	negotiated string
	legacyOnly bool
	// caches holds the caching hints of the server's lists.
	caches UpstreamCache
	// announced are the lists the server said changed since it was last
	// listed again for it (listchanged.go).
	announced kindSet
	// probeEvery is how often a 2026-07-28 server over HTTP is checked for
	// being reachable; probeNow asks for a check at once (upstream_era.go).
	probeEvery time.Duration
	probeNow   chan struct{}

	// cached says the gateway started from a cached manifest of the
	// server, saved at cachedAt (guarded by mu); fresh leaves the server
	// idle until its first call (Options.CacheFresh). All three are set
	// before run.
	cached   bool
	cachedAt time.Time
	fresh    bool
	// stop ends run; done is closed once run has returned (launch).
	stop context.CancelFunc
	done chan struct{}
	// listed is the manifest published last, every item in it (policy
	// filters a view's copy): a reload that changes policy filters it
	// again (reload.go).
	listed atomic.Pointer[manifest]
}

func newUpstream(g *Gateway, cfg *config.Server) *upstream {
	u := &upstream{
		g: g, cfg: cfg, log: g.log.With("server", cfg.Key), stderr: wire.NewTail(4096),
		wake: make(chan struct{}, 1), relist: make(chan struct{}, 1), tap: wire.NewTap(),
		probeEvery: modernProbeEvery, probeNow: make(chan struct{}, 1),
		state: StateStarting, changed: make(chan struct{}), settled: make(chan struct{}), since: time.Now(),
	}
	if cfg.Transport == config.TransportHTTP || cfg.Transport == config.TransportSSE {
		u.httpClient = wire.HTTPClient(cfg.Headers, u.tap, u.noteOversized)
	}
	return u
}

// noteCached records that the server starts from the cached manifest m;
// one younger than fresh leaves the server idle until its first call.
func (u *upstream) noteCached(m *manifest, fresh time.Duration) {
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

func (u *upstream) setState(s State, err error) {
	err = u.g.redactErr(err) // no secrets in states (drain.go)
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
	u.g.metrics.setState(u.cfg.Key, string(s))
	u.g.feedServers() // feed.go
	if s == StateReady || s == StateFailed || s == StateIdle || s == StateStopped {
		u.settleOne.Do(func() { close(u.settled) })
	}
}

func (u *upstream) startTimeout() time.Duration {
	if u.cfg.StartTimeout > 0 {
		return u.cfg.StartTimeout
	}
	return u.g.cfg.Gateway.Limits.StartTimeout
}

func (u *upstream) lazy() bool {
	return u.fresh || u.cfg.Transport == config.TransportStdio && (u.cfg.Lazy || u.g.cfg.Gateway.Lazy)
}

// run keeps the server connected until ctx ends: start, wait for the end of
// the session, restart with backoff.
func (u *upstream) run(ctx context.Context, haveCache bool) {
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
	maxRestarts := u.g.cfg.Gateway.Limits.MaxRestarts
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
			rest := cooldown(u.g.cfg.Gateway.Limits.RestartCooldown, givenUp)
			givenUp++
			retryAt := time.Now().Add(rest)
			u.mu.Lock()
			u.gaveUp, u.retryAt = true, retryAt
			u.mu.Unlock()
			u.setState(StateFailed, fmt.Errorf("%w (gave up after %d attempts; next try at %s, in %v)",
				err, failures, retryAt.Format(time.TimeOnly), rest.Round(time.Second)))
			u.g.metrics.restart(u.cfg.Key)
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
		u.g.metrics.restart(u.cfg.Key)
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

func backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

func (u *upstream) lastErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// withTail appends what the server's stderr says went wrong to err
// (wire.StderrSummary).
func (u *upstream) withTail(err error) error {
	if err == nil {
		return nil
	}
	if t := wire.StderrSummary(u.stderr.String()); t != "" {
		return fmt.Errorf("%w; stderr: %s", err, t)
	}
	return err
}

// start connects and lists everything within the start timeout.
func (u *upstream) start(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, u.startTimeout())
	defer cancel()
	client := u.upstreamClient()
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
		release, err := u.g.spawning.Take(sctx)
		if err != nil {
			return fmt.Errorf("start %s: waited %v for other servers to start: %w", u.cfg.Command, u.startTimeout(), err)
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
			return u.withTail(fmt.Errorf("did not answer initialize within %v", u.startTimeout()))
		case proc != nil && proc.ExitErr() != nil:
			return u.withTail(fmt.Errorf("exited during initialize (%v)", proc.ExitErr()))
		}
		return u.withTail(fmt.Errorf("initialize: %w", res.err))
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
			err = fmt.Errorf("did not list its tools within %v", u.startTimeout())
		}
		return u.withTail(err)
	}
	u.g.resubscribe(sctx, u.cfg.Key, res.cs)
	return nil
}

// waitEnd blocks until the session ends, re-listing on list_changed once
// the server is quiet (listchanged.go).
func (u *upstream) waitEnd(ctx context.Context) error {
	u.mu.Lock()
	cs, proc := u.cs, u.proc
	u.mu.Unlock()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	// A 2026-07-28 session over HTTP has no stream of its own whose end
	// says the server is gone: it is checked now and then (probe).
	var probe <-chan time.Time
	if u.cfg.Transport == config.TransportHTTP && modernSession(cs) {
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
					return u.withTail(fmt.Errorf("exited (%v)", e))
				}
			}
			if err == nil {
				err = errors.New("connection closed")
			}
			return u.withTail(fmt.Errorf("session ended: %w", err))
		case <-u.relist:
			relistDue = debounce.request(time.Now())
		case <-relistDue:
			relistDue = nil
			debounce.fired()
			u.relistAnnounced(ctx)
		}
	}
}

// closeTimeout bounds closing an upstream session: the SDK's Close waits
// for the messages in flight, which a stuck server may never answer.
const closeTimeout = 5 * time.Second

// close ends the session: calls in flight are cancelled, the session is
// closed (waiting at most closeTimeout) and the process stopped.
func (u *upstream) close() {
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
		case <-time.After(closeTimeout):
			u.log.Warn("closing the session took too long; going on", "timeout", closeTimeout)
		}
	}
	if proc != nil {
		proc.Stop()
	}
}

// listAll lists tools, resources, resource templates and prompts, and
// publishes them.
func (u *upstream) listAll(ctx context.Context) error {
	u.listMu.Lock()
	defer u.listMu.Unlock()
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return errors.New("not connected")
	}
	caps := cs.InitializeResult().Capabilities
	m := &manifest{Key: u.cfg.Key, Fingerprint: fingerprint(u.cfg), Capabilities: caps}
	if caps == nil {
		m.Capabilities = &mcp.ServerCapabilities{}
	}
	now := time.Now()
	if caps == nil || caps.Tools != nil || (caps.Resources == nil && caps.Prompts == nil) {
		giveBack := u.g.arr.takeTurn(ctx) // arrivals.go
		tools, hints, err := u.listTools(ctx, cs)
		giveBack()
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		m.Tools = tools
		u.setListCache(listTools, hints.result(now))
	}
	if caps != nil && caps.Resources != nil {
		rs, hints, err := listPages(ctx, cs.ListResources, func(c string) *mcp.ListResourcesParams { return &mcp.ListResourcesParams{Cursor: c} },
			func(r *mcp.ListResourcesResult) []*mcp.Resource { return r.Resources },
			func(r *mcp.ListResourcesResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Warn("resources/list failed", "err", err)
		}
		m.Resources = rs
		u.setListCache(listResources, hints.result(now))
		ts, hints, err := listPages(ctx, cs.ListResourceTemplates, func(c string) *mcp.ListResourceTemplatesParams { return &mcp.ListResourceTemplatesParams{Cursor: c} },
			func(r *mcp.ListResourceTemplatesResult) []*mcp.ResourceTemplate { return r.ResourceTemplates },
			func(r *mcp.ListResourceTemplatesResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Debug("resources/templates/list failed", "err", err)
		}
		m.Templates = ts
		u.setListCache(listTemplates, hints.result(now))
	}
	if caps != nil && caps.Prompts != nil {
		ps, hints, err := listPages(ctx, cs.ListPrompts, func(c string) *mcp.ListPromptsParams { return &mcp.ListPromptsParams{Cursor: c} },
			func(r *mcp.ListPromptsResult) []*mcp.Prompt { return r.Prompts },
			func(r *mcp.ListPromptsResult) (mcp.Cacheable, string) { return r.Cacheable, r.NextCursor })
		if err != nil {
			u.log.Warn("prompts/list failed", "err", err)
		}
		m.Prompts = ps
		u.setListCache(listPrompts, hints.result(now))
	}
	m.Skills = u.listSkills(ctx, cs, caps) // skills.go
	return u.g.publish(ctx, u, m, true)
}

// listTools pages through tools/list, keeping each definition's bytes as
// the server sent them (seen by the wire tap); the SDK's decoded tools are
// the fallback when the raw pages cannot be matched with them.
func (u *upstream) listTools(ctx context.Context, cs *mcp.ClientSession) ([]json.RawMessage, cacheHints, error) {
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
		if len(tools) > maxServerTools {
			return nil, hints, fmt.Errorf("the server lists more than %d tools, the most the gateway takes from one server", maxServerTools)
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

// Bounds on what one upstream server's tools/list may make the gateway
// hold. Every definition is kept several times over (as sent, decoded, in
// the search index, in the lists served), so these bound the gateway's
// memory in proportion to what a server sends. The real servers measured
// stay far below them: their longest description is about 34 KB, their
// largest definition about 80 KB and their largest list about 1 MB of
// 401 tools.
const (
	// maxServerTools is the most tools taken from one server.
	maxServerTools = 10_000
	// maxServerListBytes is the most bytes of tool definitions taken from
	// one server.
	maxServerListBytes = 8 << 20
	// maxDescriptionBytes is the longest description kept whole; a longer
	// one is cut at a character boundary and marked as cut.
	maxDescriptionBytes = 64 << 10
	// maxToolBytes is the largest definition kept, once its description
	// is cut; a larger one (its schema, say) is left out.
	maxToolBytes = 1 << 20
)

// descriptionCut ends a description cut at maxDescriptionBytes.
const descriptionCut = " [cut by toolsearch: the description was longer than 64 KiB]"

// boundDefinitions returns raws with every description longer than
// maxDescriptionBytes cut, and without any definition still larger than
// maxToolBytes; warn says what was done to which tool. raws itself is
// returned when nothing needs doing.
func boundDefinitions(raws []json.RawMessage, warn func(msg string, args ...any)) []json.RawMessage {
	out := raws
	copied := false
	drop := func(i int) {
		if !copied {
			out = append([]json.RawMessage(nil), raws[:i]...)
			copied = true
		}
	}
	for i, raw := range raws {
		if len(raw) <= maxDescriptionBytes {
			if copied {
				out = append(out, raw)
			}
			continue
		}
		cut, name, err := cutDescription(raw)
		switch {
		case err != nil:
			// Not an object the catalog could take either: it says why.
		case len(cut) > maxToolBytes:
			drop(i)
			warn("leaving out a tool whose definition is over 1 MiB", "tool", quoteShort(name), "bytes", len(cut))
			continue
		case len(cut) != len(raw):
			drop(i)
			warn("cutting a tool's description to 64 KiB", "tool", quoteShort(name), "bytes", len(raw))
			out = append(out, cut)
			continue
		}
		if copied {
			out = append(out, raw)
		}
	}
	return out
}

// keptSize is how many bytes of raw boundDefinitions keeps.
func keptSize(raw json.RawMessage) int {
	if len(raw) <= maxDescriptionBytes {
		return len(raw)
	}
	cut, _, err := cutDescription(raw)
	if err != nil || len(cut) > maxToolBytes {
		return 0
	}
	return len(cut)
}

// cutDescription returns raw with its description cut to
// maxDescriptionBytes, and the tool's name; raw itself when the
// description is short enough.
func cutDescription(raw json.RawMessage) (json.RawMessage, string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, "", err
	}
	var name, desc string
	_ = json.Unmarshal(obj["name"], &name)
	if err := json.Unmarshal(obj["description"], &desc); err != nil || len(desc) <= maxDescriptionBytes {
		return raw, name, nil
	}
	b, err := json.Marshal(utf8cut.Prefix(desc, maxDescriptionBytes) + descriptionCut)
	if err != nil {
		return nil, name, err
	}
	obj["description"] = b
	cut, err := json.Marshal(obj)
	return cut, name, err
}

// liveSession is a ready session with what goes with it.
type liveSession struct {
	key  string // the server's
	cs   *mcp.ClientSession
	proc *wire.Process   // nil for remote servers
	life context.Context // done once the session is closed
}

// live is session, with the process behind the session and its life.
func (u *upstream) live(ctx context.Context) (liveSession, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return liveSession{}, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != cs || u.life == nil {
		// Closed meanwhile: the call will fail as the session is closed.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		return liveSession{key: u.cfg.Key, cs: cs, life: done}, nil
	}
	return liveSession{key: u.cfg.Key, cs: cs, proc: u.proc, life: u.life}, nil
}

// liveAfter is live, for a session other than old: it waits, up to the
// start timeout, for the server to be restarted.
func (u *upstream) liveAfter(ctx context.Context, old *mcp.ClientSession) (liveSession, error) {
	deadline := time.NewTimer(u.startTimeout() + time.Second)
	defer deadline.Stop()
	for {
		u.mu.Lock()
		st, cs, ch := u.state, u.cs, u.changed
		u.mu.Unlock()
		if cs != old && (st == StateReady || st == StateFailed || st == StateStopped) {
			return u.live(ctx)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return liveSession{}, ctx.Err()
		case <-deadline.C:
			return liveSession{}, fmt.Errorf("server %q was not restarted within %v", u.cfg.Key, u.startTimeout())
		}
	}
}

// session returns the live session, waiting up to the start timeout for a
// server that is starting (and starting a lazy one).
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
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
	deadline := time.NewTimer(u.startTimeout() + time.Second)
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

// status reports the upstream's visible state.
func (u *upstream) status() Status {
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

// readySession is the server's session and MCP client while it is ready,
// or nils: what the rest of the gateway may use of its connection, read
// under its lock.
func (u *upstream) readySession() (*mcp.ClientSession, *mcp.Client) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != StateReady {
		return nil, nil
	}
	return u.cs, u.client
}

// stateNow is the server's state and a channel closed at its next change.
func (u *upstream) stateNow() (State, <-chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state, u.changed
}

// noteOversized records a message over the size limit (package wire): the
// count and the last one for status, the metric.
func (u *upstream) noteOversized(ev wire.OversizeEvent) {
	u.mu.Lock()
	u.oversized++
	u.lastOversize, u.lastOversizeAt = ev.Describe(), time.Now()
	u.mu.Unlock()
	u.g.metrics.oversize(u.cfg.Key, ev.Action)
}
