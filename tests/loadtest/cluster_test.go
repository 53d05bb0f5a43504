package loadtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/cluster"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestLoadClusterSmall is the CI-sized cluster run: 2 replicas × 8
// sessions × 50 operations, every request to the next replica.
func TestLoadClusterSmall(t *testing.T) {
	runClusterLoad(t, 2, 8, 50)
}

// TestLoadCluster is the full cluster run, 4 replicas × 64 sessions ×
// 1,000 operations, enabled by TOOLSEARCH_LOAD=1.
func TestLoadCluster(t *testing.T) {
	if os.Getenv(loadEnv) != "1" {
		t.Skipf("the full cluster load run (4 replicas × 64 sessions × 1,000 operations) is slow; set %s=1 to run it", loadEnv)
	}
	runClusterLoad(t, 4, 64, 1000)
}

// roundRobin is a load balancer that is not sticky: each request goes to
// the next replica, so every session is served by all of them (each takes
// it over from the state the others saved) and its event stream is on one.
type roundRobin struct {
	hosts []string
	n     atomic.Int64
	base  http.RoundTripper
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	h := rr.hosts[int(rr.n.Add(1)-1)%len(rr.hosts)]
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = h, h
	return rr.base.RoundTrip(req)
}

// runClusterLoad runs, in one process and one run, a single gateway with
// sessions × ops, then replicas gateways on one Redis with replicas ×
// sessions sessions of ops operations each, and logs their latencies side
// by side. Each run fails on any error and on goroutine or descriptor
// growth once its sessions have closed.
func runClusterLoad(t *testing.T, replicas, sessions, ops int) {
	srv := redistest.Start(t)
	single := drive(t, "single gateway", startGateway(t), sessions, ops)

	dir := t.TempDir()
	path := writeLoadConfig(t, dir, map[string]any{"redis": srv.URL(0), "prefix": "load"})
	var hosts, health []string
	for i := range replicas {
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Gateway.Cluster.Replica = fmt.Sprintf("r%d", i)
		cfg.Gateway.Cluster.Key = "load-test-cluster-key-0123456789abcdef" // the replicas share manifests and the index
		ctx, cancel := context.WithCancel(context.Background())
		c, err := cluster.Open(ctx, cfg.Gateway.Cluster, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		go c.Run(ctx)
		t.Cleanup(func() {
			cancel()
			_ = c.Close()
		})
		base := serveGateway(t, path, filepath.Join(dir, fmt.Sprintf("state-%d", i)), c)
		u, _ := url.Parse(base)
		hosts = append(hosts, u.Host)
		health = append(health, base+"/healthz")
	}
	tr := newTransport(t)
	tg := target{endpoint: "http://" + hosts[0] + "/mcp/search", health: health, tr: tr,
		hc: &http.Client{Transport: &roundRobin{hosts: hosts, base: tr}}}
	clustered := drive(t, fmt.Sprintf("%d replicas", replicas), tg, replicas*sessions, ops)
	t.Logf("p50 %v and p99 %v on %d replicas × %d sessions, against p50 %v and p99 %v on a single gateway × %d sessions",
		clustered.p50, clustered.p99, replicas, sessions, single.p50, single.p99, sessions)
}
