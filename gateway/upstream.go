package gateway

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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/config"
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

// upstreamProtocol is the protocol version the gateway asks its upstream
// servers for: the newest one with the initialize handshake, which every
// server answers.
const upstreamProtocol = "2025-11-25"

// upstream is one configured server and its connection.
type upstream struct {
	g      *Gateway
	cfg    *config.Server
	log    *slog.Logger
	stderr *tail
	wake   chan struct{} // lazy start
	relist chan struct{} // coalesced list_changed

	mu        sync.Mutex
	state     State
	err       error
	cs        *mcp.ClientSession
	raw       *rawConn
	proc      *process
	changed   chan struct{} // closed and replaced on every state change
	settled   chan struct{} // closed once the first start has ended
	settleOne sync.Once
	restarts  int
	gaveUp    bool
	since     time.Time
	listMu    sync.Mutex // serialises listings
}

func newUpstream(g *Gateway, cfg *config.Server) *upstream {
	return &upstream{
		g: g, cfg: cfg, log: g.log.With("server", cfg.Key), stderr: newTail(4096),
		wake: make(chan struct{}, 1), relist: make(chan struct{}, 1),
		state: StateStarting, changed: make(chan struct{}), settled: make(chan struct{}), since: time.Now(),
	}
}

func (u *upstream) setState(s State, err error) {
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
	return u.cfg.Transport == config.TransportStdio && (u.cfg.Lazy || u.g.cfg.Gateway.Lazy)
}

// run keeps the server connected until ctx ends: start, wait for the end of
// the session, restart with backoff.
func (u *upstream) run(ctx context.Context, haveCache bool) {
	if u.cfg.Problem != nil {
		u.gaveUp = true
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
	failures := 0
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
			u.mu.Lock()
			u.gaveUp = true
			u.mu.Unlock()
			u.setState(StateFailed, fmt.Errorf("%w (gave up after %d attempts)", err, failures))
			u.g.metrics.restart(u.cfg.Key)
			return
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

// withTail appends the tail of the server's stderr to err.
func (u *upstream) withTail(err error) error {
	if err == nil {
		return nil
	}
	if t := u.stderr.String(); t != "" {
		lines := strings.Split(t, "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		return fmt.Errorf("%w; stderr: %s", err, strings.Join(lines, " | "))
	}
	return err
}

// start connects and lists everything within the start timeout.
func (u *upstream) start(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, u.startTimeout())
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsearch", Version: u.g.version}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case u.relist <- struct{}{}:
			default:
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case u.relist <- struct{}{}:
			default:
			}
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case u.relist <- struct{}{}:
			default:
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			u.g.forwardLog(u.cfg.Key, req.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			u.g.forwardProgress(req.Params)
		},
	})
	var transport mcp.Transport
	var raw *rawTransport
	var proc *process
	switch u.cfg.Transport {
	case config.TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Env = environ(u.cfg.Env)
		cmd.Dir = u.cfg.Cwd
		p, err := startProcess(cmd, u.stderr, u.log)
		if err != nil {
			return fmt.Errorf("start %s: %w", u.cfg.Command, err)
		}
		proc = p
		raw = &rawTransport{inner: &procTransport{p: p}}
		transport = raw
	case config.TransportHTTP:
		transport = &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: headerClient(u.cfg.Headers), MaxRetries: 2}
	case config.TransportSSE:
		raw = &rawTransport{inner: &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: headerClient(u.cfg.Headers)}}
		transport = raw
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
	go func() {
		cs, err := client.Connect(sctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocol})
		done <- result{cs, err}
	}()
	var exited <-chan struct{}
	if proc != nil {
		exited = proc.exited
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
		res = result{err: fmt.Errorf("exited during initialize (%v)", proc.exitErr())}
	}
	if res.err != nil {
		if proc != nil {
			go proc.stop()
		}
		switch {
		case errors.Is(sctx.Err(), context.DeadlineExceeded):
			return u.withTail(fmt.Errorf("did not answer initialize within %v", u.startTimeout()))
		case proc != nil && proc.exitErr() != nil:
			return u.withTail(fmt.Errorf("exited during initialize (%v)", proc.exitErr()))
		}
		return u.withTail(fmt.Errorf("initialize: %w", res.err))
	}
	u.mu.Lock()
	u.cs = res.cs
	if raw != nil {
		u.raw = raw.conn
	} else {
		u.raw = nil
	}
	u.mu.Unlock()
	if err := u.listAll(sctx); err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("did not list its tools within %v", u.startTimeout())
		}
		return u.withTail(err)
	}
	return nil
}

// waitEnd blocks until the session ends, re-listing on list_changed.
func (u *upstream) waitEnd(ctx context.Context) error {
	u.mu.Lock()
	cs, proc := u.cs, u.proc
	u.mu.Unlock()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			if proc != nil {
				select {
				case <-proc.exited:
				case <-time.After(time.Second):
				}
				if e := proc.exitErr(); e != nil {
					return u.withTail(fmt.Errorf("exited (%v)", e))
				}
			}
			if err == nil {
				err = errors.New("connection closed")
			}
			return u.withTail(fmt.Errorf("session ended: %w", err))
		case <-u.relist:
			lctx, cancel := context.WithTimeout(ctx, u.startTimeout())
			if err := u.listAll(lctx); err != nil {
				u.log.Warn("re-listing after list_changed failed", "err", err)
			}
			cancel()
		}
	}
}

func (u *upstream) close() {
	u.mu.Lock()
	cs, proc := u.cs, u.proc
	u.cs, u.proc, u.raw = nil, nil, nil
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if proc != nil {
		proc.stop()
	}
}

// listAll lists tools, resources, resource templates and prompts, and
// publishes them.
func (u *upstream) listAll(ctx context.Context) error {
	u.listMu.Lock()
	defer u.listMu.Unlock()
	u.mu.Lock()
	cs, raw := u.cs, u.raw
	u.mu.Unlock()
	if cs == nil {
		return errors.New("not connected")
	}
	m := &manifest{Key: u.cfg.Key, Fingerprint: fingerprint(u.cfg)}
	caps := cs.InitializeResult().Capabilities
	if caps == nil || caps.Tools != nil || (caps.Resources == nil && caps.Prompts == nil) {
		tools, err := u.listTools(ctx, cs, raw)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		m.Tools = tools
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				u.log.Warn("resources/list failed", "err", err)
				break
			}
			m.Resources = append(m.Resources, r)
		}
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				u.log.Debug("resources/templates/list failed", "err", err)
				break
			}
			m.Templates = append(m.Templates, t)
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				u.log.Warn("prompts/list failed", "err", err)
				break
			}
			m.Prompts = append(m.Prompts, p)
		}
	}
	return u.g.publish(u, m, true)
}

// listTools pages through tools/list, keeping each definition's bytes when
// the connection allows it.
func (u *upstream) listTools(ctx context.Context, cs *mcp.ClientSession, raw *rawConn) ([]json.RawMessage, error) {
	var captured []json.RawMessage
	var capErr error
	if raw != nil {
		raw.setCapture(func(res json.RawMessage) {
			var page struct {
				Tools []json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(res, &page); err != nil {
				capErr = err
				return
			}
			captured = append(captured, page.Tools...)
		})
		defer raw.setCapture(nil)
	}
	var decoded []json.RawMessage
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return nil, errors.New("more than 1000 pages")
		}
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			b, err := json.Marshal(t)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			decoded = append(decoded, b)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if raw != nil && capErr == nil && len(captured) == len(decoded) {
		return captured, nil
	}
	return decoded, nil
}

// sessionProc is session, with the process behind the session (nil for
// remote servers).
func (u *upstream) sessionProc(ctx context.Context) (*mcp.ClientSession, *process, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != cs {
		return cs, nil, nil
	}
	return cs, u.proc, nil
}

// session returns the live session, waiting up to the start timeout for a
// server that is starting (and starting a lazy one).
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
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
	s := Status{Key: u.cfg.Key, Transport: u.cfg.Transport, State: u.state, Restarts: u.restarts, Since: u.since}
	if u.err != nil {
		s.Error = u.err.Error()
	}
	return s
}

// headerClient returns an HTTP client that adds headers to every request.
func headerClient(h map[string]string) *http.Client {
	if len(h) == 0 {
		return &http.Client{}
	}
	return &http.Client{Transport: headerRoundTripper{h: h, next: http.DefaultTransport}}
}

type headerRoundTripper struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}
