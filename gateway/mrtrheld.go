package gateway

// Held calls (mrtr.go): a 2025 server, called for a 2026 client, asks the
// client something with a request of its own while it serves the call. The
// gateway holds the server's request (heldCall, mrtrstate.go), ends the
// client's call with input_required carrying the question and a
// requestState of its own (callHeld, waitHeld), and on the client's retry
// answers the held request and waits for the server's next step
// (resumeHeld).
//
// A held call lives in the replica that made it: its upstream request
// waits there. That replica answers for the call's state in the cluster
// (CallRelay, mrtrcluster.go) while the call waits; a replica that gets
// the retry sends it there (forwardHeld), and gives the client what came
// back.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// heldTopic is the cluster topic on which the replica holding a call
// answers for its state.
const heldTopic = "held"

// callHeld makes a call to a 2025 server for a 2026 client: the server's
// requests meanwhile become input_required results (see waitHeld).
func (g *Gateway) callHeld(ctx context.Context, req *mcp.CallToolRequest, to target, u *upstream.Server, ls upstream.Conn, params *mcp.CallToolParams) callOutcome {
	m := g.fwd.mrtr
	h := m.newHeld(u, to.name, callClientKey(req))
	// The server's call outlives the client's first request: it ends when
	// it is answered, at the call timeout, when the server's session ends,
	// or when the held call is dropped.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	untrack := g.trackHeld(to.server, hctx, req.Session, h)
	// The server's progress reaches the client's request while it waits,
	// under the client's token, as on the direct path (callUpstream).
	var progID string
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		progID = fmt.Sprintf("toolsearch-%d", g.progSeq.Add(1))
		g.progMu.Lock()
		g.progress[progID] = progressTarget{ss: req.Session, ctx: ctx, token: tok}
		g.progMu.Unlock()
		params.SetProgressToken(progID)
	}
	go func() {
		defer untrack()
		res, timedOut, err := g.callOnce(hctx, ls, params)
		h.done <- heldOutcome{ls: ls, res: res, timedOut: timedOut, err: err}
	}()
	o := g.waitHeld(ctx, to, h)
	if progID != "" {
		if o.res.RequestState == "" {
			// The progress that came before the result goes out before it.
			u.Tap().AwaitProgress(progID, 2*time.Second)
		}
		g.progMu.Lock()
		delete(g.progress, progID)
		g.progMu.Unlock()
	}
	return o
}

// waitHeld waits, for the client's request ctx, for the held call's next
// step: the server's result, which ends the call, or a request of the
// server, which goes to the client as input_required.
func (g *Gateway) waitHeld(ctx context.Context, to target, h *heldCall) callOutcome {
	select {
	case o := <-h.done:
		h.end(errors.New("the call ended"))
		if o.err != nil {
			return g.callFailed(ctx, to, h.u, o.ls, o.err, o.timedOut) // outcome.go
		}
		return g.upstreamOutcome(ctx, to, h.u, o.ls, o.res, false, nil)
	case a := <-h.asks:
		h.mu.Lock()
		h.pending = a
		if h.timer != nil {
			h.timer.Stop()
		}
		h.timer = time.AfterFunc(h.m.hold, func() {
			h.end(fmt.Errorf("the client did not answer within %v", h.m.hold))
		})
		h.mu.Unlock()
		g.relayHeld(h) // the retry may reach another replica (below)
		return countAs("input_required", &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{a.key: a.req}, RequestState: h.token})
	case <-h.ended:
		return countAs("timeout", toolError("the call to %s ended: its server's question was not answered in time", to.exposed))
	case <-ctx.Done():
		h.end(errors.New("the client cancelled its call"))
		return countAs("cancelled", toolError("the call to %s was cancelled", to.exposed))
	}
}

// resumeHeld takes a client's retry of a held call: the answer goes to the
// server's waiting request, then the call goes on.
func (g *Gateway) resumeHeld(ctx context.Context, to target, r *retry) callOutcome {
	h := r.held
	h.mu.Lock()
	a := h.pending
	if a == nil {
		h.mu.Unlock()
		return countAs("refused", toolError("the call to %s is not waiting for input", to.exposed))
	}
	ans, ok := r.responses[a.key]
	if err := answerFits(a.req, ans); !ok || err != nil {
		h.mu.Unlock()
		if !ok {
			err = fmt.Errorf("inputResponses has no %q", a.key)
		}
		return countAs("invalid_arguments", toolError("this retry of %s does not answer its input request: %v", to.exposed, err))
	}
	h.pending = nil
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	a.reply <- heldReply{res: ans}
	return g.waitHeld(ctx, to, h)
}

// answerFits checks that an answer is of the kind its request asks for.
func answerFits(req mcp.InputRequest, ans mcp.InputResponse) error {
	var ok bool
	switch req.(type) {
	case *mcp.ElicitParams:
		_, ok = ans.(*mcp.ElicitResult)
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		_, ok = ans.(*mcp.CreateMessageWithToolsResult)
		if !ok {
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			_, ok = ans.(*mcp.CreateMessageResult)
		}
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	case *mcp.ListRootsParams:
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		_, ok = ans.(*mcp.ListRootsResult)
	}
	if !ok && ans != nil {
		return fmt.Errorf("a %s request cannot be answered with %T", askKind(req), ans)
	}
	if ans == nil {
		return errors.New("no answer")
	}
	return nil
}

// trackHeld is track for a held call: the server's requests go to h.
func (g *Gateway) trackHeld(server string, ctx context.Context, ss *mcp.ServerSession, h *heldCall) func() {
	return g.trackOrigin(server, origin{ss: ss, ctx: ctx, held: h})
}

// heldRetry is a retry of a held call sent to the replica holding it.
type heldRetry struct {
	Client    string               `json:"client"`
	Server    string               `json:"server"`
	Tool      string               `json:"tool"`
	Responses mcp.InputResponseMap `json:"responses,omitempty"`
}

// heldAnswer is what the holding replica sends back: the call's next
// result, or why the retry was refused.
type heldAnswer struct {
	Refused string              `json:"refused,omitempty"`
	Result  *mcp.CallToolResult `json:"result,omitempty"`
}

// relayHeld makes this replica answer, in the cluster, for held call h's
// state, from when the client is shown its question until the call ends.
func (g *Gateway) relayHeld(h *heldCall) {
	r := g.callRelay()
	if r == nil {
		return
	}
	h.mu.Lock()
	if h.relayed {
		h.mu.Unlock()
		return
	}
	h.relayed = true
	h.mu.Unlock()
	stop, err := r.Answer(context.Background(), heldTopic, h.token, func(ctx context.Context, req []byte) []byte {
		return g.serveHeldRetry(ctx, h, req)
	})
	if err != nil {
		g.log.Debug("a held call's retry must come back to this replica", "err", err)
		return
	}
	h.mu.Lock()
	h.unrelay = stop
	h.mu.Unlock()
	select {
	case <-h.ended: // ended meanwhile: end() found no unrelay
		stop()
	default:
	}
}

// serveHeldRetry takes a retry another replica received for h.
func (g *Gateway) serveHeldRetry(ctx context.Context, h *heldCall, data []byte) []byte {
	var in heldRetry
	var out heldAnswer
	v := g.cur.Load()
	t, ok := v.snap.Tool(h.server + "/" + h.tool)
	if !ok {
		t = &catalog.Tool{Server: h.server, Name: h.tool}
	}
	to := v.names.toolTarget(t)
	switch err := json.Unmarshal(data, &in); {
	case err != nil:
		out.Refused = "the retry could not be read: " + err.Error()
	case in.Client != h.client || in.Server != h.server || in.Tool != h.tool:
		out.Refused = errStateRefused(to.exposed).Error()
	default:
		ctx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
		defer cancel()
		c := &toolCall{start: time.Now(), to: to}
		o := g.resumeHeld(ctx, to, &retry{state: h.token, responses: in.Responses, held: h})
		g.recordCall(c, o)
		out.Result = o.res
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(heldAnswer{Result: toolError("the result of %s could not be passed on: %v", to.exposed, err)})
	}
	return b
}

// forwardHeld sends a client's retry of a call another replica holds to
// that replica, and returns what it answered.
func (g *Gateway) forwardHeld(ctx context.Context, req *mcp.CallToolRequest, to target, r *retry) callOutcome {
	refused := func(msg string) callOutcome {
		return callOutcome{err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}, count: "refused"}
	}
	// answer is an outcome the metrics here do not count: the replica
	// holding the call counts how it ends, once the retry reached it.
	answer := func(res *mcp.CallToolResult) callOutcome { return callOutcome{res: res} }
	data, err := json.Marshal(heldRetry{Client: callClientKey(req), Server: to.server, Tool: to.name, Responses: r.responses})
	if err != nil {
		return countAs("error", toolError("the retry of %s could not be passed on: %v", to.exposed, err))
	}
	actx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout+clusterTimeout)
	defer cancel()
	resp, ok, err := g.callRelay().Ask(actx, heldTopic, r.state, data)
	switch {
	case err != nil && !ok: // it never reached the replica: counted here
		return countAs("unavailable", toolError("the call to %s waits on another replica, which cannot be reached now (%v); call it again without requestState and inputResponses", to.exposed, err))
	case !ok:
		return refused(errStateRefused(to.exposed).Error())
	case err != nil:
		return answer(toolError("the replica holding the call to %s did not answer: %v", to.exposed, err))
	}
	var out heldAnswer
	if err := json.Unmarshal(resp, &out); err != nil || (out.Refused == "" && out.Result == nil) {
		return answer(toolError("the replica holding the call to %s answered what cannot be read", to.exposed))
	}
	if out.Refused != "" {
		return refused(out.Refused)
	}
	return answer(out.Result)
}
