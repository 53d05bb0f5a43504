package gateway

// A tool call being served (toolCall), and how it ended, as the client,
// the metrics, a built-in tool's span and the feed are told it. Every way
// a call can end is a callOutcome, and recordCall tells it, once.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/tracing"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// toolCall is one tools/call being served.
type toolCall struct {
	s     *session             // the client's session; nil when there is none
	req   *mcp.CallToolRequest // nil when there is no client request
	asked string               // the name the client sent
	args  json.RawMessage      // the arguments the client sent
	start time.Time
	to    target // what asked resolves to; zero with err set
	err   error  // why asked resolves to no tool
}

// callOutcome is how a tool call ended: the result the client gets, or
// the protocol error its protocol layer is to see, and the outcome the
// metrics count it under ("" when they do not count it).
type callOutcome struct {
	res   *mcp.CallToolResult
	err   error
	count string
	// span is a built-in tool's span, ended with the outcome.
	span *tracing.Span
}

// countAs is the outcome res, which the metrics count under count.
func countAs(count string, res *mcp.CallToolResult) callOutcome {
	return callOutcome{res: res, count: count}
}

// upstreamOutcome is the outcome of a call of to that was made to u on ls: its
// result, or why it failed.
func (g *Gateway) upstreamOutcome(ctx context.Context, to target, u *upstream.Server, ls upstream.Conn, res *mcp.CallToolResult, timedOut bool, err error) callOutcome {
	if je := relayed(err); je != nil {
		return callOutcome{err: je, count: "error"}
	}
	if err != nil {
		return g.callFailed(ctx, to, u, ls, err, timedOut)
	}
	count := "ok"
	switch {
	case res.NeedsInput() || res.InputRequests != nil:
		count = "input_required"
	case res.IsError:
		count = "tool_error"
	}
	return callOutcome{res: res, count: count}
}

// relayed returns a server's JSON-RPC error that goes to the client as it
// came: -32021, the server's refusal of a call for want of a capability the
// client did not declare (the client is told which, in its data, and can
// declare it and call again). Any other error is nil.
func relayed(err error) *jsonrpc.Error {
	var je *jsonrpc.Error
	if errors.As(err, &je) && je.Code == mcp.CodeMissingRequiredClientCapabilities {
		return je
	}
	return nil
}

// callFailed is the tool error of a call that failed, saying why.
func (g *Gateway) callFailed(ctx context.Context, to target, u *upstream.Server, ls upstream.Conn, err error, timedOut bool) callOutcome {
	u.CallLost(err)
	switch {
	case ctx.Err() != nil:
		return countAs("cancelled", toolError("the call to %s was cancelled", to.exposed))
	case (ls.Life != nil && ls.Life.Err() != nil) || serverWentAway(ls.Proc, err):
		return countAs("server_stopped", toolError("server %q stopped while the call to %s was running (%v); it is being restarted", to.server, to.exposed, u.WithTail(err)))
	case timedOut:
		return countAs("timeout", toolError("the call to %s timed out after %v", to.exposed, g.cfg.Gateway.Limits.CallTimeout))
	}
	return countAs("error", toolError("%s failed: %v", to.exposed, err))
}

// serverWentAway reports whether a call failed because the server went away:
// its process exited, or its connection closed.
func serverWentAway(proc *wire.Process, err error) bool {
	if proc != nil {
		select {
		case <-proc.Exited():
			return true
		case <-time.After(300 * time.Millisecond):
		}
	}
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF)
}

// recordCall tells how c ended, once: the metrics count it, a built-in tool's
// span ends, and the feed hears of it.
func (g *Gateway) recordCall(c *toolCall, o callOutcome) {
	took := time.Since(c.start)
	if o.count != "" {
		g.metrics.Call(c.to.server, o.count, took)
	}
	if o.span != nil {
		g.tracer.End(o.span, o.res.IsError, nil, "")
	}
	if c.s != nil && g.feed != nil {
		c.s.feedCall(c, o, took) // feed.go
	}
}
