package gateway

// Requests to an upstream server on behalf of a client: a tool call (with
// the result's way back) and the others (onUpstream).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callUpstream makes the call to its server on ls and waits for its
// result: the server's requests, logs and progress meanwhile go to the
// client, and the logs and progress that came before the result go out
// before it.
func (g *Gateway) callUpstream(ctx context.Context, c *toolCall, u *upstream, ls liveSession, params *mcp.CallToolParams) callOutcome {
	req := c.req
	if req != nil {
		defer g.track(c.to.server, ctx, req.Session)()
		defer u.tap.awaitLogs(2 * time.Second)
	}
	if req != nil && req.Params != nil {
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			id := fmt.Sprintf("toolsearch-%d", g.progSeq.Add(1))
			g.progMu.Lock()
			g.progress[id] = progressTarget{ss: req.Session, ctx: ctx, token: tok}
			g.progMu.Unlock()
			defer func() {
				u.tap.awaitProgress(id, 2*time.Second)
				g.progMu.Lock()
				delete(g.progress, id)
				g.progMu.Unlock()
			}()
			params.SetProgressToken(id)
		}
	}
	res, timedOut, err := g.callOnce(ctx, ls, params)
	if err != nil && neverSent(err) && ctx.Err() == nil {
		// The session had ended before the call was made (the server died
		// a moment ago and its restart has not begun): the server never saw
		// the call, so it goes to the next session.
		if next, nerr := u.liveAfter(ctx, ls.cs); nerr == nil {
			ls = next
			res, timedOut, err = g.callOnce(ctx, ls, params)
		}
	}
	if err == nil {
		withoutServerInfo(res)
		res, timedOut, err = g.afterResult(ctx, req, c.to, ls, params, res) // mrtr.go
	}
	return g.upstreamOutcome(ctx, c.to, u, ls, res, timedOut, err)
}

// callOnce makes one call on a session. The call ends with the client's
// request, at the call timeout, or when the upstream session is closed (a
// restart, the gateway stopping), whichever comes first; timedOut says it
// was the timeout.
func (g *Gateway) callOnce(ctx context.Context, ls liveSession, params *mcp.CallToolParams) (res *mcp.CallToolResult, timedOut bool, err error) {
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	// The call's span; its trace context goes to the server in _meta
	// (tracing.go).
	cctx, span, meta := g.tracer.StartCall(cctx, ls.key, params.Name, false, params.Meta)
	params.Meta = meta
	if params.GetProgressToken() != nil || sendsLogs(ls.cs) {
		// The tap sees the call's stream: its progress and logs.
		cctx = tapContext(cctx)
	}
	res, err = ls.cs.CallTool(cctx, params)
	timedOut = err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if span != nil {
		errType := errorType(err)
		if timedOut {
			errType = "timeout"
		}
		g.tracer.End(span, res != nil && res.IsError, err, errType)
	}
	return res, timedOut, err
}

// upstreamContext bounds a request to an upstream: it ends with ctx, at the
// call timeout, or when the upstream session is closed.
func (g *Gateway) upstreamContext(ctx context.Context, ls liveSession) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
	stop := context.AfterFunc(ls.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// onUpstream makes one request to u's live session on behalf of the client
// session ss (nil for none): the request counts as in flight for the
// server (track) and is bounded by upstreamContext.
func onUpstream[R any](ctx context.Context, g *Gateway, ss *mcp.ServerSession, u *upstream, call func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	ls, err := u.live(ctx)
	if err != nil {
		var none R
		return none, err
	}
	defer g.track(u.cfg.Key, ctx, ss)()
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	return call(cctx, ls.cs)
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
