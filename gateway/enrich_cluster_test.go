package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
	"github.com/toolsearch/toolsearch/gateway/cluster"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// enrichReplica starts a replica of the configuration at path named name,
// with a state directory of its own and its own connection to the
// cluster.
func enrichReplica(t *testing.T, path, name, key string) *enrichRig {
	t.Helper()
	cfg := loadEnrichConfig(t, path, key)
	cfg.Gateway.Cluster.Replica = name
	cfg.Gateway.Cluster.Key = testClusterKey
	cfg.Gateway.StateDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.Open(ctx, cfg.Gateway.Cluster, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go c.Run(ctx)
	t.Cleanup(func() { cancel(); _ = c.Close() }) // after the gateway's own cleanup
	return startEnrichRig(t, cfg, Options{Cluster: c}, nil, false)
}

// TestEnrichClusterOnce: two replicas over one Redis, started together,
// send each tool definition to the provider exactly once between them
// (each takes a lease per tool before it sends it), and both end up with
// every tool's hints: the one that did not send a tool takes its hints
// from the cluster. The day's spend is the service's, counted once.
func TestEnrichClusterOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	stand := enrichtest.New(t, enrichtest.Anthropic, goodAnswers)
	stand.SetDelay(20 * time.Millisecond) // so that the replicas' rounds overlap
	servers := map[string]any{"echo": roleServer(t, "echo")}
	path := enrichConfig(t, servers, stand, t.TempDir(), map[string]any{"batch": 1},
		map[string]any{"cluster": map[string]any{"redis": srv.URL(0), "prefix": "once"}})
	a := enrichReplica(t, path, "a", stand.APIKey)
	b := enrichReplica(t, path, "b", stand.APIKey)
	var total int
	for _, r := range []*enrichRig{a, b} {
		st := r.waitEnrich(t, "every tool with hints on both replicas", func(s EnrichStatus) bool {
			return s.State == EnrichIdle && s.Tools > 0 && s.WithHints == s.Tools
		})
		total = st.Tools
	}
	counts := stand.ToolCounts()
	if len(counts) != total {
		t.Errorf("%d tools sent, want %d: %v", len(counts), total, counts)
	}
	for n, k := range counts {
		if k != 1 {
			t.Errorf("%s was sent %d times between the replicas, want once", n, k)
		}
	}
	sa, sb := a.g.EnrichStatus(), b.g.EnrichStatus()
	if sa.SinceStart.Written+sb.SinceStart.Written != int64(total) {
		t.Errorf("a wrote %d and b %d, want %d together", sa.SinceStart.Written, sb.SinceStart.Written, total)
	}
	// The spend is the service's: each replica sees both's (read again
	// from Redis once what it read last is spendRefresh old).
	for _, r := range []*enrichRig{a, b} {
		r.waitEnrich(t, "the service's spend", func(s EnrichStatus) bool { return s.Spent.Tools == int64(total) })
	}
	// Each replica's hints file holds every tool's hints, for its next
	// start.
	for _, r := range []*enrichRig{a, b} {
		set, err := hints.LoadFile(r.g.stateHintsPath())
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range r.g.Snapshot().Tools() {
			if r.g.Visible(tl) && !set.Current(tl) {
				t.Errorf("%s: no current hints for %s in its file", r.g.cluster.Replica(), tl.ID())
			}
		}
	}
	keys, err := redis.Strings(srv.Do("KEYS", "once:lease:enrich:*"))
	if err != nil || len(keys) != total {
		t.Errorf("%d leases in Redis (%v), want one per tool", len(keys), err)
	}
	for _, k := range keys {
		if v, _ := redis.String(srv.Do("GET", k)); v != "done" {
			t.Errorf("lease %s is %q, want done", k, v)
		}
	}
}

// TestEnrichClusterBudget: replicas share the daily budget: between them
// they send no more tools than it allows.
func TestEnrichClusterBudget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	stand := enrichtest.New(t, enrichtest.OpenAI, goodAnswers)
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(),
		map[string]any{"batch": 1, "dailyBudget": map[string]any{"tools": 3}},
		map[string]any{"cluster": map[string]any{"redis": srv.URL(0), "prefix": "budget"}})
	a := enrichReplica(t, path, "a", stand.APIKey)
	b := enrichReplica(t, path, "b", stand.APIKey)
	for _, r := range []*enrichRig{a, b} {
		r.waitEnrich(t, "the shared budget spent", func(s EnrichStatus) bool { return s.State == EnrichBudgetExhausted })
	}
	if n := len(stand.Requests()); n != 3 {
		t.Errorf("%d tools sent by two replicas under a budget of 3", n)
	}
}
