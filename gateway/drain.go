package gateway

// Draining and secrets.
//
// Draining is the first step of a graceful stop: Drain makes the gateway
// refuse new calls (tools/call, resources/read, prompts/get,
// completion/complete) with a clear error, withdraws the approvals still
// asked of users (those calls were never made, and are refused), and
// waits, within a bound, for the calls in flight to finish and their
// answers to be sent. Then the
// caller cancels Start's context and calls Close, which stops every
// upstream server (and its process group) and the language servers.
//
// Secrets: the values Config.Secrets lists (env values, header values,
// the HTTP auth token...) are replaced in every error message the gateway
// keeps or sends: upstream states (and so /healthz, status and search
// notes), and error results of calls.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// shuttingDown is what a call made during a drain is told.
const shuttingDown = "toolsearch is shutting down and takes no new calls; call again once it is restarted"

// InFlight returns how many calls are running now.
func (g *Gateway) InFlight() int {
	n, _ := g.calls.state()
	return n
}

// Draining reports whether Drain has been called.
func (g *Gateway) Draining() bool {
	_, d := g.calls.state()
	return d
}

// Drain stops taking new calls and waits until the calls in flight have
// finished and their answers have been handed to the client's connection,
// or ctx ends. It returns how many calls were still running then (0 when
// every call finished); those end when the upstream servers stop. Drain
// does not stop anything itself: cancel Start's context and call Close
// after it.
func (g *Gateway) Drain(ctx context.Context) int {
	g.calls.mu.Lock()
	g.calls.draining = true
	g.calls.mu.Unlock()
	g.calls.drainContext()
	g.calls.drainCancel() // approvals still waiting are withdrawn
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n := g.InFlight()
		if n == 0 && g.calls.posts.Load() == 0 {
			return 0
		}
		select {
		case <-ctx.Done():
			if n > 0 {
				g.calls.cut.Store(true)
			}
			return n
		case <-tick.C:
		}
	}
}

// drainedMethods are the client requests Drain refuses and waits for.
var drainedMethods = map[string]bool{"tools/call": true, "resources/read": true, "prompts/get": true, "completion/complete": true}

// drainMiddleware counts the calls of a client session, refuses new ones
// during a drain, and redacts secrets from the errors it returns.
func (g *Gateway) drainMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !drainedMethods[method] {
			return next(ctx, method, req)
		}
		if !g.calls.enter() {
			if method == "tools/call" {
				return toolError("%s", shuttingDown), nil
			}
			return nil, errors.New(shuttingDown)
		}
		defer g.calls.leave()
		res, err := next(ctx, method, req)
		if err != nil {
			err = g.redactErr(err)
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					tc.Text = g.secrets().String(tc.Text)
				}
			}
			if g.calls.cut.Load() {
				r.Content = append(r.Content, &mcp.TextContent{Text: fmt.Sprintf(
					"toolsearch was shutting down and stopped this call: it did not finish within the shutdown timeout (%v)",
					g.shutdownTimeout())})
			}
		}
		return res, err
	}
}

func (g *Gateway) shutdownTimeout() time.Duration {
	if g.cfg == nil {
		return 0
	}
	return g.cfg.Gateway.Serve.ShutdownTimeout
}

// secrets returns the redactor of the configuration's secrets.
func (g *Gateway) secrets() *redact.Redactor {
	g.calls.redOnce.Do(func() {
		if g.cfg != nil && g.calls.red.Load() == nil {
			g.calls.red.Store(redact.New(g.cfg.Secrets()...))
		}
	})
	return g.calls.red.Load()
}

// Redact returns s with the configuration's secrets replaced.
func (g *Gateway) Redact(s string) string { return g.secrets().String(s) }

// redactErr returns err with the configuration's secrets replaced in its
// message (errors.Is and errors.As still see the original).
func (g *Gateway) redactErr(err error) error { return g.secrets().Error(err) }

// countPosts counts an HTTP request while it runs, so that Drain waits
// for answers still being written to clients.
func (g *Gateway) countPosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		g.calls.posts.Add(1)
		defer g.calls.posts.Add(-1)
		next.ServeHTTP(w, r)
	})
}
