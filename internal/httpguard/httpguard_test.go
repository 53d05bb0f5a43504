package httpguard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/internal/trickle"
)

const token = "0123456789abcdef-test-token"

// echo answers 200 with the body it read and whether the request was
// authorized.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	fmt.Fprintf(w, "authorized=%v body=%d", Authorized(r), len(b))
})

// serve starts a real loopback server with a guard in front of echo.
func serve(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(echo, o))
	t.Cleanup(srv.Close)
	return srv
}

type req struct {
	method, path string
	host         string
	header       map[string]string
	body         string
}

func do(t *testing.T, srv *httptest.Server, rq req) (*http.Response, string) {
	t.Helper()
	method := rq.method
	if method == "" {
		method = http.MethodPost
	}
	path := rq.path
	if path == "" {
		path = "/mcp"
	}
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	r, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.host != "" {
		r.Host = rq.host
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestGuard(t *testing.T) {
	t.Parallel()
	open := Options{MaxBodyBytes: 1 << 20}
	authed := Options{Token: token, OpenPaths: []string{"/healthz"}, MaxBodyBytes: 1 << 20}
	// The token in a header of its own: the client's Authorization is
	// meant for somewhere else.
	ownHeader := Options{Token: token, TokenHeaders: []string{"X-Toolsearch-Token"}}
	anyHeader := Options{Token: token, TokenHeaders: []string{"X-Toolsearch-Token", "Authorization", "X-Api-Key"}}
	named := Options{Names: Names{Server: "proxy", AllowedHosts: "--allowed-host", AllowedOrigins: "--allowed-origin", MaxBodyBytes: "--max-body-bytes"},
		MaxBodyBytes: 1024}
	allow := Options{AllowedOrigins: []string{"https://app.example.com", "tools.example.org"}, AllowedHosts: []string{"mcp.example.com"}}
	tests := []struct {
		name   string
		o      Options
		rq     req
		status int
		body   string // substring of the answer
	}{
		{name: "plain request", o: open, rq: req{body: `{}`}, status: 200, body: "authorized=true body=2"},
		{name: "localhost host", o: open, rq: req{host: "localhost:9"}, status: 200},
		{name: "ipv6 loopback host", o: open, rq: req{host: "[::1]:9"}, status: 200},
		{name: "rebinding host", o: open, rq: req{host: "evil.example.com"}, status: 403, body: "not a loopback name"},
		{name: "lookalike host", o: open, rq: req{host: "localhost.evil.com:80"}, status: 403},
		{name: "allowed host", o: allow, rq: req{host: "mcp.example.com"}, status: 200},
		{name: "allowed host with port", o: allow, rq: req{host: "mcp.example.com:443"}, status: 200},
		{name: "loopback origin", o: open, rq: req{header: map[string]string{"Origin": "http://localhost:3000"}}, status: 200},
		{name: "loopback ip origin", o: open, rq: req{header: map[string]string{"Origin": "http://127.0.0.1:8080"}}, status: 200},
		{name: "foreign origin", o: open, rq: req{header: map[string]string{"Origin": "https://evil.example.com"}}, status: 403, body: "allowedOrigins"},
		{name: "null origin", o: open, rq: req{header: map[string]string{"Origin": "null"}}, status: 403},
		{name: "rebinding host and origin (conformance)", o: open,
			rq: req{host: "evil.example.com", header: map[string]string{"Origin": "http://evil.example.com"}}, status: 403},
		{name: "allowed origin", o: allow, rq: req{header: map[string]string{"Origin": "https://app.example.com"}}, status: 200},
		{name: "allowed origin by host", o: allow, rq: req{header: map[string]string{"Origin": "https://tools.example.org"}}, status: 200},
		{name: "allowed origin wrong scheme", o: allow, rq: req{header: map[string]string{"Origin": "http://app.example.com"}}, status: 403},
		{name: "any origin", o: Options{AllowedOrigins: []string{"*"}}, rq: req{header: map[string]string{"Origin": "https://x.test"}}, status: 200},
		{name: "no token sent", o: authed, status: 401, body: "Authorization: Bearer"},
		{name: "wrong token", o: authed, rq: req{header: map[string]string{"Authorization": "Bearer nope"}}, status: 401},
		{name: "token prefix", o: authed, rq: req{header: map[string]string{"Authorization": "Bearer " + token[:10]}}, status: 401},
		{name: "basic scheme", o: authed, rq: req{header: map[string]string{"Authorization": "Basic " + token}}, status: 401},
		{name: "right token", o: authed, rq: req{header: map[string]string{"Authorization": "Bearer " + token}}, status: 200, body: "authorized=true"},
		{name: "scheme is case-insensitive", o: authed, rq: req{header: map[string]string{"Authorization": "bearer " + token}}, status: 200},
		{name: "metrics need the token", o: authed, rq: req{method: "GET", path: "/metrics"}, status: 401},
		{name: "health is open", o: authed, rq: req{method: "GET", path: "/healthz"}, status: 200, body: "authorized=false"},
		{name: "health with token", o: authed, rq: req{method: "GET", path: "/healthz", header: map[string]string{"Authorization": "Bearer " + token}},
			status: 200, body: "authorized=true"},
		{name: "origin checked before token", o: authed,
			rq: req{header: map[string]string{"Origin": "https://evil.example.com", "Authorization": "Bearer " + token}}, status: 403},
		{name: "own header", o: ownHeader, rq: req{header: map[string]string{"X-Toolsearch-Token": token}}, status: 200, body: "authorized=true"},
		{name: "own header, bearer refused", o: ownHeader, rq: req{header: map[string]string{"Authorization": "Bearer " + token}},
			status: 401, body: `send the header "X-Toolsearch-Token: <token>"`},
		{name: "own header, wrong", o: ownHeader, rq: req{header: map[string]string{"X-Toolsearch-Token": "nope"}}, status: 401},
		{name: "own header, bearer form refused", o: ownHeader, rq: req{header: map[string]string{"X-Toolsearch-Token": "Bearer " + token}}, status: 401},
		{name: "any header, x-api-key", o: anyHeader, rq: req{header: map[string]string{"X-Api-Key": token}}, status: 200},
		{name: "any header, bearer", o: anyHeader, rq: req{header: map[string]string{"Authorization": "Bearer " + token}}, status: 200},
		{name: "any header, own", o: anyHeader, rq: req{header: map[string]string{"X-Toolsearch-Token": token}}, status: 200},
		{name: "any header, wrong key", o: anyHeader, rq: req{header: map[string]string{"X-Api-Key": "sk-other-key-0123456789"}},
			status: 401, body: `one of the headers "X-Toolsearch-Token: <token>", "Authorization: Bearer <token>", "X-Api-Key: <token>"`},
		{name: "named host setting", o: named, rq: req{host: "evil.example"}, status: 403, body: "this proxy listens on loopback only (behind a reverse proxy, add the name to --allowed-host)"},
		{name: "named origin setting", o: named, rq: req{header: map[string]string{"Origin": "https://evil.example"}}, status: 403, body: "--allowed-origin"},
		{name: "named body setting", o: named, rq: req{body: strings.Repeat("x", 1025)}, status: 413, body: "(--max-body-bytes)"},
		{name: "body too large", o: Options{MaxBodyBytes: 1024}, rq: req{body: strings.Repeat("x", 1025)}, status: 413, body: "larger than 1024 bytes"},
		{name: "body at the bound", o: Options{MaxBodyBytes: 1024}, rq: req{body: strings.Repeat("x", 1024)}, status: 200, body: "body=1024"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, tc.o)
			resp, body := do(t, srv, tc.rq)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("status %d body %q, want %d and %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(body, token) {
				t.Error("the answer shows the token")
			}
		})
	}
}

// TestWriteError checks that a refusal is written by Options.WriteError,
// with the guard's headers already set.
func TestWriteError(t *testing.T) {
	t.Parallel()
	o := Options{Token: token, MaxBodyBytes: 1024, WriteError: func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d,"message":%q}`, status, msg)
	}}
	tests := []struct {
		name   string
		rq     req
		status int
		header string // a header the guard set
	}{
		{"auth", req{}, 401, "WWW-Authenticate"},
		{"too large", req{header: map[string]string{"Authorization": "Bearer " + token}, body: strings.Repeat("x", 2048)}, 413, "Connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, serve(t, o), tc.rq)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" ||
				!strings.HasPrefix(body, fmt.Sprintf(`{"status":%d,"message":"`, tc.status)) {
				t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp.Header.Get(tc.header) == "" && !(tc.header == "Connection" && resp.Close) {
				t.Errorf("header %s missing", tc.header)
			}
		})
	}
}

// TestChunkedBodyTooLarge sends a body without Content-Length.
func TestChunkedBodyTooLarge(t *testing.T) {
	t.Parallel()
	srv := serve(t, Options{MaxBodyBytes: 1024})
	r, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", io.MultiReader(strings.NewReader(strings.Repeat("y", 4000))))
	r.ContentLength = -1
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestSlowBody sends headers, then the body too slowly (408), or declares
// a body over the bound and trickles it (413). Either way the connection
// is closed at once, though the client keeps sending: the server does not
// wait for the rest of the body.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		length int
		status int
	}{
		{"slow", 1000, http.StatusRequestTimeout},
		{"declared too large", 2000, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, Options{MaxBodyBytes: 1024, BodyTimeout: 200 * time.Millisecond})
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\nabc", srv.Listener.Addr(), tc.length)
			defer trickle.Start(c, []byte("x"), 50*time.Millisecond)()
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if _, err := br.ReadByte(); err == nil || isTimeout(err) {
				t.Fatalf("the connection is still open after the %d: %v", resp.StatusCode, err)
			}
		})
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		o       Options
		reqs    []string // session ids, "" for none
		refused []bool
		scope   string
	}{
		{name: "per session", o: Options{PerSession: Rate{PerSecond: 0.5, Burst: 2}},
			reqs: []string{"a", "a", "a", "b", "b", ""}, refused: []bool{false, false, true, false, false, false}, scope: "per-session"},
		{name: "global", o: Options{Global: Rate{PerSecond: 0.5, Burst: 3}},
			reqs: []string{"a", "b", "c", "d"}, refused: []bool{false, false, false, true}, scope: "global"},
		{name: "off", o: Options{}, reqs: []string{"a", "a", "a", "a"}, refused: []bool{false, false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, tc.o)
			for i, sid := range tc.reqs {
				h := map[string]string{}
				if sid != "" {
					h["Mcp-Session-Id"] = sid
				}
				resp, body := do(t, srv, req{header: h})
				if got := resp.StatusCode == http.StatusTooManyRequests; got != tc.refused[i] {
					t.Fatalf("request %d (session %q): status %d, refused want %v", i, sid, resp.StatusCode, tc.refused[i])
				}
				if tc.refused[i] {
					ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					if err != nil || ra < 1 || ra > 2 || !strings.Contains(body, tc.scope) {
						t.Errorf("Retry-After %q, body %q", resp.Header.Get("Retry-After"), body)
					}
				}
			}
		})
	}
}

func TestBucket(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	b := newBucket(Rate{PerSecond: 10, Burst: 2}, t0)
	if first, second := b.take(t0), b.take(t0); first != 0 || second != 0 {
		t.Fatal("burst refused")
	}
	if w := b.take(t0); w != 100*time.Millisecond {
		t.Fatalf("wait %v, want 100ms", w)
	}
	if b.take(t0.Add(100*time.Millisecond)) != 0 {
		t.Fatal("refilled token refused")
	}
	if !b.full(t0.Add(time.Second)) || b.full(t0.Add(100*time.Millisecond)) {
		t.Error("full")
	}
	bs := &buckets{rate: Rate{PerSecond: 1, Burst: 1}, m: map[string]*bucket{}}
	bs.take("a", t0)
	bs.take("b", t0.Add(30*time.Second))
	bs.take("c", t0.Add(2*time.Minute)) // sweeps: a and b are full again
	if len(bs.m) != 1 {
		t.Errorf("%d buckets kept, want 1", len(bs.m))
	}
}

// TestHostCheckOnlyOnLoopback: behind a non-loopback listener the Host
// check does not apply (the token protects it); on loopback it does.
func TestHostCheckOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	g := New(echo, Options{})
	for _, tc := range []struct {
		local  net.Addr
		status int
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 80}, 200},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 80}, 403},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 80}, 403},
	} {
		r := httptest.NewRequest("GET", "http://mcp.example.com/mcp", nil)
		r = r.WithContext(contextWithLocal(r, tc.local))
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("local %v: status %d, want %d", tc.local, w.Code, tc.status)
		}
	}
}

func TestListenAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		":7777": "127.0.0.1:7777", "7777": "127.0.0.1:7777", "127.0.0.1:1": "127.0.0.1:1",
		"0.0.0.0:80": "0.0.0.0:80", "[::]:80": "[::]:80", "localhost:9": "localhost:9", "[::1]:5": "[::1]:5",
	} {
		if got := ListenAddr(in); got != want {
			t.Errorf("ListenAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "app.localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true, "[::1]": true,
		"::ffff:127.0.0.1": true, "[::ffff:127.0.0.1]": true, "0.0.0.0": false, "::": false, "[localhost]": false, "0x7f000001": false, "10.0.0.1": false, "evil.com": false, "localhost.evil.com": false, "": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, got)
		}
	}
}

// TestIsLoopbackListen: before anything listens, only a loopback IP counts;
// a name, even one that resolves to loopback here, is left to the bound
// address (a hosts file or a resolver may send it elsewhere).
func TestIsLoopbackListen(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:7777": true, "127.255.255.254:1": true, "[::1]:7777": true, "[::ffff:127.0.0.1]:80": true, "[::1%lo]:80": true,
		"0.0.0.0:7777": false, "[::]:7777": false, ":7777": false, "10.0.0.1:80": false, "192.168.1.1:80": false, "[fe80::1]:80": false,
		"[::ffff:10.0.0.1]:80": false, "128.0.0.1:80": false,
		// Names are not trusted before they are resolved by listening.
		"localhost:7777": false, "app.localhost:80": false, "localhost.evil.com:80": false, "127.0.0.1.nip.io:80": false,
		// Not addresses.
		"127.0.0.1": false, "": false, "0x7f.0.0.1:80": false, "2130706433:80": false, "127.1:80": false,
	} {
		if got := IsLoopbackListen(addr); got != want {
			t.Errorf("IsLoopbackListen(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestIsLoopbackAddr judges the addresses of real listeners: a name that
// resolves to loopback here is loopback once bound, and a listener on every
// interface is not.
func TestIsLoopbackAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true}, // resolved here to 127.0.0.1 or ::1
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{"[::]:0", false},
	}
	for _, tc := range tests {
		t.Run(tc.listen, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", tc.listen)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tc.listen, err)
			}
			defer ln.Close()
			if got := IsLoopbackAddr(ln.Addr()); got != tc.want {
				t.Errorf("IsLoopbackAddr(%v) = %v, want %v", ln.Addr(), got, tc.want)
			}
			// The same address as text, as a net.Addr of another type
			// gives it.
			if got := IsLoopbackAddr(textAddr(ln.Addr().String())); got != tc.want {
				t.Errorf("IsLoopbackAddr(%q as text) = %v, want %v", ln.Addr(), got, tc.want)
			}
		})
	}
	for _, a := range []net.Addr{nil, textAddr("localhost:80"), textAddr("garbage"), &net.TCPAddr{}} {
		if IsLoopbackAddr(a) {
			t.Errorf("IsLoopbackAddr(%v) = true", a)
		}
	}
}

// textAddr is a net.Addr that is only its text.
type textAddr string

func (a textAddr) Network() string { return "tcp" }
func (a textAddr) String() string  { return string(a) }

func contextWithLocal(r *http.Request, a net.Addr) context.Context {
	return context.WithValue(r.Context(), http.LocalAddrContextKey, a)
}
