package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeDashboard: serve --http serves the dashboard at /ui unless the
// file turns it off, and an open event stream of it does not hold up the
// shutdown.
func TestServeDashboard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		status int // of GET /ui/servers
		logged bool
	}{
		{"on by default", `{"mcpServers": {}}`, http.StatusOK, true},
		{"turned off", `{"mcpServers": {}, "toolsearch": {"dashboard": {"enabled": false}}}`, http.StatusNotFound, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := filepath.Join(t.TempDir(), "ts.json")
			if err := os.WriteFile(cfg, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			logs, exited, stop := startServe(t, "--http", ":0", "-c", cfg, "--state-dir", t.TempDir())
			addr := waitAddr(t, logs, exited)
			_, port, _ := net.SplitHostPort(addr)
			base := "http://127.0.0.1:" + port
			client := &http.Client{Timeout: 10 * time.Second}
			resp, err := client.Get(base + "/ui/servers")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("GET /ui/servers: %d, want %d", resp.StatusCode, tc.status)
			}
			if got := strings.Contains(logs.String(), " /ui"); got != tc.logged {
				t.Errorf("the log names /ui among the endpoints: %v, want %v:\n%s", got, tc.logged, logs.String())
			}
			if tc.status != http.StatusOK {
				return
			}
			// An event stream stays open until serve stops, and ends then.
			stream, err := http.Get(base + "/ui/events")
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Body.Close()
			if _, err := bufio.NewReader(stream.Body).ReadString('\n'); err != nil {
				t.Fatalf("reading the event stream: %v", err)
			}
			stop()
			select {
			case code := <-exited:
				if code != exitOK {
					t.Errorf("serve exited %d, want %d:\n%s", code, exitOK, logs.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop within 10 s with a dashboard event stream open")
			}
		})
	}
}
