package gateway

// A tool call, from the name a client sends to the outcome the gateway
// records. The name is resolved once (newCall), in the view current when
// the call came; a name that targets a server still starting is resolved
// again once it has started (awaitResolve). Every way a call can end comes
// back to callTool as a callOutcome, which recordCall tells once: to the
// metrics, to a built-in tool's span, and to the feed.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// newCall starts serving a call of name with args: the name is resolved
// in the current view.
func (g *Gateway) newCall(s *session, req *mcp.CallToolRequest, name string, args json.RawMessage) *toolCall {
	c := &toolCall{s: s, req: req, asked: name, args: args, start: time.Now()}
	c.to, c.err = g.cur.Load().names.Resolve(name)
	return c
}

// call routes one tool call: resolve the name (policy-visible tools only),
// apply ask rules, validate the arguments, forward to the upstream server.
// A retry of a call that needed input (requestState, inputResponses) goes
// to the server and tool that asked, and only there (mrtr.go). Every error
// is a tool error the model can read, except the protocol errors of
// callTool.
func (g *Gateway) call(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage) *mcp.CallToolResult {
	res, err := g.callTool(ctx, g.newCall(nil, req, name, args))
	if err != nil {
		return toolError("%v", err)
	}
	return res
}

// callTool serves c and records how it ended. Its error is one the
// client's protocol layer is to see as a JSON-RPC error, as the server
// itself would answer it: a retry whose requestState the gateway did not
// hand out (-32602), and a server's refusal for want of a client
// capability (-32021, relayed as it came).
func (g *Gateway) callTool(ctx context.Context, c *toolCall) (*mcp.CallToolResult, error) {
	o := g.serveCall(ctx, c)
	g.recordCall(c, o)
	return o.res, o.err
}

// serveCall serves c: a retry goes where its state belongs, ask rules are
// applied, and the call goes to a built-in tool or to its server.
func (g *Gateway) serveCall(ctx context.Context, c *toolCall) callOutcome {
	ctx = wire.WithPolling(ctx, c.req) // an upstream's SSE polling reaches the client (wire/ssepoll.go)
	if c.err != nil && !g.static {
		c.to, c.err = g.awaitResolve(ctx, c.asked, c.err) // search.go
	}
	if c.err != nil {
		return countAs("unknown_tool", toolError("%v", c.err))
	}
	again, err := g.retryOf(c.req, c.to)
	if err != nil {
		return callOutcome{err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}, count: "refused"}
	}
	if again != nil && again.remote {
		return g.forwardHeld(ctx, c.req, c.to, again) // mrtrheld.go
	}
	if again != nil && again.held != nil {
		return g.resumeHeld(ctx, c.to, again) // mrtrheld.go
	}
	if v := c.to.verdict; v.Decision == policy.Ask && (again == nil || again.state == "") {
		// A retry with a state the gateway handed out continues a call
		// that was confirmed already.
		if msg, ok := g.confirm(ctx, c.req, c.to.exposed, v, c.args); !ok { // approval.go
			return countAs("refused", toolError("%s", msg))
		}
	}
	if g.isBuiltin(c.to.tool) {
		return g.callBuiltin(ctx, c.req, c.to, c.args) // builtin.go
	}
	if g.static {
		return countAs("not_configured", toolError("%s is in a sample catalog: no server is configured, so nothing can be called. "+
			"Write a config file (toolsearch import makes one from your client's settings) and run toolsearch serve -c FILE.", c.to.exposed))
	}
	args := orEmpty(c.args)
	if err := g.cur.Load().validators.validate(c.to.tool, args, g.log); err != nil {
		return countAs("invalid_arguments", toolError("the arguments do not match the input schema of %s: %v", c.to.exposed, err))
	}
	u := g.ups()[c.to.server]
	if u == nil {
		return countAs("error", toolError("server %q is not configured", c.to.server))
	}
	ls, err := u.Live(ctx)
	if err != nil {
		return countAs("unavailable", toolError("cannot call %s: %v", c.to.exposed, err))
	}
	serverModern := upstream.ModernSession(ls.Session)
	// The client's _meta goes along (upstreamMeta); its progress token is
	// replaced by the gateway's own below.
	params := &mcp.CallToolParams{Name: c.to.name, Arguments: args, Meta: upstreamMeta(c.req, serverModern, g.fwd.level())}
	if again != nil {
		params.InputResponses, params.RequestState = again.responses, again.state
	}
	if c.req != nil && clientModern(c.req.Session) && !serverModern {
		// A 2025 server's requests meanwhile cannot go to this client as
		// requests: they become input_required results.
		return g.callHeld(ctx, c.req, c.to, u, ls, params) // mrtrheld.go
	}
	return g.callUpstream(ctx, c, u, ls, params)
}

// callUpstream makes the call to its server on ls and waits for its
// result: the server's requests, logs and progress meanwhile go to the
// client, and the logs and progress that came before the result go out
// before it.
func (g *Gateway) callUpstream(ctx context.Context, c *toolCall, u *upstream.Server, ls upstream.Conn, params *mcp.CallToolParams) callOutcome {
	req := c.req
	if req != nil {
		defer g.track(c.to.server, ctx, req.Session)()
		defer u.Tap().AwaitLogs(2 * time.Second)
	}
	if req != nil && req.Params != nil {
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			id := fmt.Sprintf("toolsearch-%d", g.progSeq.Add(1))
			g.progMu.Lock()
			g.progress[id] = progressTarget{ss: req.Session, ctx: ctx, token: tok}
			g.progMu.Unlock()
			defer func() {
				u.Tap().AwaitProgress(id, 2*time.Second)
				g.progMu.Lock()
				delete(g.progress, id)
				g.progMu.Unlock()
			}()
			params.SetProgressToken(id)
		}
	}
	ls, res, timedOut, err := g.callLive(ctx, u, ls, params) // upcall.go
	if err == nil {
		res, timedOut, err = g.afterResult(ctx, req, c.to, ls, params, res) // mrtr.go
	}
	return g.upstreamOutcome(ctx, c.to, u, ls, res, timedOut, err)
}
