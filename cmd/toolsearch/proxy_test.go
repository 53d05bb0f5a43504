package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

func TestProxyFlags(t *testing.T) {
	t.Setenv("TS_TEST_KEY", "sk-from-env")
	t.Setenv(proxyTokenEnv, "")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("  file-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shortFile := filepath.Join(dir, "short")
	if err := os.WriteFile(shortFile, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := []string{"--upstream", "http://127.0.0.1:1"}
	args := func(a ...string) []string { return append(append([]string(nil), up...), a...) }
	tests := []struct {
		name     string
		env      string // $TOOLSEARCH_PROXY_TOKEN
		args     []string
		wantCode int
		wantErr  string
		check    func(t *testing.T, o *proxyOptions)
	}{
		{name: "no upstream", wantCode: exitUsage, wantErr: "--upstream is required"},
		{name: "bad mode", args: args("--mode", "x"), wantCode: exitUsage, wantErr: "--mode"},
		{name: "every interface refused", args: args("--listen", "0.0.0.0:8787"), wantCode: exitUsage,
			wantErr: "--listen 0.0.0.0:8787 is beyond loopback"},
		{name: "every interface, v6, refused", args: args("--listen", "[::]:8787"), wantCode: exitUsage, wantErr: "beyond loopback"},
		{name: "an interface beyond loopback refused", args: args("--listen", "192.0.2.1:8787"), wantCode: exitUsage,
			wantErr: "give clients a token ($TOOLSEARCH_PROXY_TOKEN or --auth-token-file FILE; they send it as \"X-Toolsearch-Token: <token>\"), or pass --insecure-no-auth"},
		{name: "--public is no longer enough", args: args("--listen", "0.0.0.0:8787", "--public"), wantCode: exitUsage, wantErr: "beyond loopback"},
		{name: "beyond loopback with a token file", args: args("--listen", "0.0.0.0:8787", "--auth-token-file", tokenFile),
			check: func(t *testing.T, o *proxyOptions) {
				if o.cfg.Token != "file-token-0123456789abcdef" {
					t.Fatalf("token %q", o.cfg.Token)
				}
			}},
		{name: "beyond loopback with a token variable", env: "env-token-0123456789abcdef", args: args("--listen", "0.0.0.0:8787"),
			check: func(t *testing.T, o *proxyOptions) {
				if o.cfg.Token != "env-token-0123456789abcdef" {
					t.Fatalf("token %q", o.cfg.Token)
				}
			}},
		{name: "beyond loopback, insecure", args: args("--listen", "0.0.0.0:8787", "--insecure-no-auth")},
		{name: "a bare port is loopback", args: args("--listen", ":8787"), check: func(t *testing.T, o *proxyOptions) {
			if o.listen != "127.0.0.1:8787" || o.cfg.Token != "" {
				t.Fatalf("listen %q", o.listen)
			}
		}},
		{name: "localhost", args: args("--listen", "localhost:8787")},
		{name: "short token file", args: args("--auth-token-file", shortFile), wantCode: exitUsage, wantErr: "at least 16"},
		{name: "short token variable", env: "short", args: args(), wantCode: exitUsage, wantErr: "$TOOLSEARCH_PROXY_TOKEN: the auth token has 5 characters"},
		{name: "missing token file", args: args("--auth-token-file", filepath.Join(dir, "nope")), wantCode: exitUsage, wantErr: "--auth-token-file"},
		{name: "no flag takes the token", args: args("--auth-token", "flag-token-0123456789abcdef"), wantCode: exitUsage, wantErr: "not defined"},
		{name: "body bound too small", args: args("--max-body-bytes", "10"), wantCode: exitUsage, wantErr: "--max-body-bytes 10 is below 1024"},
		{name: "body timeout zero", args: args("--body-timeout", "0s"), wantCode: exitUsage, wantErr: "--body-timeout"},
		{name: "empty allowed host", args: args("--allowed-host", " "), wantCode: exitUsage, wantErr: "--allowed-host"},
		{name: "everything", args: args("--mode", "emulate", "--upstream-system-messages", "yes",
			"--auth", "bearer", "--api-key-env", "TS_TEST_KEY", "--listen", "[::1]:9000", "--allowed-host", "llm.internal",
			"--allowed-host", "llm2.internal", "--allowed-origin", "https://app.example", "--max-body-bytes", "4096", "--body-timeout", "5s"),
			check: func(t *testing.T, o *proxyOptions) {
				if o.cfg.Mode != proxy.ModeEmulate || o.cfg.SystemMessages != proxy.Supported || o.cfg.Auth != proxy.AuthBearer ||
					o.cfg.APIKey != "sk-from-env" || o.listen != "[::1]:9000" || strings.Join(o.cfg.AllowedHosts, ",") != "llm.internal,llm2.internal" ||
					strings.Join(o.cfg.AllowedOrigins, ",") != "https://app.example" || o.cfg.MaxBodyBytes != 4096 || o.cfg.BodyTimeout != 5*time.Second {
					t.Fatalf("options %+v", o.cfg)
				}
			}},
		{name: "empty key variable", args: args("--api-key-env", "TS_TEST_NOPE"), wantCode: exitUsage, wantErr: "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(proxyTokenEnv, tt.env)
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

// TestProxyRefusesBeyondLoopback runs the command with an address beyond
// loopback and no token: it exits at once with a message saying what to
// do, listening nowhere (192.0.2.1 is a documentation address no machine
// has).
func TestProxyRefusesBeyondLoopback(t *testing.T) {
	t.Setenv(proxyTokenEnv, "")
	t.Setenv("TS_TEST_KEY", "sk-upstream-0123456789")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"proxy", "--upstream", "http://127.0.0.1:1", "--api-key-env", "TS_TEST_KEY",
		"--listen", "192.0.2.1:8787", "--public"}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--listen 192.0.2.1:8787 is beyond loopback") ||
		!strings.Contains(stderr.String(), "--insecure-no-auth") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "sk-upstream") {
		t.Fatalf("stderr shows the key: %q", stderr.String())
	}
}

// TestProxyCommandServes starts the command's server on a loopback port
// with a token and a key of its own, and proxies a request through it:
// refused without the token, served with it.
func TestProxyCommandServes(t *testing.T) {
	t.Parallel()
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true}})
	const token = "cmd-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	o, _, ok := parseProxyFlags([]string{"--upstream", up.URL, "--listen", "127.0.0.1:0", "--auth-token-file", tokenFile}, io.Discard, &stderr)
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
	for _, tc := range []struct {
		name   string
		token  string
		status int
		want   string
	}{
		{"without the token", "", 401, "X-Toolsearch-Token: <token>"},
		{"with the token", token, 200, "claude-standin"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/v1/models", nil)
		if tc.token != "" {
			req.Header.Set(proxy.TokenHeader, tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Fatalf("%s: status %d: %s", tc.name, resp.StatusCode, body)
		}
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
	if log := stderr.String(); !strings.Contains(log, "mode chosen") || strings.Contains(log, "sk-") || strings.Contains(log, token) {
		t.Fatalf("log: %s", log)
	}
}
