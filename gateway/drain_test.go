package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callResult is the outcome of a call made in the background.
type callResult struct {
	text  string
	isErr bool
}

// callAsync calls a tool through call_tool in the background.
func callAsync(t *testing.T, c *client, name string, args any) <-chan callResult {
	t.Helper()
	out := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": name, "arguments": args}})
		if err != nil {
			out <- callResult{"protocol error: " + err.Error(), true}
			return
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		out <- callResult{b.String(), res.IsError}
	}()
	return out
}

func awaitCall(t *testing.T, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return within 30s")
		return callResult{}
	}
}

// TestDrain: a drain refuses new calls with a clear error, lets the call in
// flight finish and deliver its answer, and reports, when its bound ends
// first, the calls still running; those end with a note that the shutdown
// stopped them.
func TestDrain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		millis    int           // how long the call in flight works
		bound     time.Duration // the drain's bound
		remaining int
	}{
		{name: "call finishes within the bound", millis: 800, bound: 20 * time.Second, remaining: 0},
		{name: "call outlives the bound", millis: 20_000, bound: 300 * time.Millisecond, remaining: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfgPath := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"shutdownTimeout": "7s"})
			cfg, err := loadCfg(t, cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			g.Start(ctx)
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					stopGateway(t, g, cancel)
				}
			})
			waitState(t, g, "echo", 20*time.Second, StateReady)
			srv := serveHTTP(t, g.Handler("search"))
			c := connectHTTP(t, srv.URL+"/mcp", nil)

			slow := callAsync(t, c, "echo__slow", map[string]any{"millis": tc.millis})
			waitFor(t, "the call to be in flight", 10*time.Second, func() bool { return g.InFlight() == 1 })

			drained := make(chan int, 1)
			go func() {
				dctx, dcancel := context.WithTimeout(context.Background(), tc.bound)
				defer dcancel()
				drained <- g.Drain(dctx)
			}()
			waitFor(t, "the drain to begin", 5*time.Second, g.Draining)

			// New calls, reads and sessions are refused, clearly.
			if text, isErr := c.call(t, callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "hi"}}); !isErr || !strings.Contains(text, "shutting down") {
				t.Errorf("a new call during the drain: %q (error %v)", text, isErr)
			}
			if _, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "echo://readme"}); err == nil || !strings.Contains(err.Error(), "shutting down") {
				t.Errorf("a resource read during the drain: %v", err)
			}
			resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "shutting down") {
				t.Errorf("a new session during the drain: %d %s", resp.StatusCode, body)
			}
			hresp, err := httpGet(t, srv.URL+"/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var health struct {
				Status   string `json:"status"`
				InFlight int    `json:"calls_in_flight"`
			}
			_ = json.NewDecoder(hresp.Body).Decode(&health)
			hresp.Body.Close()
			if hresp.StatusCode != http.StatusServiceUnavailable || health.Status != "shutting_down" {
				t.Errorf("/healthz during the drain: %d %+v", hresp.StatusCode, health)
			}

			var left int
			select {
			case left = <-drained:
			case <-time.After(30 * time.Second):
				t.Fatal("Drain did not return")
			}
			if left != tc.remaining {
				t.Errorf("Drain left %d calls running, want %d", left, tc.remaining)
			}
			if tc.remaining == 0 {
				// The answer was written before Drain returned.
				select {
				case r := <-slow:
					if r.isErr || r.text != "done" {
						t.Errorf("the call in flight: %q (error %v)", r.text, r.isErr)
					}
				case <-time.After(2 * time.Second):
					t.Error("the answer of the call in flight did not arrive after Drain returned")
				}
				return
			}
			// Stopping ends the call that outlived the bound, with a note.
			stopped = true
			stopGateway(t, g, cancel)
			r := awaitCall(t, slow)
			if !r.isErr || !strings.Contains(r.text, "shutdown timeout (7s)") {
				t.Errorf("the call cut short: %q (error %v)", r.text, r.isErr)
			}
		})
	}
}
