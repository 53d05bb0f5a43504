//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// delayProxy is a TCP proxy on loopback in front of Redis whose every
// chunk, each way, waits delay first: a slow network.
type delayProxy struct {
	ln    net.Listener
	delay atomic.Int64 // nanoseconds
	mu    sync.Mutex
	conns []net.Conn
}

func newDelayProxy(t *testing.T, target string) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}()
	return p
}

func (p *delayProxy) pipe(from, to net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(p.delay.Load()))
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = to.Close()
			return
		}
	}
}

func (p *delayProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// balancer is the load balancer in front of the replicas: sessions of
// 2025-11-25 stay on their replica (sticky), 2026-07-28 requests go to
// the next live replica; a replica taken out gets no new request. It
// counts the requests in flight per replica (event streams aside).
type balancer struct {
	mu       sync.Mutex
	hosts    []string
	out      map[string]bool
	sticky   map[string]string // session id → host
	next     int
	inflight map[string]int
}

func (b *balancer) pick(r *http.Request) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if h, ok := b.sticky[id]; ok && !b.out[h] {
			return h
		}
	}
	for range b.hosts {
		h := b.hosts[b.next%len(b.hosts)]
		b.next++
		if !b.out[h] {
			return h
		}
	}
	return b.hosts[0]
}

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	h := b.pick(r)
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = h, h
	if r.Method == http.MethodGet { // an event stream: open for as long as its session
		return http.DefaultTransport.RoundTrip(r)
	}
	b.mu.Lock()
	b.inflight[h]++
	b.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Header.Get("Mcp-Session-Id") == "" {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			b.mu.Lock()
			b.sticky[id] = h
			b.mu.Unlock()
		}
	}
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b.done(h)
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func() { b.done(h) }}
	return resp, nil
}

func (b *balancer) done(h string) {
	b.mu.Lock()
	b.inflight[h]--
	b.mu.Unlock()
}

func (b *balancer) takeOut(h string) {
	b.mu.Lock()
	b.out[h] = true
	b.mu.Unlock()
}

func (b *balancer) busy(h string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inflight[h]
}

type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (c *countedBody) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.done)
	return err
}

// faultReplica is one toolsearch serve process of the service.
type faultReplica struct {
	cmd  *exec.Cmd
	host string
	logs *lineWatcher
}

func startFaultReplica(t *testing.T, bin, dir, name, redisURL string, servers map[string]any) *faultReplica {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": map[string]any{
		"cluster": map[string]any{"redis": redisURL, "prefix": "faults", "replica": name}}})
	cfg := filepath.Join(dir, name+".json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-c", cfg, "--state-dir", filepath.Join(dir, "state-"+name), "--exposure", "search",
		"--http", "127.0.0.1:0", "--log-level", "info")
	cmd.Dir = dir
	stderr, _ := cmd.StderrPipe()
	var tee io.Writer
	if testing.Verbose() {
		tee = os.Stderr
	}
	r := &faultReplica{cmd: cmd, logs: watchLines(stderr, tee)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	r.host = waitAddr(t, r.logs, exited)
	return r
}

// TestClusterFaults: two toolsearch serve processes on one Redis, behind
// a balancer, under a steady load of 2026-07-28 clients (every request to
// the next replica) and sticky 2025-11-25 sessions. Redis is killed and
// restarted, the network to it slowed below and then past the command
// timeout, and one replica SIGKILLed in the middle of a call. No request
// fails but that call, which fails with an error naming the connection;
// none waits past a bound; the killed replica's sessions go on at the
// other; each replica says it is degraded while Redis is away, and is
// well again after.
func TestClusterFaults(t *testing.T) {
	t.Parallel()
	everything := npmBin(t, "mcp-server-everything")
	srv := redistest.Start(t)
	px := newDelayProxy(t, srv.Addr())
	bin := toolsearchBinary(t)
	dir := t.TempDir()
	servers := map[string]any{"everything": map[string]any{"command": everything}}
	redisURL := "redis://" + px.ln.Addr().String() + "/0"
	a := startFaultReplica(t, bin, dir, "a", redisURL, servers)
	b := startFaultReplica(t, bin, dir, "b", redisURL, servers)
	lb := &balancer{hosts: []string{a.host, b.host}, out: map[string]bool{}, sticky: map[string]string{}, inflight: map[string]int{}}
	hc := &http.Client{Transport: lb}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	connect := func(version string) *mcp.ClientSession {
		t.Helper()
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		cl := mcp.NewClient(&mcp.Implementation{Name: "faults", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + a.host + "/mcp", HTTPClient: hc, MaxRetries: 10}, opts)
		if err != nil {
			t.Fatalf("connect: %v\n%s\n%s", err, a.logs.String(), b.logs.String())
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	echo := func(cs *mcp.ClientSession, msg string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
			"name": "everything__echo", "arguments": map[string]any{"message": msg}}})
		if err != nil {
			return err
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		if res.IsError || !strings.Contains(sb.String(), msg) {
			return fmt.Errorf("echo %q: %s", msg, sb.String())
		}
		return nil
	}
	// Both replicas serve the everything server's tools.
	probe := connect("")
	deadline := time.Now().Add(90 * time.Second)
	for ok := 0; ok < 4; {
		if err := echo(probe, "ready?"); err != nil {
			ok = 0
			if time.Now().After(deadline) {
				t.Fatalf("not ready: %v\n%s\n%s", err, a.logs.String(), b.logs.String())
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		ok++
	}

	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		ops     atomic.Int64
		slowest atomic.Int64
		errMu   sync.Mutex
		errs    []string
	)
	worker := func(cs *mcp.ClientSession, name string) {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			err := echo(cs, fmt.Sprintf("%s-%d", name, i))
			d := time.Since(start)
			for {
				old := slowest.Load()
				if int64(d) <= old || slowest.CompareAndSwap(old, int64(d)) {
					break
				}
			}
			ops.Add(1)
			if err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Sprintf("%s op %d after %v: %v", name, i, d, err))
				errMu.Unlock()
			}
		}
	}
	var sessions []*mcp.ClientSession
	for i := range 4 {
		sessions = append(sessions, connect("2025-11-25")) // sticky: two per replica
		wg.Add(2)
		go worker(sessions[i], fmt.Sprintf("session-%d", i))
		go worker(connect(""), fmt.Sprintf("stateless-%d", i))
	}
	onB := 0
	for _, cs := range sessions {
		lb.mu.Lock()
		if lb.sticky[cs.ID()] == b.host {
			onB++
		}
		lb.mu.Unlock()
	}
	health := func(r *faultReplica) string {
		resp, err := http.Get("http://" + r.host + "/healthz")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitHealth := func(r *faultReplica, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(health(r), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: /healthz does not say %s: %s", r.host, want, health(r))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	phase := func(what string, d time.Duration) {
		before := ops.Load()
		time.Sleep(d)
		if ops.Load() == before {
			t.Errorf("no operation completed while %s", what)
		}
	}

	phase("all is well", time.Second)
	srv.Kill()
	waitHealth(a, `"degraded"`)
	waitHealth(b, `"degraded"`)
	phase("Redis was down", 1500*time.Millisecond)
	srv.Restart()
	waitHealth(a, `"status": "ok"`)
	waitHealth(b, `"status": "ok"`)
	phase("Redis was back", time.Second)
	px.delay.Store(int64(200 * time.Millisecond)) // slow, within the command timeout
	phase("the network to Redis was slow", 1500*time.Millisecond)
	px.delay.Store(int64(3 * time.Second)) // past it
	waitHealth(a, `"degraded"`)
	phase("the network to Redis was too slow", 1500*time.Millisecond)
	px.delay.Store(0)
	waitHealth(a, `"status": "ok"`)
	waitHealth(b, `"status": "ok"`)
	phase("the network to Redis was fast again", time.Second)

	// A slow call on b, then b is taken out of the balancer, and killed
	// once that call is all it serves.
	slowDone := make(chan error, 1)
	onlyB := &http.Client{Transport: &balancer{hosts: []string{b.host}, out: map[string]bool{}, sticky: map[string]string{}, inflight: map[string]int{}}}
	slowCl := mcp.NewClient(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	slowCS, err := slowCl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + b.host + "/mcp", HTTPClient: onlyB, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := slowCS.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
			"name": "everything__trigger-long-running-operation", "arguments": map[string]any{"duration": 30, "steps": 30}}})
		slowDone <- err
	}()
	lb.takeOut(b.host)
	deadline = time.Now().Add(15 * time.Second)
	for lb.busy(b.host) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("b still serves %d requests of the balancer", lb.busy(b.host))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the slow call is running upstream
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slowDone:
		var netErr net.Error
		if err == nil {
			t.Error("the call on the killed replica succeeded")
		} else if msg := err.Error(); !errors.As(err, &netErr) && !strings.Contains(msg, "EOF") && !strings.Contains(msg, "connection") {
			t.Errorf("the call on the killed replica failed with %q, which does not name the lost connection", msg)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call on the killed replica did not fail within 20 s")
	}
	phase("b was dead", 2*time.Second)
	close(stop)
	wg.Wait()

	if onB == 0 {
		t.Error("no sticky session was on b: its death was not tested")
	}
	for _, cs := range sessions {
		if err := echo(cs, "after-"+cs.ID()[:6]); err != nil {
			t.Errorf("a session after b died: %v", err)
		}
	}
	if d := time.Duration(slowest.Load()); d > 5*time.Second {
		t.Errorf("the slowest operation took %v: something waited past its bound", d)
	}
	t.Logf("%d operations through the faults, the slowest %v; %d of 4 sessions were on b", ops.Load(), time.Duration(slowest.Load()), onB)
	errMu.Lock()
	defer errMu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d of %d operations failed; the first:\n%s", len(errs), ops.Load(), strings.Join(errs[:min(5, len(errs))], "\n"))
	}
	for _, want := range []string{"Redis is unreachable", "Redis is reachable again"} {
		if !strings.Contains(a.logs.String(), want) {
			t.Errorf("a did not log %q", want)
		}
	}
	if !strings.Contains(a.logs.String(), "took over an MCP session another replica held") {
		t.Errorf("a took over no session of b:\n%s", a.logs.String())
	}
}
