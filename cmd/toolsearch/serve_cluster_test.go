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
// names (its password from $TOOLSEARCH_REDIS_PASSWORD and its cluster key
// from $TOOLSEARCH_CLUSTER_KEY, neither ever shown in the log or /healthz),
// and /healthz names the replica. Not parallel: it sets the variables.
func TestServeCluster(t *testing.T) {
	const password = "cluster-test-password-0123"
	const key = "cluster-test-key-0123456789abcdef0123"
	srv := redistest.Start(t, "--requirepass", password)
	t.Setenv(config.RedisPasswordEnv, password)
	t.Setenv(config.ClusterKeyEnv, key)
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
	if strings.Contains(logs.String(), key) || strings.Contains(string(body), key) {
		t.Error("the cluster key shows in the log or /healthz")
	}
	if !strings.Contains(logs.String(), "Redis is reached without TLS (redis://)") || strings.Contains(logs.String(), "no cluster key") {
		t.Errorf("the log should warn of redis:// only, the key being set:\n%s", logs.String())
	}
}

// TestServeCheckSaysWhatRedisControls: serve --check says, for a cluster
// without a key, that Redis access would mean control of the tool
// definitions and ranking (and that nothing of that is shared), and warns
// of a Redis reached without TLS or a password; a key whose variable is
// not set stops it, naming the variable.
func TestServeCheckSaysWhatRedisControls(t *testing.T) {
	tests := []struct {
		name     string
		cluster  map[string]any
		wantCode int
		want     []string
	}{
		{name: "no key, no TLS, no password", cluster: map[string]any{"redis": "redis://127.0.0.1:1/0"}, wantCode: exitOK,
			want: []string{"warning: no cluster key", "control the tool definitions and the ranking", "without TLS (redis://) and without a password"}},
		{name: "a key variable not set", cluster: map[string]any{"redis": "rediss://:pw-0123456789@127.0.0.1:1/0", "key": "${TS_TEST_UNSET_CLUSTER_KEY}"},
			wantCode: exitUsage, want: []string{`"toolsearch.cluster.key": ${TS_TEST_UNSET_CLUSTER_KEY} is not set`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfigJSON(t, filepath.Join(t.TempDir(), "ts.json"), map[string]any{
				"mcpServers": map[string]any{}, "toolsearch": map[string]any{"cluster": tc.cluster},
			})
			code, _, errs := runCLI(t, "serve", "-c", cfg, "--check", "--state-dir", t.TempDir())
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if strings.Contains(errs, "pw-0123456789") {
				t.Errorf("stderr shows the password:\n%s", errs)
			}
		})
	}
}
