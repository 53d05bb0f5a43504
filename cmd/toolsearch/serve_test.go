package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const serveTestToken = "serve-test-token-0123456789"

// startServe runs serve in-process and returns its log, a channel with its
// exit code, and a function that stops it (as a signal would).
func startServe(t *testing.T, args ...string) (*syncBuffer, <-chan int, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		exited <- run(ctx, append([]string{"serve"}, args...), io.Discard, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	})
	return logs, exited, cancel
}

// waitRefused waits for serve to end with a usage error whose text has
// refused.
func waitRefused(t *testing.T, logs *syncBuffer, exited <-chan int, refused string) {
	t.Helper()
	select {
	case code := <-exited:
		if code != exitUsage || !strings.Contains(logs.String(), refused) {
			t.Errorf("exit %d, want %d with %q:\n%s", code, exitUsage, refused, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve started, want it refused with %q:\n%s", refused, logs.String())
	}
}

// TestServeHTTPAccess: serve binds loopback for a bare port, refuses to
// listen beyond loopback without a token unless told --insecure-no-auth,
// and with a token answers 401 to requests without it.
func TestServeHTTPAccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ts.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600)
	unset := filepath.Join(dir, "unset.json")
	os.WriteFile(unset, []byte(`{"mcpServers": {}, "toolsearch": {"http": {"authToken": "${TOOLSEARCH_TEST_SURELY_UNSET_VAR}"}}}`), 0o600)
	noCA := filepath.Join(dir, "noca.json")
	os.WriteFile(noCA, []byte(`{"mcpServers": {}, "toolsearch": {"cluster": {"redis": "rediss://127.0.0.1:1/0", "ca": "`+filepath.Join(dir, "absent-ca.pem")+`"}}}`), 0o600)
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(serveTestToken+"\n"), 0o600)
	shortFile := filepath.Join(dir, "short")
	os.WriteFile(shortFile, []byte("abc\n"), 0o600)
	state := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		refused  string // substring of the error when serve must not start
		loopback bool   // it must listen on 127.0.0.1
		log      string // substring of the log when it starts
		status   int    // of GET /metrics without a token
	}{
		{name: "bare port is loopback", args: []string{"--http", ":0"}, loopback: true, status: 200},
		{name: "beyond loopback without token", args: []string{"--http", "0.0.0.0:0"}, refused: "beyond loopback"},
		{name: "beyond loopback, insecure", args: []string{"--http", "0.0.0.0:0", "--insecure-no-auth"}, log: "without authentication", status: 200},
		{name: "beyond loopback with token file", args: []string{"--http", "0.0.0.0:0", "--auth-token-file", tokenFile}, log: "auth=true", status: 401},
		{name: "loopback with token file", args: []string{"--http", "127.0.0.1:0", "--auth-token-file", tokenFile}, loopback: true, status: 401},
		{name: "short token", args: []string{"--http", ":0", "--auth-token-file", shortFile}, refused: "at least 16"},
		{name: "missing token file", args: []string{"--http", ":0", "--auth-token-file", filepath.Join(dir, "nope")}, refused: "--auth-token-file"},
		{name: "a Redis CA file that is absent", args: []string{"--http", ":0", "-c", noCA}, refused: "toolsearch.cluster.ca: open " + filepath.Join(dir, "absent-ca.pem")},
		{name: "unset token variable", args: []string{"--http", ":0", "-c", unset}, refused: "${TOOLSEARCH_TEST_SURELY_UNSET_VAR} is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--state-dir", state}, tc.args...)
			if !strings.Contains(strings.Join(args, " "), " -c ") {
				args = append(args, "-c", cfg)
			}
			logs, exited, _ := startServe(t, args...)
			if tc.refused != "" {
				waitRefused(t, logs, exited, tc.refused)
				return
			}
			addr := waitAddr(t, logs, exited)
			host, port, _ := net.SplitHostPort(addr)
			if tc.loopback && host != "127.0.0.1" {
				t.Errorf("listens on %s, want loopback", addr)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, logs.String())
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://127.0.0.1:" + port + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET /metrics without a token: %d, want %d", resp.StatusCode, tc.status)
			}
			if strings.Contains(logs.String(), serveTestToken) {
				t.Error("the log shows the token")
			}
		})
	}
}

// TestServeRefusedAddressStartsNothing: an address serve cannot take (in
// use, or beyond loopback without a token) ends serve with a usage error
// naming it, and no server of the config is started.
func TestServeRefusedAddressStartsNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() }) // after the parallel subtests
	tests := []struct {
		name, addr, refused string
	}{
		{"address in use", taken.Addr().String(), "listen on " + taken.Addr().String()},
		{"beyond loopback without a token", "0.0.0.0:0", "beyond loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			cfg := filepath.Join(dir, "ts.json")
			os.WriteFile(cfg, []byte(`{"mcpServers": {"marker": {"command": "sh", "args": ["-c", "touch `+started+`; sleep 30"]}}}`), 0o600)
			logs, exited, _ := startServe(t, "-c", cfg, "--state-dir", t.TempDir(), "--http", tc.addr)
			waitRefused(t, logs, exited, tc.refused)
			if _, err := os.Stat(started); err == nil {
				t.Error("a server of the config was started though the address was refused")
			}
		})
	}
}

// TestServeAuthTokenFromEnv reads the token from $TOOLSEARCH_AUTH_TOKEN (not
// parallel: it sets the variable).
// The servers serve starts do not inherit the variable.
func TestServeAuthTokenFromEnv(t *testing.T) {
	t.Setenv(authTokenEnv, serveTestToken)
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	cfg := filepath.Join(dir, "ts.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {"peek": {"command": "sh", "args": ["-c", "printf '<%s>' \"$`+authTokenEnv+`\" > `+seen+`; exit 1"]}}}`), 0o600)
	logs, exited, _ := startServe(t, "-c", cfg, "--state-dir", t.TempDir(), "--http", "0.0.0.0:0")
	_, port, _ := net.SplitHostPort(waitAddr(t, logs, exited))
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(seen)
		if err == nil && len(b) > 0 {
			if string(b) != "<>" {
				t.Errorf("a server started by serve saw $%s = %s", authTokenEnv, b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never ran:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer wrong-token-0123456789", 401}, {"Bearer " + serveTestToken, 200}} {
		r, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/metrics", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, resp.StatusCode, tc.status)
		}
	}
}

// TestServeHelp documents the loopback default and offers no flag that
// takes the token itself.
func TestServeHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "serve", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"127.0.0.1:7777", "-insecure-no-auth", "-auth-token-file", authTokenEnv, "-shutdown-timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "-auth-token ") || strings.Contains(out, "-token ") {
		t.Errorf("help offers a flag that would show the token in ps:\n%s", out)
	}
}

// TestServeHintsFlag checks that --hints reaches the gateway: a file that
// cannot be read stops serve before anything starts, naming the line.
func TestServeHintsFlag(t *testing.T) {
	t.Parallel()
	cfg := writeFile(t, "toolsearch.json", `{"mcpServers": {}, "toolsearch": {"stateDir": "`+t.TempDir()+`"}}`)
	broken := writeFile(t, "hints.jsonl", `{"id":"a/b","hints":"not a list"}`+"\n")
	good := writeFile(t, "good.jsonl", `{"id":"a/b","hints":["fine"]}`+"\n")
	code, _, errs := runCLI(t, "serve", "-c", cfg, "--check", "--hints", broken)
	if code != exitUsage || !strings.Contains(errs, `line 1 (a/b): "hints" is not a list`) {
		t.Errorf("serve --hints broken: exit %d: %s", code, errs)
	}
	if code, out, errs := runCLI(t, "serve", "-c", cfg, "--check", "--hints", good); code != exitOK {
		t.Errorf("serve --hints good: exit %d: %s%s", code, out, errs)
	}
}
