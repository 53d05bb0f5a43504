package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "gw-test-token-0123456789abcdef"

// bearer adds the token to every request.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+testToken)
	return b.next.RoundTrip(r)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestHandlerSecurity drives the real handler of a gateway configured with
// a token, allowed origins and small bounds, over real HTTP.
func TestHandlerSecurity(t *testing.T) {
	t.Parallel()
	cfgPath := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"http": map[string]any{
		"authToken": testToken, "allowedOrigins": []string{"https://app.example.com"},
		"maxBodyBytes": 4096, "sessionRateLimit": map[string]any{"perSecond": 1000, "burst": 1000},
	}})
	g := startGateway(t, cfgPath)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("search"))
	host := strings.TrimPrefix(srv.URL, "http://")
	mcpHeaders := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	withToken := func(h map[string]string) map[string]string {
		out := map[string]string{"Authorization": "Bearer " + testToken}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name         string
		method, path string
		host         string
		header       map[string]string
		body         string
		status       int
		want, absent []string // substrings of the answer, and strings it must not hold
	}{
		{name: "mcp without token", method: "POST", path: "/mcp", header: mcpHeaders, body: initBody, status: 401, want: []string{"Bearer"}},
		{name: "mcp with token", method: "POST", path: "/mcp", header: withToken(mcpHeaders), body: initBody, status: 200, want: []string{"protocolVersion"}},
		{name: "mode path without token", method: "POST", path: "/mcp/full", header: mcpHeaders, body: initBody, status: 401},
		{name: "metrics without token", method: "GET", path: "/metrics", status: 401, absent: []string{"toolsearch_"}},
		{name: "metrics with token", method: "GET", path: "/metrics", header: withToken(nil), status: 200, want: []string{"toolsearch_searches_total"}},
		{name: "health without token says only up", method: "GET", path: "/healthz", status: 200,
			want: []string{`"status":"ok"`}, absent: []string{"echo", "servers", "uptime"}},
		{name: "health with token", method: "GET", path: "/healthz", header: withToken(nil), status: 200, want: []string{`"servers"`, `"echo"`}},
		// What the MCP conformance suite's dns-rebinding-protection scenario sends.
		{name: "rebinding host and origin", method: "POST", path: "/mcp", host: "evil.example.com",
			header: withToken(map[string]string{"Origin": "http://evil.example.com", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}),
			body:   initBody, status: 403},
		{name: "loopback host and origin", method: "POST", path: "/mcp", host: host,
			header: withToken(map[string]string{"Origin": "http://" + host, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}),
			body:   initBody, status: 200},
		{name: "foreign origin", method: "POST", path: "/mcp", header: withToken(map[string]string{"Origin": "https://evil.example.com"}), body: initBody, status: 403},
		{name: "allowed origin", method: "POST", path: "/mcp",
			header: withToken(map[string]string{"Origin": "https://app.example.com", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}),
			body:   initBody, status: 200},
		{name: "body too large", method: "POST", path: "/mcp", header: withToken(mcpHeaders),
			body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, status: 413, want: []string{"larger than 4096 bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r, _ := http.NewRequest(tc.method, srv.URL+tc.path, body)
			if tc.host != "" {
				r.Host = tc.host
			}
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// An initialize over streamable HTTP answers in an event stream
			// that stays open: read up to its first event with data (after
			// the priming event, whose data is empty).
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				b.WriteString(sc.Text() + "\n")
				data, isData := strings.CutPrefix(sc.Text(), "data:")
				if isData && strings.TrimSpace(data) != "" || resp.Header.Get("Content-Type") != "text/event-stream" && b.Len() > 1<<16 {
					break
				}
			}
			text := strings.ReplaceAll(b.String(), " ", "")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(text, strings.ReplaceAll(w, " ", "")) {
					t.Errorf("answer lacks %q: %s", w, b.String())
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("answer holds %q: %s", a, b.String())
				}
			}
		})
	}

	// A client that sends the token works end to end.
	cl, _ := newClient(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSession(t, cs)
	c := &client{cs: cs}
	if text, isErr := c.call(t, callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "through the guard"}}); isErr || text != "through the guard" {
		t.Errorf("call with the token: %q (error %v)", text, isErr)
	}
	// Without it, connecting fails.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, legacySession); err == nil {
		t.Error("a client without the token connected")
	}
}

// TestHTTPServerBounds: the server HTTPServer returns refuses oversized
// headers (431) and keeps an event stream open past every timeout it sets.
func TestHTTPServerBounds(t *testing.T) {
	t.Parallel()
	cfgPath := writeConfig(t, map[string]any{}, map[string]any{"http": map[string]any{"maxHeaderBytes": 2048, "readHeaderTimeout": "300ms", "idleTimeout": "300ms"}})
	g := startGateway(t, cfgPath)
	hs := g.HTTPServer("search")
	if hs.WriteTimeout != 0 || hs.ReadTimeout != 0 {
		t.Errorf("write timeout %v, read timeout %v: event streams would be cut", hs.WriteTimeout, hs.ReadTimeout)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		hs.Close()
	})
	base := "http://" + ln.Addr().String()

	r, _ := http.NewRequest("GET", base+"/healthz", nil)
	r.Header.Set("X-Big", strings.Repeat("h", 8192))
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers: status %d, want 431", resp.StatusCode)
	}

	// A session whose standalone event stream stays open for longer than
	// the timeouts still gets answers.
	c := connectHTTP(t, base+"/mcp", nil)
	time.Sleep(time.Second)
	if names := c.toolNames(t); len(names) == 0 {
		t.Error("no tools after the timeouts passed")
	}

	// A connection that sends no headers is closed at the header timeout.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeoutErr(err) {
		t.Errorf("a connection that never finished its headers was not closed: %v", err)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
