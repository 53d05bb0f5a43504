package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/cluster"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// clusterLog collects a replica's log lines.
type clusterLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *clusterLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return l.b.Write(p)
}

func (l *clusterLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (l *clusterLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replica is one gateway of a cluster under test.
type replica struct {
	g    *Gateway
	c    *cluster.Cluster
	log  *clusterLog
	base string // its HTTP address, when served
}

// clusterConfig writes a config of servers that shares state through the
// Redis at redisURL under prefix.
func clusterConfig(t *testing.T, servers map[string]any, redisURL, prefix string, extra map[string]any) string {
	t.Helper()
	gw := map[string]any{"cluster": map[string]any{"redis": redisURL, "prefix": prefix}}
	for k, v := range extra {
		gw[k] = v
	}
	return writeConfig(t, servers, gw)
}

// testClusterKey is the cluster key of the replicas under test.
const testClusterKey = "the-cluster-key-of-the-gateway-tests-0123"

// newReplica makes a gateway of the config at path named name, with its
// own Cluster (under testClusterKey); start starts it (and its cluster
// watcher), serve serves it over loopback HTTP.
func newReplica(t *testing.T, path, name string, start, serve bool) *replica {
	t.Helper()
	return newReplicaKey(t, path, name, testClusterKey, start, serve)
}

// newReplicaKey is newReplica with the cluster key key ("" for none).
func newReplicaKey(t *testing.T, path, name, key string, start, serve bool) *replica {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateway.Cluster.Replica = name
	cfg.Gateway.Cluster.Key = key
	r := &replica{log: &clusterLog{}}
	log := slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test_replica", name)
	ctx, cancel := context.WithCancel(context.Background())
	r.c, err = cluster.Open(ctx, cfg.Gateway.Cluster, log)
	if err != nil {
		t.Fatal(err)
	}
	go r.c.Run(ctx)
	r.g, err = New(cfg, Options{Logger: log, Cluster: r.c})
	if err != nil {
		t.Fatal(err)
	}
	r.g.indexQuiet = 50 * time.Millisecond // save the index soon after the catalog settles
	if start {
		r.g.Start(ctx)
	}
	t.Cleanup(func() {
		stopGateway(t, r.g, cancel)
		_ = r.c.Close()
	})
	if serve {
		r.base = serveHTTP(t, r.g.Handler("")).URL
	}
	return r
}

// waitShared waits until the cluster holds the index of g's catalog.
func waitShared(t *testing.T, srv *redistest.Server, prefix string, g *Gateway) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		digest := hex.EncodeToString(search.Fingerprint(g.Snapshot()))
		if n, _ := redis.Int(srv.Do("EXISTS", prefix+":blob:index:"+digest)); n == 1 {
			return digest
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index of replica's catalog was not shared within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterSharedIndex: a replica that starts with an empty state
// directory answers at once from the manifests and the index another
// replica shared, without starting a server or building the index; a
// catalog that differs gets an index of its own, under another key.
func TestClusterSharedIndex(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	servers := map[string]any{"echo": roleServer(t, "echo")}
	path := clusterConfig(t, servers, srv.URL(0), "idx", nil)

	a := newReplica(t, path, "a", true, false)
	waitState(t, a.g, "echo", 20*time.Second, StateReady)
	digest := waitShared(t, srv, "idx", a.g)

	// b: no state directory, not started: everything it knows came from
	// the cluster.
	b := newReplica(t, path, "b", false, false)
	if got := b.g.sharedLoads.Load(); got != 1 {
		t.Fatalf("b loaded %d shared indexes, want 1 (log:\n%s)", got, b.log.String())
	}
	if b.log.count("search index loaded from the cluster") != 1 {
		t.Errorf("b did not log loading the shared index:\n%s", b.log.String())
	}
	if got := hex.EncodeToString(search.Fingerprint(b.g.Snapshot())); got != digest {
		t.Errorf("b's catalog has digest %s, a shared %s", got, digest)
	}
	if st := b.g.Statuses(); len(st) != 1 || st[0].State == StateReady || !st[0].FromCache || st[0].Tools == 0 {
		t.Errorf("b's servers: %+v; want echo not started, its tools from the shared manifest", st)
	}
	ctx := context.Background()
	for _, q := range []string{"echo the text back", "select:echo__echo"} {
		ra, err := a.g.Search(ctx, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.g.Search(ctx, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if names(ra) == "" || names(ra) != names(rb) {
			t.Errorf("%q: a finds %q, b %q; want the same, not empty", q, names(ra), names(rb))
		}
	}

	// Another catalog (the same server with other search keywords): the
	// manifest is shared, the index is not, and the one c builds is
	// shared under its own digest.
	echoKw := roleServer(t, "echo")
	echoKw["keywords"] = []string{"parrot", "repeat"}
	path2 := clusterConfig(t, map[string]any{"echo": echoKw}, srv.URL(0), "idx", nil)
	c := newReplica(t, path2, "c", true, false)
	if got := c.g.sharedLoads.Load(); got != 0 {
		t.Errorf("c loaded a shared index for another catalog")
	}
	if st := c.g.Statuses(); len(st) != 1 || !st[0].FromCache {
		t.Errorf("c did not take the shared manifest: %+v", st)
	}
	waitState(t, c.g, "echo", 20*time.Second, StateReady)
	digest2 := waitShared(t, srv, "idx", c.g)
	if digest2 == digest {
		t.Fatal("a changed catalog kept the digest of the old one")
	}
	keys, err := redis.Strings(srv.Do("KEYS", "idx:blob:index:*"))
	if err != nil {
		t.Fatal(err)
	}
	// (a also shared the index of its catalog before echo was listed.)
	for _, d := range []string{digest, digest2} {
		if !slices.Contains(keys, "idx:blob:index:"+d) {
			t.Errorf("shared indexes %v lack %s", keys, d)
		}
	}
	for _, k := range keys {
		n, _ := redis.Int64(srv.Do("TTL", k))
		if ttl := time.Duration(n) * time.Second; ttl <= 0 || ttl > config.DefaultClusterTTL {
			t.Errorf("%s has TTL %v, want within %v", k, ttl, config.DefaultClusterTTL)
		}
	}
}

func names(r search.Result) string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Tool.ID())
	}
	return strings.Join(out, ",")
}

// roundRobin sends each request to the next of its hosts.
type roundRobin struct {
	hosts []string
	n     atomic.Int64
	seen  sync.Map // host → requests
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	h := rr.hosts[int(rr.n.Add(1)-1)%len(rr.hosts)]
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = h, h
	v, _ := rr.seen.LoadOrStore(h, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// rawModern posts a 2026-07-28 request and returns its result's raw JSON.
func rawModern(t *testing.T, endpoint, method, name, params string) json.RawMessage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(modernBody(method, params, era2026)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeader(method, name, era2026) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				b = []byte(d)
				break
			}
		}
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Result == nil {
		t.Fatalf("%s at %s: %d %s", method, endpoint, resp.StatusCode, b)
	}
	return out.Result
}

// TestClusterModernClientsSeeOneList: MCP 2026-07-28 has no sessions, so
// a load balancer may send each request to any replica. Three replicas
// give byte-identical lists (with their cache fields) and search results,
// and a Go SDK client whose every request goes to the next replica lists,
// searches and calls as it would with one gateway.
func TestClusterModernClientsSeeOneList(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	upstream, _ := modernHTTP(t) // a 2026-07-28 server over HTTP
	servers := map[string]any{"echo": roleServer(t, "echo"), "modern": map[string]any{"type": "http", "url": upstream}}
	path := clusterConfig(t, servers, srv.URL(0), "rr", map[string]any{"exposure": "search"})
	var reps []*replica
	for _, name := range []string{"r1", "r2", "r3"} {
		r := newReplica(t, path, name, true, true)
		waitState(t, r.g, "echo", 20*time.Second, StateReady)
		waitState(t, r.g, "modern", 20*time.Second, StateReady)
		reps = append(reps, r)
	}
	type call struct{ method, name, params string }
	for _, c := range []call{
		{"tools/list", "", "{}"},
		{"tools/call", searchToolName, `{"name":"` + searchToolName + `","arguments":{"query":"echo the text"}}`},
		{"tools/call", searchToolName, `{"name":"` + searchToolName + `","arguments":{"query":"select:echo__echo"}}`},
		{"prompts/list", "", "{}"},
		{"resources/list", "", "{}"},
	} {
		var first json.RawMessage
		for i, r := range reps {
			got := rawModern(t, r.base+"/mcp", c.method, c.name, c.params)
			if i == 0 {
				first = got
				continue
			}
			if !bytes.Equal(got, first) {
				t.Errorf("%s %s: replica %s answers\n%s\nreplica r1\n%s", c.method, c.params, r.c.Replica(), got, first)
			}
		}
		if c.method == "tools/list" {
			var lr struct {
				Tools      []struct{ Name string } `json:"tools"`
				TTLMs      *int                    `json:"ttlMs"`
				CacheScope string                  `json:"cacheScope"`
			}
			if err := json.Unmarshal(first, &lr); err != nil || len(lr.Tools) == 0 || lr.CacheScope == "" || lr.TTLMs == nil {
				t.Errorf("tools/list %s: want tools, ttlMs and cacheScope (%v)", first, err)
			}
		}
	}

	// A real client, its requests spread over the replicas.
	var hosts []string
	for _, r := range reps {
		u, _ := url.Parse(r.base)
		hosts = append(hosts, u.Host)
	}
	rr := &roundRobin{hosts: hosts}
	cl := connectEra(t, &mcp.StreamableClientTransport{Endpoint: reps[0].base + "/mcp", HTTPClient: &http.Client{Transport: rr}}, era2026)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lists [][]string
	for range 3 {
		lists = append(lists, cl.list(t))
	}
	for _, l := range lists[1:] {
		if !slices.Equal(l, lists[0]) {
			t.Errorf("lists over the replicas differ: %v and %v", l, lists[0])
		}
	}
	outs := map[string]bool{}
	for range 3 {
		outs[cl.search(t, "echo the text back")] = true
	}
	if len(outs) != 1 {
		t.Errorf("one search over three replicas gave %d different answers: %v", len(outs), outs)
	}
	for i := range 3 {
		res, err := cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName,
			Arguments: map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": fmt.Sprint("hi ", i)}}})
		if err != nil || res.IsError || resultText(res) != fmt.Sprint("hi ", i) {
			t.Errorf("call %d through the replicas: %v %+v", i, err, res)
		}
	}
	for _, h := range hosts {
		v, ok := rr.seen.Load(h)
		if !ok || v.(*atomic.Int64).Load() < 3 {
			t.Errorf("replica %s saw too few of the client's requests", h)
		}
	}
}

// get fetches path from base and returns the status and body.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// modernStatus posts a 2026-07-28 tools/list and returns the status.
func modernStatus(t *testing.T, endpoint string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(modernBody("tools/list", "{}", era2026)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeader("tools/list", "", era2026) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
		t.Error("a 429 without Retry-After")
	}
	return resp.StatusCode
}

// TestClusterRateLimits: a client that spreads its requests over two
// replicas gets the allowance of one gateway, not two; replicas on their
// own (the control) give two.
func TestClusterRateLimits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	servers := map[string]any{"echo": roleServer(t, "echo")}
	tests := []struct {
		name     string
		http     map[string]any
		shared   bool
		requests int
		wantPass int
	}{
		{"global, shared", map[string]any{"rateLimit": map[string]any{"perSecond": 0.2, "burst": 4}}, true, 12, 4},
		{"per client, shared", map[string]any{"sessionRateLimit": map[string]any{"perSecond": 0.2, "burst": 3}}, true, 12, 3},
		{"global, on their own", map[string]any{"rateLimit": map[string]any{"perSecond": 0.2, "burst": 4}}, false, 12, 8},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var bases []string
			for _, name := range []string{"a", "b"} {
				if tc.shared {
					path := clusterConfig(t, servers, srv.URL(0), fmt.Sprint("rl", i), map[string]any{"http": tc.http, "exposure": "search"})
					bases = append(bases, newReplica(t, path, name, false, true).base)
					continue
				}
				path := writeConfig(t, servers, map[string]any{"http": tc.http, "exposure": "search"})
				cfg, err := config.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				g, err := New(cfg, Options{})
				if err != nil {
					t.Fatal(err)
				}
				bases = append(bases, serveHTTP(t, g.Handler("")).URL)
			}
			pass := 0
			for n := range tc.requests {
				switch st := modernStatus(t, bases[n%2]+"/mcp"); st {
				case http.StatusOK:
					pass++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("request %d: status %d", n, st)
				}
			}
			if pass != tc.wantPass {
				t.Errorf("%d of %d requests over two replicas passed, want %d", pass, tc.requests, tc.wantPass)
			}
		})
	}
}

// TestClusterSessionCap: maxSessions counts the sessions of every
// replica; a session that ends gives its place back.
func TestClusterSessionCap(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"echo": roleServer(t, "echo")}, srv.URL(0), "cap",
		map[string]any{"http": map[string]any{"maxSessions": 2}, "exposure": "search"})
	a := newReplica(t, path, "a", false, true)
	b := newReplica(t, path, "b", false, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(base string) (*mcp.ClientSession, error) {
		cl := mcp.NewClient(&mcp.Implementation{Name: "cap-client", Version: "1"}, nil)
		return cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, legacySession)
	}
	s1, err := connect(a.base)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := connect(b.base)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, r := range []*replica{a, b} {
		if s, err := connect(r.base); err == nil {
			s.Close()
			t.Errorf("replica %s opened a third session under a cap of 2 for the service", r.c.Replica())
		} else if !strings.Contains(err.Error(), "Service Unavailable") {
			t.Errorf("replica %s refused with %v, want 503 naming maxSessions", r.c.Replica(), err)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s3, err := connect(b.base)
		if err == nil {
			s3.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed session's place was not given back within 5s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterMetricsNameTheReplica: every sample of /metrics carries the
// replica's label, and the cluster's own metrics are there.
func TestClusterMetricsNameTheReplica(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"echo": roleServer(t, "echo")}, srv.URL(0), "met", nil)
	r := newReplica(t, path, "pod-1", false, true)
	_, body := get(t, r.base, "/metrics")
	samples := 0
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		samples++
		if !strings.Contains(line, `replica="pod-1"`) {
			t.Errorf("a sample without the replica: %q", line)
		}
	}
	if samples < 10 {
		t.Errorf("only %d samples:\n%s", samples, body)
	}
	for _, want := range []string{`toolsearch_searches_total{replica="pod-1"} `, `toolsearch_cluster_redis_up{replica="pod-1"} 1`,
		`toolsearch_search_seconds_bucket{replica="pod-1",le="0.001"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestClusterRedisDown: with Redis killed, replicas keep serving from
// their local state, /healthz says degraded, and the outage is logged
// once; when Redis returns (empty), they rejoin and share their
// manifests and index again, so that a replica started after that loads
// them.
func TestClusterRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	servers := map[string]any{"echo": roleServer(t, "echo")}
	path := clusterConfig(t, servers, srv.URL(0), "down", map[string]any{"exposure": "search",
		"http": map[string]any{"rateLimit": map[string]any{"perSecond": 1000, "burst": 1000}, "maxSessions": 10}})
	a := newReplica(t, path, "a", true, true)
	waitState(t, a.g, "echo", 20*time.Second, StateReady)
	digest := waitShared(t, srv, "down", a.g)

	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "while-down", Version: "1"}, nil)
	for i := range 10 {
		// Lists, searches and new sessions all work without Redis.
		if st := modernStatus(t, a.base+"/mcp"); st != http.StatusOK {
			t.Fatalf("request %d with Redis down: %d", i, st)
		}
		res, err := a.g.Search(ctx, "echo the text back", 3)
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("a search with Redis down: %v %v", err, res)
		}
	}
	start := time.Now()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.base + "/mcp"}, legacySession)
	if err != nil {
		t.Fatalf("a new session with Redis down: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a new session took %v with Redis down", d)
	}
	cs.Close()
	var health struct {
		Status  string `json:"status"`
		Cluster struct {
			Redis, Replica, Error string
		} `json:"cluster"`
	}
	st, body := get(t, a.base, "/healthz")
	if err := json.Unmarshal([]byte(body), &health); err != nil {
		t.Fatal(err)
	}
	if st != http.StatusOK || health.Status != "degraded" || health.Cluster.Redis != "down" || health.Cluster.Replica != "a" || health.Cluster.Error == "" {
		t.Errorf("/healthz with Redis down: %d %s", st, body)
	}
	if n := a.log.count("Redis is unreachable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, a.log.String())
	}

	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body = get(t, a.base, "/healthz")
		_ = json.Unmarshal([]byte(body), &health)
		n, _ := redis.Int(srv.Do("EXISTS", "down:blob:index:"+digest))
		if health.Status == "ok" && health.Cluster.Redis == "up" && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after Redis returned: /healthz %s, index shared again: %v", body, n == 1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := a.log.count("Redis is reachable again"); n != 1 {
		t.Errorf("the return was logged %d times, want once", n)
	}
	c := newReplica(t, path, "c", false, false)
	if c.g.sharedLoads.Load() != 1 {
		t.Errorf("a replica started after the return did not load the index shared again:\n%s", c.log.String())
	}
	if st := c.g.Statuses(); len(st) != 1 || !st[0].FromCache {
		t.Errorf("a replica started after the return did not get the manifest shared again: %+v", st)
	}
}

// TestClusterSharedHints: hints in one replica's state directory reach a
// replica that has none, which then has the same catalog, loads the same
// shared index, and finds the tool by a hint.
func TestClusterSharedHints(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	state := t.TempDir()
	servers := map[string]any{"echo": roleServer(t, "echo")}
	withState := clusterConfig(t, servers, srv.URL(0), "hints", map[string]any{"stateDir": state})
	without := clusterConfig(t, servers, srv.URL(0), "hints", nil)

	// First run: the manifest is cached in the state directory.
	first := newReplica(t, withState, "a", true, false)
	waitState(t, first.g, "echo", 20*time.Second, StateReady)
	tool, ok := first.g.Snapshot().Tool("echo/echo")
	if !ok {
		t.Fatal("no echo/echo")
	}
	const phrase = "parrot my words back to me"
	set := hints.New()
	if err := set.Put(hints.Entry{ID: tool.ID(), Hints: []string{phrase}, Digest: hints.Digest(tool)}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "hints.jsonl"), set.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	// a, restarted, reads the hints file and shares it; its catalog
	// (with the hints) is indexed and shared.
	a := newReplica(t, withState, "a", true, false)
	waitState(t, a.g, "echo", 20*time.Second, StateReady)
	digest := waitShared(t, srv, "hints", a.g)

	b := newReplica(t, without, "b", false, false)
	bt, _ := b.g.Snapshot().Tool("echo/echo")
	if bt == nil || !slices.Contains(bt.Hints, phrase) {
		t.Fatalf("b's echo/echo has hints %v, want the shared %q", bt.Hints, phrase)
	}
	if got := hex.EncodeToString(search.Fingerprint(b.g.Snapshot())); got != digest || b.g.sharedLoads.Load() != 1 {
		t.Errorf("b: digest %s (a shared %s), shared indexes loaded %d; want the same catalog, loaded", got, digest, b.g.sharedLoads.Load())
	}
	res, err := b.g.Search(context.Background(), phrase, 1)
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Tool.ID() != "echo/echo" {
		t.Errorf("b's search for the hint: %v %v, want echo/echo first", names(res), err)
	}
	// Hints written while b runs (its own file, which lacks the shared
	// ones) keep the shared hints known.
	b.g.rehint(hints.New())
	if h, _ := b.g.hintSet.Load().For(bt); !slices.Contains(h, phrase) {
		t.Errorf("after new hints, b knows %q for echo/echo, want the shared %q", h, phrase)
	}
}

// fakeReplica names a replica for writeReplicaMetrics; nothing else of
// it is used.
type fakeReplica struct{ Cluster }

func (fakeReplica) Replica() string        { return "r-9" }
func (fakeReplica) WriteMetrics(io.Writer) {}

func TestReplicaLabel(t *testing.T) {
	t.Parallel()
	g := &Gateway{cluster: fakeReplica{}}
	tests := []struct{ in, want string }{
		{"# HELP x_total Things.\n", "# HELP x_total Things.\n"},
		{"x_total 3\n", "x_total{replica=\"r-9\"} 3\n"},
		{"x_total{server=\"a\"} 3\n", "x_total{replica=\"r-9\",server=\"a\"} 3\n"},
		{"x_total{reason=\"a b {c}\"} 1\n", "x_total{replica=\"r-9\",reason=\"a b {c}\"} 1\n"},
		{"x_bucket{le=\"+Inf\"} 7\ny 1\n", "x_bucket{replica=\"r-9\",le=\"+Inf\"} 7\ny{replica=\"r-9\"} 1\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		g.writeReplicaMetrics(&b, func(w io.Writer) { io.WriteString(w, tc.in) })
		if b.String() != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, b.String(), tc.want)
		}
	}
}

// TestClusterShareHintsTogether: replicas sharing hints at the same
// moment lose none of each other's: each writes back only over the value
// it read, and merges again when another wrote first.
func TestClusterShareHintsTogether(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"echo": roleServer(t, "echo")}, srv.URL(0), "together", nil)
	a := newReplica(t, path, "a", false, false)
	b := newReplica(t, path, "b", false, false)
	const n = 12
	var wg sync.WaitGroup
	for i := range n {
		r := a
		if i%2 == 1 {
			r = b
		}
		wg.Go(func() {
			set := hints.New()
			if err := set.Put(hints.Entry{ID: fmt.Sprintf("echo/tool_%02d", i), Hints: []string{fmt.Sprintf("phrase %d", i)}}); err != nil {
				t.Error(err)
			}
			if !r.g.shareHints(set) {
				t.Errorf("hints %d not shared", i)
			}
		})
	}
	wg.Wait()
	shared := a.g.sharedHintSet()
	if shared == nil || shared.Len() != n {
		got := 0
		if shared != nil {
			got = shared.Len()
		}
		t.Fatalf("the shared hints hold %d entries, want %d", got, n)
	}
}
