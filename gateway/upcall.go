package gateway

// Requests to an upstream server on behalf of a client: one tool call
// (callOnce), and the others (onUpstream).

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// callOnce makes one call on a session, and returns its result without the
// server's own identity. The call ends with the client's request, at the
// call timeout, or when the upstream session is closed (a restart, the
// gateway stopping), whichever comes first; timedOut says it was the
// timeout.
func (g *Gateway) callOnce(ctx context.Context, ls upstream.Conn, params *mcp.CallToolParams) (res *mcp.CallToolResult, timedOut bool, err error) {
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	if params.GetProgressToken() != nil || sendsLogs(ls.Session) {
		// The tap sees the call's stream: its progress and logs.
		cctx = wire.TapContext(cctx)
	}
	// The call's span; its trace context goes to the server in _meta
	// (tracing.go).
	cctx, span, meta := g.tracer.StartCall(cctx, ls.Key, params.Name, false, params.Meta)
	params.Meta = meta
	res, err = ls.Session.CallTool(cctx, params)
	timedOut = err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if span != nil {
		errType := errorType(err)
		if timedOut {
			errType = "timeout"
		}
		g.tracer.End(span, res != nil && res.IsError, err, errType)
	}
	withoutServerInfo(res)
	return res, timedOut, err
}

// callLive makes the call on ls, or on the server's next session when ls
// had closed before the call was sent (the server died a moment ago and
// its restart has not begun: the server never saw the call). It returns
// the session the call was made on.
func (g *Gateway) callLive(ctx context.Context, u *upstream.Server, ls upstream.Conn, params *mcp.CallToolParams) (upstream.Conn, *mcp.CallToolResult, bool, error) {
	res, timedOut, err := g.callOnce(ctx, ls, params)
	if err != nil && neverSent(err) && ctx.Err() == nil {
		if next, nerr := u.LiveAfter(ctx, ls.Session); nerr == nil {
			ls = next
			res, timedOut, err = g.callOnce(ctx, ls, params)
		}
	}
	return ls, res, timedOut, err
}

// upstreamContext bounds a request to an upstream: it ends with ctx, at the
// call timeout, or when the upstream session is closed.
func (g *Gateway) upstreamContext(ctx context.Context, ls upstream.Conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
	stop := context.AfterFunc(ls.Life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// onUpstream makes one request to u's live session on behalf of the client
// session ss (nil for none): the request counts as in flight for the
// server (track) and is bounded by upstreamContext.
func onUpstream[R any](ctx context.Context, g *Gateway, ss *mcp.ServerSession, u *upstream.Server, call func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	ls, err := u.Live(ctx)
	if err != nil {
		var none R
		return none, err
	}
	defer g.track(u.Key(), ctx, ss)()
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	return call(cctx, ls.Session)
}

// sendsLogs reports whether a server declared that it sends log messages.
func sendsLogs(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil
}

// neverSent reports whether a call failed because its session was already
// closing when it was made. For an outgoing call the SDK reports
// ErrConnectionClosed only then, refusing the call before writing it ("client
// is closing"); a call that was sent and then lost reports the connection's
// own error instead. So the server never saw such a call.
func neverSent(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed)
}

// withoutServerInfo drops the server's own identity from a result's _meta
// (io.modelcontextprotocol/serverInfo): to the client, the gateway is the
// server.
func withoutServerInfo(res *mcp.CallToolResult) {
	if res != nil && res.Meta != nil {
		delete(res.Meta, mcp.MetaKeyServerInfo)
		if len(res.Meta) == 0 {
			res.Meta = nil
		}
	}
}
