package gateway

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/usage"
	"github.com/toolsearch/toolsearch/gateway/cluster"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// learningGateway starts a gateway with learning on over the echo test
// server, its state in dir, and waits for the server.
func learningGateway(t *testing.T, dir string) *Gateway {
	t.Helper()
	path := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{
		"stateDir": dir, "learning": map[string]any{"enabled": true, "halfLife": "24h"},
		"builtins": map[string]any{"lsp": false},
	})
	g := startGateway(t, path)
	if g.learn == nil {
		t.Fatal("learning is off")
	}
	waitState(t, g, "echo", 30*time.Second, StateReady)
	return g
}

// learnedEntries are the gateway's learned entries now.
func learnedEntries(g *Gateway) []usage.Entry {
	return g.learn.store.Load().Entries(time.Now())
}

// strengthOf is the learned strength of (terms of q → tool) in g.
func strengthOf(g *Gateway, q, tool string) float64 {
	terms := strings.Join(sortedTerms(g, q), " ")
	for _, e := range learnedEntries(g) {
		if e.Tool == tool && strings.Join(e.Terms, " ") == terms {
			return e.Strength
		}
	}
	return 0
}

func sortedTerms(g *Gateway, q string) []string {
	ts := g.cur.Load().index.Terms(q)
	slices.Sort(ts)
	return slices.Compact(ts)
}

// TestLearningRecordsTheCallAfterASearch follows one session: only the
// first call of a tool its last search returned, within the window, is
// recorded, with the query's terms and the tool's ID and nothing of the
// call's arguments; the record is saved and read back by the next
// gateway.
func TestLearningRecordsTheCallAfterASearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := learningGateway(t, dir)
	g.learn.window = time.Second // set before any session
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/search", nil)
	const secret = "s3cret-argument-9f2c"
	callEcho := func() {
		t.Helper()
		if out, isErr := c.call(t, callToolName, map[string]any{"name": "echo", "arguments": map[string]any{"text": secret}}); isErr {
			t.Fatalf("echo: %s", out)
		}
	}
	q := "echo the text back unchanged"
	steps := []struct {
		name  string
		do    func()
		query string // the entry checked
		tool  string
		want  float64 // its strength after the step (to 1e-3)
	}{
		{"a call with no search before it", callEcho, q, "echo/echo", 0},
		{"the call after a search", func() {
			if names := c.search(t, q); !slices.Contains(names, "echo") {
				t.Fatalf("search %q found %v", q, names)
			}
			callEcho()
		}, q, "echo/echo", 1},
		{"a second call after the same search", callEcho, q, "echo/echo", 1},
		{"a call of a tool the search did not return", func() {
			if names := c.search(t, "deploy to production"); slices.Contains(names, "echo") {
				t.Fatalf("the search returned echo: %v", names)
			}
			callEcho()
		}, "deploy to production", "echo/echo", 0},
		{"then one it returned", func() {
			if out, isErr := c.call(t, callToolName, map[string]any{"name": "deploy", "arguments": map[string]any{}}); isErr {
				t.Fatalf("deploy: %s", out)
			}
		}, "deploy to production", "echo/deploy", 1},
		{"a call after the window", func() {
			c.search(t, q)
			time.Sleep(1200 * time.Millisecond)
			callEcho()
		}, q, "echo/echo", 1},
		{"a select: teaches nothing", func() {
			c.searchWith(t, map[string]any{"query": "select:echo"})
			callEcho()
		}, q, "echo/echo", 1},
	}
	for _, st := range steps {
		st.do()
		if got := strengthOf(g, st.query, st.tool); got < st.want-1e-3 || got > st.want+1e-3 {
			t.Fatalf("%s: %s after %q has strength %v, want %v (entries %+v)", st.name, st.tool, st.query, got, st.want, learnedEntries(g))
		}
	}
	if n := len(learnedEntries(g)); n != 2 {
		t.Fatalf("%d entries, want 2: %+v", n, learnedEntries(g))
	}
	if err := g.saveLearning(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, usage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) || !strings.Contains(string(data), "echo/deploy") {
		t.Fatalf("the saved record holds the call's argument, or lacks the tool:\n%s", data)
	}
	// The next gateway on the same state directory starts with it.
	g2, err := New(g.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g2.learn == nil || g2.learn.store.Load().Len() != 2 {
		t.Fatalf("a new gateway read %v", g2.learn)
	}
}

// TestLearningPoisonIsBounded is a client that searches and calls one
// tool over and over to push it up for everyone. The bound it meets: a
// tool it pushes scores at most 1 + Weights.Learned times (twice) what it
// would score without learning, only on queries it matches anyway, and
// never above a tool named exactly.
func TestLearningPoisonIsBounded(t *testing.T) {
	t.Parallel()
	g := learningGateway(t, t.TempDir())
	srv := serveHTTP(t, g.Handler(""))
	hostile := connectHTTP(t, srv.URL+"/mcp/search", nil)
	const pushed = "echo/slow"
	for range 40 {
		names := hostile.search(t, "work for a while, echo the text")
		if !slices.Contains(names, "slow") {
			t.Fatalf("the search did not return slow: %v", names)
		}
		if out, isErr := hostile.call(t, callToolName, map[string]any{"name": "slow", "arguments": map[string]any{"millis": 0}}); isErr {
			t.Fatalf("slow: %s", out)
		}
	}
	if s := strengthOf(g, "work for a while, echo the text", pushed); s < 39 {
		t.Fatalf("the pushed tool has strength %v after 40 calls", s)
	}
	ctx := context.Background()
	bound := 1 + search.DefaultWeights.Learned
	for _, q := range []string{"work for a while, echo the text", "echo the text", "report progress while working", "delete every record", "echo"} {
		learned, err := g.Search(ctx, q, search.MaxMaxResults)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := g.cur.Load().index.Search(ctx, search.Request{Query: q, MaxResults: search.MaxMaxResults, Visible: g.Visible})
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]float64{}
		for _, h := range plain.Hits {
			before[h.Tool.ID()] = h.Score
		}
		for _, h := range learned.Hits {
			b, ok := before[h.Tool.ID()]
			if !ok {
				t.Fatalf("%q: learning brought in %s, which the query does not match", q, h.Tool.ID())
			}
			if h.Score > b*bound*(1+1e-9) {
				t.Fatalf("%q: %s scores %v with learning, %v without: above the bound ×%v", q, h.Tool.ID(), h.Score, b, bound)
			}
			if h.Tool.ID() == pushed && q == "work for a while, echo the text" && !(h.Score > b*1.5) {
				t.Fatalf("%q: the pushed tool scores %v with learning, %v without: learning is not in effect", q, h.Score, b)
			}
		}
		if q == "echo" && (len(learned.Hits) == 0 || learned.Hits[0].Tool.ID() != "echo/echo") {
			t.Fatalf("the exact name echo is not first: %v", learned.Hits)
		}
	}
}

// TestLearningRefusedFileLeftAlone checks that a corrupt record leaves
// learning off, the gateway working and the file as it was.
func TestLearningRefusedFileLeftAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := []byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":["b","a"],"tool":"x/y","weight":1,"at":1}]}`)
	p := filepath.Join(dir, usage.FileName)
	if err := os.WriteFile(p, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{
		"stateDir": dir, "learning": map[string]any{"enabled": true}})
	g := startGateway(t, path)
	if g.learn != nil {
		t.Fatal("learning is on over a refused file")
	}
	waitState(t, g, "echo", 30*time.Second, StateReady)
	if res, err := g.Search(context.Background(), "echo the text", 5); err != nil || len(res.Hits) == 0 {
		t.Fatalf("search: %v, %v", res, err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(bad) {
		t.Fatalf("the refused file was changed:\n%s", got)
	}
}

// TestLearningDynamicExposure checks that in dynamic exposure the call of
// a found tool by its own name, once the search added it to the list, is
// recorded.
func TestLearningDynamicExposure(t *testing.T) {
	t.Parallel()
	g := learningGateway(t, t.TempDir())
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
	q := "deploy to production"
	if names := c.search(t, q); !slices.Contains(names, "deploy") {
		t.Fatalf("search %q found %v", q, names)
	}
	waitFor(t, "deploy in the tool list", 10*time.Second, func() bool { return slices.Contains(c.toolNames(t), "deploy") })
	if out, isErr := c.call(t, "deploy", map[string]any{}); isErr {
		t.Fatalf("deploy: %s", out)
	}
	if s := strengthOf(g, q, "echo/deploy"); s < 0.999 {
		t.Fatalf("deploy after %q has strength %v, want 1", q, s)
	}
}

// TestLearningSharedByReplicas checks that with toolsearch.cluster on, a
// call learned by one replica reaches another through Redis, that the
// second replica's own record merges into the shared one rather than
// replacing it, and that a shared record that is not one is passed over.
func TestLearningSharedByReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	servers := map[string]any{"echo": roleServer(t, "echo")}
	learn := map[string]any{"learning": map[string]any{"enabled": true}}
	a := newReplica(t, clusterConfig(t, servers, rs.URL(0), "ts-learn", mergeMaps(learn, map[string]any{"stateDir": t.TempDir()})), "a", true, true)
	waitState(t, a.g, "echo", 30*time.Second, StateReady)
	ca := connectHTTP(t, a.base+"/mcp/search", nil)
	q := "deploy to production"
	if names := ca.search(t, q); !slices.Contains(names, "deploy") {
		t.Fatalf("search %q found %v", q, names)
	}
	if out, isErr := ca.call(t, callToolName, map[string]any{"name": "deploy", "arguments": map[string]any{}}); isErr {
		t.Fatalf("deploy: %s", out)
	}
	if err := a.g.saveLearning(); err != nil {
		t.Fatal(err)
	}
	// b has a state directory of its own: what it knows came through Redis.
	b := newReplica(t, clusterConfig(t, servers, rs.URL(0), "ts-learn", mergeMaps(learn, map[string]any{"stateDir": t.TempDir()})), "b", true, true)
	if b.g.learn == nil || strengthOf(b.g, q, "echo/deploy") < 0.999 {
		t.Fatalf("replica b did not start from the shared record: %+v", b.g.learn)
	}
	waitState(t, b.g, "echo", 30*time.Second, StateReady)
	cb := connectHTTP(t, b.base+"/mcp/search", nil)
	cb.search(t, q)
	if out, isErr := cb.call(t, callToolName, map[string]any{"name": "deploy", "arguments": map[string]any{}}); isErr {
		t.Fatalf("deploy: %s", out)
	}
	if err := b.g.saveLearning(); err != nil {
		t.Fatal(err)
	}
	raw, err := redis.Bytes(rs.Do("GET", "ts-learn:blob:usage:learned"))
	if err != nil || len(raw) < 32 {
		t.Fatalf("the shared record: %v (%d bytes)", err, len(raw))
	}
	shared, err := usage.Decode(raw[32:], usage.Options{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if e := shared.Entries(time.Now()); len(e) != 1 || e[0].Strength < 1.999 {
		t.Fatalf("the shared record holds %+v, want the two calls merged", e)
	}
	// A shared value (with a good checksum) that is not a record is
	// passed over, and replaced at the next save.
	bad := []byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":["a"],"tool":"x/y","weight":1e300,"at":1}]}`)
	sum := sha256.Sum256(bad)
	if _, err := rs.Do("SET", "ts-learn:blob:usage:learned", append(sum[:], bad...)); err != nil {
		t.Fatal(err)
	}
	c := newReplica(t, clusterConfig(t, servers, rs.URL(0), "ts-learn", mergeMaps(learn, map[string]any{"stateDir": t.TempDir()})), "c", false, false)
	if c.g.learn == nil || c.g.learn.store.Load().Len() != 0 {
		t.Fatalf("replica c over a garbage shared record: %+v", c.g.learn)
	}
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// interleaved is a replica's cluster whose next read of the learned
// record lets another replica save first, as if both saved at once.
type interleaved struct {
	*cluster.Cluster
	between func()
	once    sync.Once
}

func (c *interleaved) GetBlob(ctx context.Context, kind, digest string) ([]byte, error) {
	data, err := c.Cluster.GetBlob(ctx, kind, digest)
	if kind == sharedUsage {
		c.once.Do(c.between)
	}
	return data, err
}

// TestLearningSavesAtOnce: replica a reads the shared record to merge its
// call into, and replica b saves its own call before a writes back. a's
// write back is refused, a merges into b's record, and both calls count.
func TestLearningSavesAtOnce(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	learn := map[string]any{"learning": map[string]any{"enabled": true}}
	path := func() string {
		return clusterConfig(t, nil, rs.URL(0), "ts-once", mergeMaps(learn, map[string]any{"stateDir": t.TempDir()}))
	}
	a := newReplica(t, path(), "a", false, false)
	b := newReplica(t, path(), "b", false, false)
	terms := []string{"deploy", "production"}
	a.g.learn.record(a.g, terms, "echo/deploy", time.Now())
	b.g.learn.record(b.g, terms, "echo/deploy", time.Now())
	var bErr error
	a.g.cluster = &interleaved{Cluster: a.c, between: func() { bErr = b.g.saveLearning() }}
	if err := a.g.saveLearning(); err != nil {
		t.Fatal(err)
	}
	if bErr != nil {
		t.Fatal(bErr)
	}
	data, err := b.c.GetBlob(context.Background(), sharedUsage, sharedUsageName)
	if err != nil || data == nil {
		t.Fatalf("the shared record: %v", err)
	}
	shared, err := usage.Decode(data, usage.Options{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if e := shared.Entries(time.Now()); len(e) != 1 || e[0].Strength < 1.999 {
		t.Fatalf("the shared record holds %+v, want both replicas' calls", e)
	}
}
