package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// loadEnv enables the full-size run.
const loadEnv = "TOOLSEARCH_LOAD"

// Bounds of every wait.
const (
	readyTimeout   = 60 * time.Second // upstream servers to be ready
	connectTimeout = 20 * time.Second // one client session to connect
	opTimeout      = 30 * time.Second // one search or call
	closeTimeout   = 15 * time.Second // one client session to close
	settleTimeout  = 15 * time.Second // goroutines and fds to return after the run
)

// Growth tolerated once every session has closed: a few goroutines and
// descriptors may belong to runtime or HTTP housekeeping that comes and goes.
const (
	goroutineSlack = 8
	fdSlack        = 4
)

// TestLoadSmall is the CI-sized run: 8 sessions × 50 operations.
func TestLoadSmall(t *testing.T) {
	runLoad(t, 8, 50)
}

// TestLoad is the full run, 64 sessions × 1,000 operations, enabled by
// TOOLSEARCH_LOAD=1.
func TestLoad(t *testing.T) {
	if os.Getenv(loadEnv) != "1" {
		t.Skipf("the full load run (64 sessions × 1,000 operations) is slow; set %s=1 to run it", loadEnv)
	}
	runLoad(t, 64, 1000)
}

// usage is a snapshot of the process's resources.
type usage struct {
	goroutines int
	fds        int // -1 where /proc/self/fd is absent
	heap       uint64
}

func measure() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{goroutines: runtime.NumGoroutine(), fds: openFDs(), heap: ms.HeapAlloc}
}

// openFDs counts the process's open file descriptors (-1 when unknown).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// runLoad starts the gateway over the two npm servers and drives it with
// sessions × ops.
func runLoad(t *testing.T, sessions, ops int) {
	drive(t, "gateway", startGateway(t), sessions, ops)
}

// target is what the sessions of a run connect to: one gateway, or the
// replicas of one service behind a load balancer.
type target struct {
	endpoint string          // the MCP endpoint the clients are given
	health   []string        // each gateway's /healthz
	tr       *http.Transport // the connections' pool
	hc       *http.Client    // how the clients reach endpoint (through tr)
}

// stats is what drive measured, for comparing runs.
type stats struct {
	p50, p99 time.Duration
}

// drive warms the target up with one session, measures, runs sessions ×
// ops, closes every session, and checks errors and resource growth.
func drive(t *testing.T, name string, tg target, sessions, ops int) stats {
	t.Helper()
	seed(t, tg, sessions)

	// A warm-up session, so that what the first session sets up once (the
	// HTTP client's pools, the SDK's caches, the upstreams' first answers)
	// is in the baseline.
	if errs := runSessions(t, tg, 1, 20, nil); errs.count.Load() != 0 {
		t.Fatalf("%s: warm-up: %d errors, first: %s", name, errs.count.Load(), errs.first())
	}
	tg.tr.CloseIdleConnections()
	waitSessions(t, tg.health, 0)
	before := measure()

	lat := make([][]time.Duration, sessions)
	var peak atomic.Uint64
	stopSampling := sampleHeap(&peak)
	start := time.Now()
	errs := runSessions(t, tg, sessions, ops, lat)
	elapsed := time.Since(start)
	stopSampling()

	tg.tr.CloseIdleConnections()
	waitSessions(t, tg.health, 0)
	after := settle(before)

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	total := sessions * ops
	var st stats
	t.Logf("%s: %d sessions × %d operations = %d in %v (%.0f ops/s); %d completed, %d errors", name,
		sessions, ops, total, elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds(), len(all), errs.count.Load())
	if len(all) > 0 {
		st = stats{p50: pct(all, 50), p99: pct(all, 99)}
		t.Logf("%s: latency: p50 %v, p90 %v, p99 %v, max %v", name,
			pct(all, 50), pct(all, 90), pct(all, 99), all[len(all)-1])
	}
	t.Logf("%s: heap: %.1f MiB before, %.1f MiB peak during, %.1f MiB after (after GC)", name,
		mib(before.heap), mib(peak.Load()), mib(after.heap))
	t.Logf("%s: goroutines: %d before, %d after; open fds: %d before, %d after", name,
		before.goroutines, after.goroutines, before.fds, after.fds)

	if n := errs.count.Load(); n != 0 {
		t.Errorf("%d of %d operations failed; first: %s", n, total, errs.first())
	}
	if len(all) != total && errs.count.Load() == 0 {
		t.Errorf("%d operations completed, want %d", len(all), total)
	}
	if after.goroutines > before.goroutines+goroutineSlack {
		t.Errorf("goroutines grew from %d to %d after every session closed (tolerance %d); stacks:\n%s",
			before.goroutines, after.goroutines, goroutineSlack, stacks())
	}
	if before.fds >= 0 && after.fds > before.fds+fdSlack {
		t.Errorf("open file descriptors grew from %d to %d after every session closed (tolerance %d)",
			before.fds, after.fds, fdSlack)
	}
	return st
}

// startGateway writes a config of the two npm servers, starts the gateway
// in process, waits until both are ready, and serves it over httptest.
// The target is its search-exposure endpoint.
func startGateway(t *testing.T) target {
	t.Helper()
	dir := t.TempDir()
	base := serveGateway(t, writeLoadConfig(t, dir, nil), filepath.Join(dir, "state"), nil)
	tr := newTransport(t)
	return target{endpoint: base + "/mcp/search", health: []string{base + "/healthz"}, tr: tr, hc: &http.Client{Transport: tr}}
}

// writeLoadConfig writes the config of the two npm servers, the memory
// server's file in dir, with cluster as toolsearch.cluster when not nil.
func writeLoadConfig(t *testing.T, dir string, cluster map[string]any) string {
	t.Helper()
	gw := map[string]any{"limits": map[string]any{"startTimeout": "60s"}}
	if cluster != nil {
		gw["cluster"] = cluster
	}
	doc := map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": npmBin(t, "mcp-server-everything")},
			"memory": map[string]any{"command": npmBin(t, "mcp-server-memory"),
				"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
		},
		"toolsearch": gw,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "toolsearch.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveGateway starts a gateway of the config at path with the state
// directory stateDir (and the cluster c, when not nil), waits until its
// servers are ready, and serves it over httptest; it returns the base URL.
func serveGateway(t *testing.T, path, stateDir string, c gateway.Cluster) string {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateway.StateDir = stateDir
	g, err := gateway.New(cfg, gateway.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() {
		cancel()
		bounded(t, "closing the gateway", 20*time.Second, g.Close)
	})
	waitReady(t, g, "everything", "memory")

	srv := httptest.NewServer(g.Handler(""))
	t.Cleanup(func() {
		if !bounded(t, "closing the HTTP test server", 15*time.Second, srv.Close) {
			srv.CloseClientConnections()
		}
	})
	return srv.URL
}

func newTransport(t *testing.T) *http.Transport {
	tr := &http.Transport{MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// waitReady waits until every named upstream is ready.
func waitReady(t *testing.T, g *gateway.Gateway, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		ready := 0
		var states []string
		for _, st := range g.Statuses() {
			states = append(states, fmt.Sprintf("%s=%s %s", st.Key, st.State, st.Error))
			if slices.Contains(keys, st.Key) && st.State == gateway.StateReady {
				ready++
			}
		}
		if ready == len(keys) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstreams not ready within %v: %s", readyTimeout, strings.Join(states, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errorLog counts errors and keeps the first few.
type errorLog struct {
	count atomic.Int64
	mu    sync.Mutex
	msgs  []string
}

func (e *errorLog) add(format string, args ...any) {
	if e.count.Add(1) <= 5 {
		e.mu.Lock()
		e.msgs = append(e.msgs, fmt.Sprintf(format, args...))
		e.mu.Unlock()
	}
}

func (e *errorLog) first() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.msgs, "; ")
}

// runSessions runs n sessions of ops operations each, concurrently,
// against tg, and returns their errors. When lat is not nil, lat[i] receives session i's
// operation latencies.
func runSessions(t *testing.T, tg target, n, ops int, lat [][]time.Duration) *errorLog {
	t.Helper()
	errs := &errorLog{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := runSession(tg.endpoint, tg.hc, i, ops, errs)
			if lat != nil {
				lat[i] = d
			}
		})
	}
	// Every operation and close is bounded, so the wait is too; this is
	// the backstop.
	limit := time.Duration(ops)*opTimeout + connectTimeout + closeTimeout
	bounded(t, fmt.Sprintf("%d sessions", n), limit, wg.Wait)
	return errs
}

// An operation of the mix.
type op struct {
	tool string
	args map[string]any
	want string // the result text must contain this
}

// mix returns operation j of session i: searches (40%), everything's
// get-sum (25%) and echo (20%), and memory's search_nodes (15%) for the
// session's entity (created by seed), all through the search exposure's
// search_tools and call_tool.
func mix(i, j int) op {
	entity := entityName(i)
	searches := []struct{ q, want string }{
		{"add two numbers sum", "everything__get-sum"},
		{"echo a message back", "everything__echo"},
		{"search nodes in the knowledge graph", "memory__search_nodes"},
		{"create entities memory", "memory__create_entities"},
	}
	switch k := (i*7 + j) % 20; {
	case k < 8:
		s := searches[(i+j)%len(searches)]
		return op{tool: "search_tools", args: map[string]any{"query": s.q}, want: s.want}
	case k < 13:
		return op{tool: "call_tool", args: map[string]any{"name": "everything__get-sum", "arguments": map[string]any{"a": i, "b": j}},
			want: fmt.Sprint(i + j)}
	case k < 17:
		msg := fmt.Sprintf("session %d op %d", i, j)
		return op{tool: "call_tool", args: map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": msg}}, want: msg}
	default:
		return op{tool: "call_tool", args: map[string]any{"name": "memory__search_nodes", "arguments": map[string]any{"query": entity}}, want: entity}
	}
}

// entityName is session i's entity in the memory server.
func entityName(i int) string { return fmt.Sprintf("loadtest-session-%d", i) }

// seed creates the entities of sessions 0 to n-1 in the memory server, in
// one call before the run: server-memory rewrites its whole file at each
// change, and concurrent changes can lose one another there, so the run
// itself only reads from it.
func seed(t *testing.T, tg target, n int) {
	t.Helper()
	ents := make([]any, n)
	for i := range n {
		ents[i] = map[string]any{"name": entityName(i), "entityType": "session", "observations": []string{"made by the load test"}}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "toolsearch-loadtest-seed", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout+opTimeout)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tg.endpoint, HTTPClient: tg.hc}, nil)
	if err != nil {
		t.Fatalf("seed: connect: %v", err)
	}
	defer bounded(t, "closing the seed session", closeTimeout, func() { _ = cs.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{
		"name": "memory__create_entities", "arguments": map[string]any{"entities": ents}}})
	if err != nil {
		t.Fatalf("seed: create_entities: %v", err)
	}
	if res.IsError || !strings.Contains(resultText(res), entityName(n-1)) {
		t.Fatalf("seed: create_entities: %.300s", resultText(res))
	}
}

// runSession connects one streamable HTTP session, runs ops operations and
// closes it, returning each operation's latency.
func runSession(endpoint string, hc *http.Client, i, ops int, errs *errorLog) []time.Duration {
	cl := mcp.NewClient(&mcp.Implementation{Name: "toolsearch-loadtest", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	cancel()
	if err != nil {
		errs.add("session %d: connect: %v", i, err)
		return nil
	}
	defer func() {
		done := make(chan struct{})
		go func() {
			_ = cs.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(closeTimeout):
			errs.add("session %d: close did not finish within %v", i, closeTimeout)
		}
	}()
	lat := make([]time.Duration, 0, ops)
	for j := range ops {
		o := mix(i, j)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: o.tool, Arguments: o.args})
		d := time.Since(start)
		cancel()
		lat = append(lat, d)
		if err != nil {
			errs.add("session %d op %d %s: %v", i, j, o.tool, err)
			continue
		}
		text := resultText(res)
		if res.IsError {
			errs.add("session %d op %d %s: tool error: %s", i, j, o.tool, text)
		} else if !strings.Contains(text, o.want) {
			errs.add("session %d op %d %s: result lacks %q: %.300s", i, j, o.tool, o.want, text)
		}
	}
	return lat
}

// resultText joins a result's text content.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitSessions waits until every gateway's /healthz reports n open
// sessions.
func waitSessions(t *testing.T, healths []string, n int) {
	t.Helper()
	for _, h := range healths {
		waitSessionsOf(t, h, n)
	}
}

func waitSessionsOf(t *testing.T, health string, n int) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(settleTimeout)
	got := -1
	for time.Now().Before(deadline) {
		resp, err := client.Get(health)
		if err == nil {
			var h struct {
				Sessions int `json:"sessions"`
			}
			if json.NewDecoder(resp.Body).Decode(&h) == nil {
				got = h.Sessions
			}
			_ = resp.Body.Close()
			if got == n {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the gateway at %s reports %d open sessions %v after the clients closed them, want %d", health, got, settleTimeout, n)
}

// settle measures until goroutines and fds are back within tolerance of
// before, or settleTimeout passes, and returns the last measure.
func settle(before usage) usage {
	deadline := time.Now().Add(settleTimeout)
	for {
		u := measure()
		if (u.goroutines <= before.goroutines+goroutineSlack && u.fds <= before.fds+fdSlack) || time.Now().After(deadline) {
			return u
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sampleHeap records the peak heap in use every 100ms until stopped.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// pct returns the p-th percentile of sorted durations.
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i]
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// bounded runs f and waits at most d; past that the test fails with every
// goroutine's stack and bounded returns false, leaving f behind.
func bounded(t *testing.T, what string, d time.Duration, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		t.Errorf("%s did not finish within %v; goroutines:\n%s", what, d, stacks())
		return false
	}
}

// stacks returns every goroutine's stack.
func stacks() string {
	buf := make([]byte, 4<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// npmBin returns node_modules/.bin/name, or skips the test when npm ci has
// not been run.
func npmBin(t *testing.T, name string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(file))), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent: run `npm ci` at the repository root to install the test MCP servers", p)
	}
	return p
}
