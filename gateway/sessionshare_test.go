package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// router is the load balancer in front of the replicas: each request goes
// to the host pick names.
type router struct {
	mu   sync.Mutex
	pick func(*http.Request) string
}

func (rt *router) route(pick func(*http.Request) string) {
	rt.mu.Lock()
	rt.pick = pick
	rt.mu.Unlock()
}

func (rt *router) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	h := rt.pick(req)
	rt.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = h, h
	return http.DefaultTransport.RoundTrip(req)
}

// serveKillable serves h on a loopback port; kill closes the listener and
// every connection at once, as a replica that dies does.
func serveKillable(t *testing.T, h http.Handler) (host string, kill func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	var once sync.Once
	kill = func() { once.Do(func() { _ = srv.Close() }) }
	t.Cleanup(kill)
	return ln.Addr().String(), kill
}

// shareFixture is two replicas on one Redis, each with its own upstream
// "alpha" (a stateful Go SDK server over loopback HTTP) and its own
// forwarder process, in dynamic exposure.
type shareFixture struct {
	srv          *redistest.Server
	a, b         *replica
	hostA, hostB string
	killA        func()
	addA         func(string)
	updA, updB   func(string)
	path         func(name string) string // a config for another replica
}

func newShareFixture(t *testing.T, prefix string) *shareFixture {
	t.Helper()
	return newShareFixtureWith(t, prefix, nil)
}

// newShareFixtureWith is newShareFixture with the forwarder's server
// entry changed by edit.
func newShareFixtureWith(t *testing.T, prefix string, edit func(fwd map[string]any)) *shareFixture {
	t.Helper()
	srv := redistest.Start(t)
	f := &shareFixture{srv: srv}
	urlA, addA, updA := cacheUpstream(t, "alpha", 1000, "private")
	urlB, _, updB := cacheUpstream(t, "alpha", 1000, "private")
	f.addA, f.updA, f.updB = addA, updA, updB
	fwd := roleServer(t, "forwarder")
	if edit != nil {
		edit(fwd)
	}
	cfg := func(upstream string) string {
		return clusterConfig(t, map[string]any{
			"alpha": map[string]any{"type": "http", "url": upstream},
			"fwd":   fwd,
		}, srv.URL(0), prefix, map[string]any{"exposure": "dynamic"})
	}
	f.path = func(string) string { return cfg(urlB) }
	f.a = newReplica(t, cfg(urlA), "a", true, false)
	f.b = newReplica(t, cfg(urlB), "b", true, false)
	for _, r := range []*replica{f.a, f.b} {
		waitState(t, r.g, "alpha", 20*time.Second, StateReady)
		waitState(t, r.g, "fwd", 20*time.Second, StateReady)
	}
	f.hostA, f.killA = serveKillable(t, f.a.g.Handler(""))
	f.hostB, _ = serveKillable(t, f.b.g.Handler(""))
	return f
}

// shareClient is a Go SDK client of the session era with what its
// server sent it.
type shareClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	changed  int
	updated  []string
	progress []string
}

func (c *shareClient) seen() (changed int, updated, progress []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed, slices.Clone(c.updated), slices.Clone(c.progress)
}

func connectShared(t *testing.T, host string, rt *router) *shareClient {
	t.Helper()
	c := &shareClient{}
	cl := mcp.NewClient(&mcp.Implementation{Name: "share-client", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.changed++
			c.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated = append(c.updated, r.Params.URI)
			c.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params.Message)
			c.mu.Unlock()
		},
	})
	c.cs = connectVia(t, cl, host, rt)
	return c
}

// connectVia connects cl as a 2025-11-25 client to the gateway at host,
// every request through rt, and closes the session when the test ends.
func connectVia(t *testing.T, cl *mcp.Client, host string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + host + "/mcp",
		HTTPClient: &http.Client{Transport: rt}, MaxRetries: 10}, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func sharedCall(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("tools/call %s: tool error %s", p.Name, b.String())
	}
	return b.String()
}

// rawSessionPost posts one JSON-RPC request in session id to host and
// returns the status and body.
func rawSessionPost(t *testing.T, host, id, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+host+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", era2025)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestClusterSessionSurvivesReplica: a 2025-11-25 session opened on
// replica a, in dynamic exposure, with tools found by a search and a
// resource subscription, continues on replica b when a dies: b lists the
// tools the session had found, delivers the subscription, and serves
// calls and searches; what b changes is saved in turn.
func TestClusterSessionSurvivesReplica(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t, "surv")
	rt := &router{}
	rt.route(func(*http.Request) string { return f.hostA })
	c := connectShared(t, f.hostA, rt)
	id := c.cs.ID()
	if id == "" {
		t.Fatal("no session id")
	}
	if got := toolNames(t, c.cs); !slices.Equal(got, []string{callToolName, searchToolName}) {
		t.Fatalf("a new dynamic session lists %v", got)
	}
	out := sharedCall(t, c.cs, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "weather of a city"}})
	if !strings.Contains(out, "alpha__alpha_weather") {
		t.Fatalf("the search did not find the weather tool: %s", out)
	}
	onA := toolNames(t, c.cs)
	if !slices.Contains(onA, "alpha__alpha_weather") {
		t.Fatalf("the found tool is not listed on a: %v", onA)
	}
	ctx := context.Background()
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "cache://alpha/doc"}); err != nil {
		t.Fatal(err)
	}

	// a dies; every request now reaches b.
	f.killA()
	_ = f.a.c.Close() // and writes nothing more to Redis
	rt.route(func(*http.Request) string { return f.hostB })

	onB := toolNames(t, c.cs)
	if !slices.Equal(onB, onA) {
		t.Errorf("after a died, b lists %v; a listed %v", onB, onA)
	}
	if f.b.log.count("took over an MCP session another replica held") != 1 {
		t.Errorf("b did not log taking the session over once:\n%s", f.b.log.String())
	}
	if got := sharedCall(t, c.cs, &mcp.CallToolParams{Name: "alpha__alpha_weather", Arguments: map[string]any{"city": "Oslo"}}); got != "sunny at alpha" {
		t.Errorf("calling the found tool on b: %q", got)
	}
	// The subscription: b's upstream announces a change; the client's
	// event stream, reopened on b, carries it.
	waitFor(t, "resources/updated through b", 15*time.Second, func() bool {
		f.updB("cache://alpha/doc")
		_, updated, _ := c.seen()
		return slices.Contains(updated, "cache://alpha/doc")
	})
	// A search on b adds to the same session, and is saved: a third
	// replica that takes the session over next lists both tools.
	sharedCall(t, c.cs, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "select:fwd__progress3"}})
	wantC := toolNames(t, c.cs)
	if !slices.Contains(wantC, "fwd__progress3") || !slices.Contains(wantC, "alpha__alpha_weather") {
		t.Fatalf("after a search on b: %v", wantC)
	}
	third := newReplica(t, f.path("c"), "c", true, false)
	waitState(t, third.g, "alpha", 20*time.Second, StateReady)
	hostC, _ := serveKillable(t, third.g.Handler(""))
	rt.route(func(*http.Request) string { return hostC })
	if got := toolNames(t, c.cs); !slices.Equal(got, wantC) {
		t.Errorf("replica c lists %v, want %v", got, wantC)
	}

	// The id never shows in Redis, in any key or value.
	keys, err := redis.Strings(f.srv.Do("KEYS", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		v, _ := redis.String(f.srv.Do("DUMP", k))
		if strings.Contains(k, id) || strings.Contains(v, id) {
			t.Errorf("key %s shows the session id", k)
		}
	}
}

// TestClusterSessionAttacks: a session id is a bearer credential. An id
// no replica handed out is 404 on every replica; a saved state altered in
// Redis is refused (404, logged), and the same state unaltered is taken
// over; a state cannot be moved to another id.
func TestClusterSessionAttacks(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t, "atk")
	rt := &router{}
	rt.route(func(*http.Request) string { return f.hostA })
	c := connectShared(t, f.hostA, rt)
	sharedCall(t, c.cs, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "weather of a city"}})
	id := c.cs.ID()
	list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	for _, forged := range []string{"GUESSEDSESSIONID0000000000", strings.ToUpper(id[:len(id)-1]) + "x", id + "x", "../../session"} {
		for _, host := range []string{f.hostA, f.hostB} {
			if code, body := rawSessionPost(t, host, forged, list); code != http.StatusNotFound {
				t.Errorf("forged id %q on %s: %d %s, want 404", forged, host, code, body)
			}
		}
	}
	keys, err := redis.Strings(f.srv.Do("KEYS", "atk:session:*"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("session keys %v (%v), want one", keys, err)
	}
	orig, err := redis.Bytes(f.srv.Do("GET", keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	// Altered: one byte of the sealed state.
	bad := append([]byte(nil), orig...)
	bad[len(bad)/2] ^= 0x20
	if _, err := f.srv.Do("SET", keys[0], bad, "PX", time.Minute.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	if code, body := rawSessionPost(t, f.hostB, id, list); code != http.StatusNotFound {
		t.Errorf("an altered state is taken over: %d %s", code, body)
	}
	if f.b.log.count("refusing a saved session state") == 0 {
		t.Errorf("b did not log the refusal:\n%s", f.b.log.String())
	}
	// Replaced by a state in clear that grants more (an attacker without
	// the id can write JSON, not seal it).
	forgedState, _ := json.Marshal(savedSession{Version: savedSessionVersion, Endpoint: "dynamic", Mode: "full"})
	_, _ = f.srv.Do("SET", keys[0], forgedState, "PX", time.Minute.Milliseconds())
	if code, body := rawSessionPost(t, f.hostB, id, list); code != http.StatusNotFound {
		t.Errorf("a forged state is taken over: %d %s", code, body)
	}
	// The genuine state, put back, is taken over: the refusals were the
	// alterations'.
	_, _ = f.srv.Do("SET", keys[0], orig, "PX", time.Minute.Milliseconds())
	code, body := rawSessionPost(t, f.hostB, id, list)
	if code != http.StatusOK || !strings.Contains(body, "alpha__alpha_weather") {
		t.Errorf("the genuine state is not taken over: %d %s", code, body)
	}
	// Moved under another id's key: the new session's key gets a's
	// sealed state.
	d := connectShared(t, f.hostA, rt)
	toolNames(t, d.cs)
	waitFor(t, "the second session's state", 5*time.Second, func() bool {
		k, _ := redis.Strings(f.srv.Do("KEYS", "atk:session:*"))
		return len(k) == 2
	})
	all, _ := redis.Strings(f.srv.Do("KEYS", "atk:session:*"))
	for _, k := range all {
		if k != keys[0] {
			_, _ = f.srv.Do("SET", k, orig, "PX", time.Minute.Milliseconds())
		}
	}
	hostC := f.hostB
	if code, body := rawSessionPost(t, hostC, d.cs.ID(), list); code != http.StatusNotFound {
		t.Errorf("a state moved to another id's key is taken over: %d %s", code, body)
	}
}

// TestClusterStreamOnAnotherReplica: the client's requests reach replica
// a, its event stream (GET) replica b. A list_changed that a's upstream
// causes reaches the client through b (over Redis pub/sub), and the
// progress of a call made on a reaches it on that call's own stream.
func TestClusterStreamOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t, "strm")
	rt := &router{}
	var gets atomic.Int64
	rt.route(func(r *http.Request) string {
		if r.Method == http.MethodGet {
			gets.Add(1)
			return f.hostB
		}
		return f.hostA
	})
	c := connectShared(t, f.hostA, rt)
	id := c.cs.ID()
	toolNames(t, c.cs)
	waitFor(t, "the event stream open on b", 10*time.Second, func() bool {
		hsn := f.b.g.httpSessionTable().lookup(id)
		return hsn != nil && hsn.s.share != nil && hsn.s.share.tr.gets.Load() > 0
	})
	before, _, _ := c.seen()
	f.addA("alpha_forecast") // only a's upstream grows
	waitFor(t, "tools/list_changed through b", 15*time.Second, func() bool {
		changed, _, _ := c.seen()
		return changed > before
	})
	var m bytes.Buffer
	f.b.c.WriteMetrics(&m)
	if !strings.Contains(m.String(), `toolsearch_cluster_stream_delivered_total{replica="b"} `) ||
		strings.Contains(m.String(), `toolsearch_cluster_stream_delivered_total{replica="b"} 0`) {
		t.Errorf("b delivered no stream message:\n%s", m.String())
	}
	if hsn := f.a.g.httpSessionTable().lookup(id); hsn == nil || hsn.s.share.tr.gets.Load() != 0 {
		t.Errorf("a holds the event stream, or not the session")
	}
	// A search on a finds the new tool: the list the client is told of.
	out := sharedCall(t, c.cs, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "select:alpha__alpha_forecast"}})
	if !strings.Contains(out, "alpha__alpha_forecast") {
		t.Errorf("a's search does not find the new tool: %s", out)
	}
	// Progress of a call made on a.
	p := &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "fwd__progress3", "arguments": map[string]any{}}}
	p.SetProgressToken("tok-1")
	if got := sharedCall(t, c.cs, p); got != "done" {
		t.Errorf("progress3: %q", got)
	}
	waitFor(t, "three progress notifications", 5*time.Second, func() bool {
		_, _, progress := c.seen()
		return len(progress) >= 3
	})
	if gets.Load() == 0 {
		t.Error("no GET went to b")
	}
	// The client closes the session (DELETE, on a): b's copy closes too,
	// and the saved state is gone.
	closeSession(t, c.cs)
	waitFor(t, "b's copy of the session closed", 10*time.Second, func() bool {
		return f.b.g.httpSessionTable().lookup(id) == nil && f.a.g.httpSessionTable().lookup(id) == nil
	})
	if keys, _ := redis.Strings(f.srv.Do("KEYS", "strm:session:*")); len(keys) != 0 {
		t.Errorf("saved states outlive the session: %v", keys)
	}
}

// TestClusterSessionNotSticky: every request of a dynamic session goes to
// the next replica. What a search on one replica found is listed and
// callable on the other.
func TestClusterSessionNotSticky(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t, "rr")
	rt := &router{}
	var n atomic.Int64
	rt.route(func(*http.Request) string {
		if n.Add(1)%2 == 0 {
			return f.hostB
		}
		return f.hostA
	})
	c := connectShared(t, f.hostA, rt)
	for i, q := range []string{"weather of a city", "select:fwd__progress3", "select:fwd__touch"} {
		sharedCall(t, c.cs, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": q}})
		// Two lists, so that one of them reaches each replica.
		first, second := toolNames(t, c.cs), toolNames(t, c.cs)
		if !slices.Equal(first, second) || len(first) != 3+i {
			t.Fatalf("after search %d the replicas list %v and %v", i+1, first, second)
		}
	}
	if got := sharedCall(t, c.cs, &mcp.CallToolParams{Name: "alpha__alpha_weather", Arguments: map[string]any{"city": "Rome"}}); got != "sunny at alpha" {
		t.Errorf("call: %q", got)
	}
}

// TestClusterSessionCountsOnce: under a cap of 2 for the service, a
// session that both replicas hold (every request to the next one) counts
// once: one more session opens, a third is refused.
func TestClusterSessionCountsOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"echo": roleServer(t, "echo")}, srv.URL(0), "once",
		map[string]any{"http": map[string]any{"maxSessions": 2}, "exposure": "search"})
	a := newReplica(t, path, "a", false, false)
	b := newReplica(t, path, "b", false, false)
	hostA, _ := serveKillable(t, a.g.Handler(""))
	hostB, _ := serveKillable(t, b.g.Handler(""))
	rt := &router{}
	var n atomic.Int64
	rt.route(func(r *http.Request) string {
		if n.Add(1)%2 == 0 {
			return hostB
		}
		return hostA
	})
	c := connectShared(t, hostA, rt)
	toolNames(t, c.cs)
	toolNames(t, c.cs)
	if a.g.httpSessionTable().lookup(c.cs.ID()) == nil || b.g.httpSessionTable().lookup(c.cs.ID()) == nil {
		t.Fatal("the session is not held by both replicas")
	}
	direct := &router{}
	direct.route(func(*http.Request) string { return hostA })
	connectShared(t, hostA, direct) // the second session of the service
	cl := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + hostB + "/mcp"}, legacySession); err == nil {
		_ = cs.Close()
		t.Error("a third session opened under a cap of 2")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("the third session: %v, want 503", err)
	}
}
