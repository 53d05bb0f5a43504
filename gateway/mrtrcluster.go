package gateway

// Multi round-trip calls across the replicas of a service (mrtr.go,
// docs/scale.md). A 2026-07-28 client is stateless: its retry of a call
// that needed input may reach any replica.
//
//   - A 2026 server's requestState is the server's own; the replica that
//     handed it to the client shares the binding (which client got it for
//     which tool) through the cluster, so that any replica accepts the
//     retry and none accepts a forged or replayed one.
//   - A held call (a 2025 server waiting for the client's answer) lives in
//     the replica that made it: its upstream request waits there. That
//     replica answers for the call's state in the cluster (CallRelay) while
//     the call waits; a replica that gets the retry sends it there, and
//     gives the client what came back.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
)

// CallRelay is what a Cluster offers so that a multi round-trip call's
// retry is served on whichever replica it reaches (package cluster
// implements it).
type CallRelay interface {
	// Ask sends req to the replica answering topic for key and waits for
	// its answer until ctx ends; ok is false when no replica answers.
	Ask(ctx context.Context, topic, key string, req []byte) (resp []byte, ok bool, err error)
	// Answer serves what Ask sends for topic and key until stop.
	Answer(ctx context.Context, topic, key string, serve func(ctx context.Context, req []byte) []byte) (stop func(), err error)
	// PutTemp, GetTemp and DelTemp keep small values for a while.
	PutTemp(ctx context.Context, kind, key string, value []byte, ttl time.Duration) error
	GetTemp(ctx context.Context, kind, key string) ([]byte, error)
	DelTemp(ctx context.Context, kind, key string) error
}

const (
	heldTopic   = "held"
	bindingKind = "mrtr"
)

// callRelay is the cluster's CallRelay, nil without one.
func (g *Gateway) callRelay() CallRelay {
	if g.cluster == nil {
		return nil
	}
	r, _ := g.cluster.(CallRelay)
	return r
}

// bindingValue is what a shared binding holds: the tool it was for.
func bindingValue(server, tool string) string { return server + "\x00" + tool }

// shareBinding shares bindState's binding with the other replicas and
// reports whether the cluster took it.
func (g *Gateway) shareBinding(client, server, tool, state string) bool {
	r := g.callRelay()
	if r == nil || state == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := r.PutTemp(ctx, bindingKind, bindKey(client, state), []byte(bindingValue(server, tool)), stateTTL); err != nil {
		g.log.Debug("could not share a requestState's binding; a retry must come back to this replica", "err", err)
		return false
	}
	return true
}

// sharedBinding returns the tool a replica bound the state to for client
// ("" for none); known is false when there is no cluster to ask, or it
// could not be asked.
func (g *Gateway) sharedBinding(client, state string) (tool string, known bool) {
	r := g.callRelay()
	if r == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	v, err := r.GetTemp(ctx, bindingKind, bindKey(client, state))
	if err != nil {
		return "", false
	}
	return string(v), true
}

// dropSharedBinding forgets a binding once a retry used it.
func (g *Gateway) dropSharedBinding(client, state string) {
	r := g.callRelay()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	_ = r.DelTemp(ctx, bindingKind, bindKey(client, state))
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
