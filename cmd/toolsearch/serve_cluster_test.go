package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestServeCluster: serve with toolsearch.cluster joins the Redis it
// names (its password from $TOOLSEARCH_REDIS_PASSWORD, never shown in the
// log or /healthz), and /healthz names the replica. Not parallel: it sets
// the variable.
func TestServeCluster(t *testing.T) {
	const password = "cluster-test-password-0123"
	srv := redistest.Start(t, "--requirepass", password)
	t.Setenv(config.RedisPasswordEnv, password)
	cfg := writeConfigJSON(t, filepath.Join(t.TempDir(), "ts.json"), map[string]any{
		"mcpServers": map[string]any{},
		"toolsearch": map[string]any{"cluster": map[string]any{"redis": "redis://" + srv.Addr() + "/0", "replica": "serve-1"}},
	})
	logs, exited, _ := startServe(t, "-c", cfg, "--state-dir", t.TempDir(), "--http", ":0")
	_, port, _ := net.SplitHostPort(waitAddr(t, logs, exited))
	var health struct {
		Status  string
		Cluster struct{ Replica, Redis, Addr string }
	}
	deadline := time.Now().Add(10 * time.Second)
	var body []byte
	for {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://127.0.0.1:" + port + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &health); err != nil {
			t.Fatalf("/healthz: %v: %s", err, body)
		}
		if health.Cluster.Redis == "up" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if health.Status != "ok" || health.Cluster.Redis != "up" || health.Cluster.Replica != "serve-1" {
		t.Errorf("/healthz = %s, want ok with the cluster up and the replica named", body)
	}
	if !strings.Contains(logs.String(), "sharing state with the other replicas") {
		t.Errorf("the log does not say it joined:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), password) || strings.Contains(string(body), password) {
		t.Error("the Redis password shows in the log or /healthz")
	}
}
