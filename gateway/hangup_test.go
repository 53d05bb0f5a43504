package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cancelBound is how soon after a client hangs up the upstream server
// must see its call cancelled.
const cancelBound = 5 * time.Second

// slowCancelled counts the calls of echo's slow tool that saw their
// context end.
func slowCancelled(g *Gateway) int {
	return strings.Count(g.ups()["echo"].Stderr().String(), "slow: cancelled")
}

// awaitSlowCancelled waits until echo's slow tool has seen one more
// cancellation than before, and fails the test when it does not within
// cancelBound.
func awaitSlowCancelled(t *testing.T, g *Gateway, before int, what string) {
	t.Helper()
	start := time.Now()
	waitFor(t, "the upstream to see the call cancelled after "+what, cancelBound, func() bool {
		return slowCancelled(g) > before
	})
	t.Logf("%s: the upstream saw the cancellation %v after the hang-up", what, time.Since(start).Round(time.Millisecond))
}

// TestHangUpCancelsUpstream: a client that hangs up in the middle of a
// long tools/call (its HTTP response stream closed, its session ended,
// its stdin at EOF) has the upstream server's call cancelled within
// cancelBound, not left running until the call timeout.
func TestHangUpCancelsUpstream(t *testing.T) {
	t.Parallel()
	const slowCall = `{"name":"slow","arguments":{"millis":60000}}`
	cases := []struct {
		name   string
		hangUp func(t *testing.T, g *Gateway, base string)
	}{
		{"2026-07-28 HTTP stream closed", func(t *testing.T, g *Gateway, base string) {
			// The request's response stream is the only signal a
			// stateless client has: closing it cancels the request.
			body := strings.Replace(modernBody("tools/call", slowCall, era2026), `"id":1`, `"id":"hangup-1"`, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp/full", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modernHeader("tools/call", "slow", era2026) {
				req.Header.Set(k, v)
			}
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errc <- err
			}()
			awaitSlowStarted(t, g)
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the slow call finished before the client hung up")
			}
		}},
		{"2025-11-25 HTTP session closed", func(t *testing.T, g *Gateway, base string) {
			// A session's stream may be resumed (Last-Event-ID): its end
			// (DELETE) is the hang-up.
			c := connectHTTP(t, base+"/mcp/full", nil)
			// Cancelled only once the upstream was checked: a cancelled
			// call sends notifications/cancelled, which is not the
			// hang-up tried here.
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() {
				_, _ = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"millis": 60000}})
			}()
			awaitSlowStarted(t, g)
			req, err := http.NewRequest(http.MethodDelete, base+"/mcp/full", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Mcp-Session-Id", c.cs.ID())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Fatalf("DELETE of the session answered %d", resp.StatusCode)
			}
		}},
		{"stdio EOF", func(t *testing.T, g *Gateway, _ string) {
			cr, cw := io.Pipe()
			sr, sw := io.Pipe()
			go func() { _, _ = io.Copy(io.Discard, sr) }()
			served := make(chan error, 1)
			go func() { served <- g.Serve(context.Background(), "full", stdioTransport(cr, sw)) }()
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hangup","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + slowCall + `}`,
			} {
				if _, err := fmt.Fprintln(cw, line); err != nil {
					t.Fatal(err)
				}
			}
			awaitSlowStarted(t, g)
			_ = cw.Close() // EOF on the gateway's stdin
			select {
			case <-served:
			case <-time.After(cancelBound):
				t.Error("Serve did not return at EOF")
			}
			_ = sr.Close()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
				map[string]any{"http": map[string]any{"exposures": []string{"full", "search"}}}))
			waitState(t, g, "echo", 20*time.Second, StateReady)
			srv := serveHTTP(t, g.Handler("search"))
			before := slowCancelled(g)
			tc.hangUp(t, g, srv.URL)
			awaitSlowCancelled(t, g, before, tc.name)
		})
	}
}

// awaitSlowStarted waits until a call of echo's slow tool is in flight,
// and a little longer for it to reach the upstream.
func awaitSlowStarted(t *testing.T, g *Gateway) {
	t.Helper()
	waitFor(t, "the slow call to be in flight", 10*time.Second, func() bool { return g.InFlight() > 0 })
	time.Sleep(300 * time.Millisecond) // the relay to the upstream
}
