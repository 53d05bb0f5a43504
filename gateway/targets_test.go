package gateway

import (
	"context"
	"encoding/json"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// sharedCatalog returns the real catalog's path, or skips.
func sharedCatalog(t testing.TB) string { return sharedtest.CatalogPath(t) }

// cachedFixture writes a config of the 113 catalog servers (lazy, so none
// starts) and their manifests, as a previous run of the gateway would have
// left them.
func cachedFixture(t testing.TB) (cfgPath string, snap *catalog.Snapshot) {
	t.Helper()
	snap, err := catalog.LoadFile(sharedCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	servers := map[string]any{}
	for _, s := range snap.Servers() {
		e := roleServer(t, "echo")
		e["lazy"] = true
		servers[s.Key] = e
	}
	cfgPath = writeConfig(t, servers, map[string]any{"stateDir": state})
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cfg.Servers {
		srv, _ := snap.Server(cs.Key)
		m := &upstream.Manifest{Key: cs.Key, Fingerprint: upstream.Fingerprint(cs), SavedAt: time.Now(), Tokens: srv.Tokens()}
		for _, tl := range srv.Tools {
			m.Tools = append(m.Tools, tl.Raw)
		}
		if err := saveManifest(state, m); err != nil {
			t.Fatal(err)
		}
	}
	return cfgPath, snap
}

// TestCachedCatalogTargets measures, over the 113-server catalog as cached
// manifests: the time from start to the first search answered (target 200
// ms), and the tokens of the initial tools/list in search and dynamic modes
// (target 1,500; full is about 1.06M). Not parallel: it times a start. It
// skips under the race detector, which makes the figures meaningless and
// the run slow; .ci/run runs it without.
func TestCachedCatalogTargets(t *testing.T) {
	if raceEnabled {
		t.Skip("a measurement: run without -race (.ci/run does)")
	}
	cfgPath, snap := cachedFixture(t)
	fullTokens := 0
	for _, s := range snap.Servers() {
		fullTokens += s.Tokens()
	}
	// The first start after the manifests were cached builds the index
	// (and saves it); later starts load it.
	t.Logf("TARGET first search after start without a saved index (in process): %v", firstSearchInProcess(t, cfgPath))
	t.Run("stdio", func(t *testing.T) { testCachedCatalogStdioStart(t, cfgPath) })
	g := firstSearchTargets(t, cfgPath, snap)

	// The initial tools/list in each mode, counted in o200k tokens over the
	// JSON of the tools array a client receives.
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	srv := serveHTTP(t, g.Handler(""))
	for _, mode := range []string{"search", "dynamic"} {
		hc := connectHTTP(t, srv.URL+"/mcp/"+mode, nil)
		res, err := hc.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Tools)
		n := catalog.CountTokens(string(b))
		t.Logf("TARGET initial tools/list in %s mode: %d tools, %d tokens (target 1500; all definitions: %d tokens)", mode, len(res.Tools), n, fullTokens)
		if n > 1500 {
			t.Errorf("%s mode tools/list is %d tokens", mode, n)
		}
	}
	if m, _ := g.Exposure(); m != "dynamic" {
		t.Errorf("auto picks %s over the 113-server catalog", m)
	}
}

// firstSearchInProcess starts a gateway on cfgPath, saves its index as a
// running gateway would once its catalog settles, and returns the time from
// reading the config to the first search's answer.
func firstSearchInProcess(t *testing.T, cfgPath string) time.Duration {
	start := time.Now()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	cl, c := newClient(nil)
	if c.cs, err = cl.Connect(ctx, ct, legacySession); err != nil {
		t.Fatal(err)
	}
	defer closeSession(t, c.cs)
	if hits := c.search(t, "create a pull request on github"); len(hits) == 0 {
		t.Fatal("no hits from the cached catalog")
	}
	d := time.Since(start)
	if g.savedIndex != nil {
		t.Fatal("a saved index was loaded before any was saved")
	}
	if err := g.settleIndex(); err != nil {
		t.Fatal(err)
	}
	return d
}

// firstSearchTargets measures, in process, config load → gateway (saved
// index loaded) → client connected → first search, and returns the
// gateway, started.
func firstSearchTargets(t *testing.T, cfgPath string, snap *catalog.Snapshot) *Gateway {
	start := time.Now()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := g.savedIndex != nil
	runCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	g.Start(runCtx)
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	cl, c := newClient(nil)
	c.cs, err = cl.Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, c.cs) })
	hits := c.search(t, "create a pull request on github")
	firstSearch := time.Since(start)
	if len(hits) == 0 {
		t.Fatal("no hits from the cached catalog")
	}
	t.Logf("TARGET first search after start (in process, 113 cached servers, %d tools, saved index): %v (target 200ms)", len(snap.Tools()), firstSearch)
	if !loaded {
		t.Error("the saved index was not loaded")
	}
	// Asserted loosely (15 times the target): machines running this are
	// small and shared, and a busy one must not make the test flaky. The
	// figure itself is logged above.
	if firstSearch > 3*time.Second {
		t.Errorf("first search took %v", firstSearch)
	}
	for _, st := range g.Statuses()[:3] {
		if st.State != StateIdle || !st.FromCache {
			t.Errorf("server %s: %s from cache %v", st.Key, st.State, st.FromCache)
		}
	}
	return g
}

// testCachedCatalogStdioStart measures the same from process spawn: the
// gateway binary (the test binary in role gateway-stdio) started by a client
// over stdio, to the first search result.
func testCachedCatalogStdioStart(t *testing.T, cfgPath string) {
	start := time.Now()
	c := connectStdio(t, cfgPath, "search")
	hits := c.search(t, "send a slack message")
	d := time.Since(start)
	t.Logf("TARGET first search after process spawn over stdio (113 cached servers, saved index): %v (target 200ms)", d)
	if len(hits) == 0 {
		t.Fatal("no hits")
	}
	if d > 5*time.Second { // loosely, as above
		t.Errorf("first search took %v", d)
	}
}

// echoHTTPServer serves a Go SDK echo server over loopback streamable HTTP.
func echoHTTPServer(t testing.TB) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo-http"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	srv := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	return srv.URL
}

// overheadPair returns a client connected straight to an HTTP echo server
// and one connected to it through the gateway, both over loopback HTTP.
func overheadPair(t testing.TB) (direct, via *mcp.ClientSession) {
	upURL := echoHTTPServer(t)
	g := startGateway(t, writeConfig(t, map[string]any{"up": map[string]any{"type": "http", "url": upURL}}, nil))
	waitState(t, g, "up", 10*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := &mcp.ClientSessionOptions{ProtocolVersion: upstream.LegacyProtocol}
	var err error
	direct, err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: upURL}, opts)
	if err != nil {
		t.Fatal(err)
	}
	via, err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, direct) })
	t.Cleanup(func() { closeSession(t, via) })
	return direct, via
}

func callEcho(tb testing.TB, cs *mcp.ClientSession, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "ping"}})
	if err != nil || res.IsError {
		tb.Fatalf("call %s: %v %v", name, err, res)
	}
}

// BenchmarkCallDirect and BenchmarkCallGateway make the same call with the
// same client to the same server over loopback HTTP, directly and through
// the gateway:
//
//	go test ./gateway -run '^$' -bench 'BenchmarkCall' -benchtime 2000x
func BenchmarkCallDirect(b *testing.B) {
	direct, _ := overheadPair(b)
	b.ResetTimer()
	for b.Loop() {
		callEcho(b, direct, "echo")
	}
}

// BenchmarkCallGateway: see BenchmarkCallDirect.
func BenchmarkCallGateway(b *testing.B) {
	_, via := overheadPair(b)
	b.ResetTimer()
	for b.Loop() {
		callEcho(b, via, "echo")
	}
}

// BenchmarkCallOverhead makes the same call directly and through the
// gateway, alternately in one loop, and reports both medians, the
// difference and the ratio (target: ≤ 10% or ≤ 0.3 ms more):
//
//	go test ./gateway -run '^$' -bench BenchmarkCallOverhead -benchtime 2000x
func BenchmarkCallOverhead(b *testing.B) {
	direct, via := overheadPair(b)
	for range 20 { // warm up
		callEcho(b, direct, "echo")
		callEcho(b, via, "echo")
	}
	var d, v []time.Duration
	b.ResetTimer()
	for b.Loop() {
		s := time.Now()
		callEcho(b, direct, "echo")
		d = append(d, time.Since(s))
		s = time.Now()
		callEcho(b, via, "echo")
		v = append(v, time.Since(s))
	}
	md, mv := median(d), median(v)
	b.ReportMetric(float64(md.Microseconds()), "direct-µs")
	b.ReportMetric(float64(mv.Microseconds()), "gateway-µs")
	b.ReportMetric(float64((mv - md).Microseconds()), "overhead-µs")
	b.ReportMetric(float64(mv)/float64(md), "ratio")
}

// TestCallOverhead reports the median of direct and gateway calls,
// interleaved, and the ratio (target: ≤ 10% or ≤ 0.3 ms more).
func TestCallOverhead(t *testing.T) {
	direct, via := overheadPair(t)
	const n = 300
	var d, v []time.Duration
	for range 20 { // warm up
		callEcho(t, direct, "echo")
		callEcho(t, via, "echo")
	}
	for range n {
		s := time.Now()
		callEcho(t, direct, "echo")
		d = append(d, time.Since(s))
		s = time.Now()
		callEcho(t, via, "echo")
		v = append(v, time.Since(s))
	}
	md, mv := median(d), median(v)
	t.Logf("TARGET call overhead: direct median %v, through the gateway %v: +%v (%.0f%%); target ≤ 10%% or ≤ 0.3ms",
		md, mv, mv-md, 100*float64(mv-md)/float64(md))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

var _ = exec.Command
