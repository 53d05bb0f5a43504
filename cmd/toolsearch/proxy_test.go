package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

func TestProxyFlags(t *testing.T) {
	t.Setenv("TS_TEST_KEY", "sk-from-env")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		check    func(t *testing.T, o *proxyOptions)
	}{
		{"no upstream", nil, exitUsage, "--upstream is required", nil},
		{"bad mode", []string{"--upstream", "http://127.0.0.1:1", "--mode", "x"}, exitUsage, "--mode", nil},
		{"public address refused", []string{"--upstream", "http://127.0.0.1:1", "--listen", "0.0.0.0:8787"}, exitUsage, "not a loopback", nil},
		{"public address allowed", []string{"--upstream", "http://127.0.0.1:1", "--listen", "0.0.0.0:8787", "--public"}, 0, "", nil},
		{"everything", []string{"--upstream", "http://127.0.0.1:1", "--mode", "emulate", "--upstream-system-messages", "yes",
			"--auth", "bearer", "--api-key-env", "TS_TEST_KEY", "--listen", "[::1]:9000"}, 0, "",
			func(t *testing.T, o *proxyOptions) {
				if o.cfg.Mode != proxy.ModeEmulate || o.cfg.SystemMessages != proxy.Supported || o.cfg.Auth != proxy.AuthBearer ||
					o.cfg.APIKey != "sk-from-env" || o.listen != "[::1]:9000" {
					t.Fatalf("options %+v", o.cfg)
				}
			}},
		{"empty key variable", []string{"--upstream", "http://127.0.0.1:1", "--api-key-env", "TS_TEST_NOPE"}, exitUsage, "is empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			o, code, ok := parseProxyFlags(tt.args, &stdout, &stderr)
			if tt.wantErr != "" {
				if ok || code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
					t.Fatalf("ok %v code %d stderr %q", ok, code, stderr.String())
				}
				return
			}
			if !ok {
				t.Fatalf("refused: %s", stderr.String())
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

// TestProxyCommandServes starts the command's server on a loopback port
// and proxies a request through it.
func TestProxyCommandServes(t *testing.T) {
	t.Parallel()
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true}})
	var stderr bytes.Buffer
	o, _, ok := parseProxyFlags([]string{"--upstream", up.URL, "--listen", "127.0.0.1:0"}, io.Discard, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	p, err := proxy.New(o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := p.Mode(); m != proxy.ModeEmulate {
		t.Fatalf("auto chose %v for a local upstream", m)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan int, 1)
	go func() { done <- serveProxy(ctx, p, ln, o.cfg.Logger) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "claude-standin") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not stop")
	}
	if !strings.Contains(stderr.String(), "mode chosen") || strings.Contains(stderr.String(), "sk-") {
		t.Fatalf("log: %s", stderr.String())
	}
}
