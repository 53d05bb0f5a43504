package gateway

// Multi round-trip requests (MCP 2026-07-28): instead of asking the client
// for sampling, elicitation or roots with a request of its own, a server
// answers tools/call with a result of type input_required, which carries
// the questions (inputRequests) and an opaque requestState; the client
// answers by calling again with inputResponses and the same requestState.
//
// What the gateway does depends on the era of each side:
//
//   - 2026 server, 2026 client: the input_required result goes to the client
//     as it came, and the client's retry goes to the same server, with the
//     same state. The state is the server's and is never read; the gateway
//     only remembers which client got it for which tool of which server
//     (stateBinding), and refuses a retry whose state it did not hand to
//     that client for that tool: a forged state, one replayed against
//     another tool or server, or one from another client.
//   - 2026 server, 2025 client: the gateway asks the client the questions
//     with the matching requests of 2025 (elicitation/create,
//     sampling/createMessage, roots/list) and calls the server again with
//     the answers, until the server's result is complete (fulfil).
//   - 2025 server, 2026 client: the server asks with requests of its own
//     while it serves the call, which a 2026 client cannot take. The gateway
//     holds the server's request, ends the client's call with input_required
//     carrying the question and a requestState of its own, and on the
//     client's retry answers the held request and waits for the server's
//     result (heldCall, mrtrheld.go). A client that does not retry within holdTimeout
//     gets nothing more: the server's request fails and its call is
//     cancelled.
//   - 2025 server, 2025 client: the server's requests are relayed to the
//     client (forward.go).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// clientKey names the client a request came from, for binding retries to
// it: the authenticated user when there is one; over HTTP the session, or
// for a request without one (2026-07-28 is sessionless) a digest of its
// Authorization header; otherwise the connection.
func clientKey(ss *mcp.ServerSession, extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return "user:" + extra.TokenInfo.UserID
	}
	if extra != nil && extra.Header != nil {
		if ss != nil && ss.ID() != "" {
			return "session:" + ss.ID()
		}
		sum := sha256.Sum256([]byte(extra.Header.Get("Authorization")))
		return "http:" + hex.EncodeToString(sum[:8])
	}
	if ss != nil {
		return fmt.Sprintf("conn:%p", ss)
	}
	return "none"
}

func callClientKey(req *mcp.CallToolRequest) string {
	if req == nil {
		return "none"
	}
	return clientKey(req.Session, req.Extra)
}

// clientModern reports whether a client session speaks 2026-07-28.
func clientModern(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && upstream.IsModern(ip.ProtocolVersion)
}

// retry is a client's retry of a call that needed input.
type retry struct {
	state     string
	responses mcp.InputResponseMap
	held      *heldCall // set when the state is a held call's
	remote    bool      // a held call's state that another replica holds
}

// retryOf checks a call's requestState: nil when the call carries none (a
// first call), an error when the state was not handed to this client for
// this tool, the retry otherwise.
func (g *Gateway) retryOf(req *mcp.CallToolRequest, to target) (*retry, error) {
	if req == nil || req.Params == nil {
		return nil, nil
	}
	state := req.Params.RequestState
	if state == "" {
		if len(req.Params.InputResponses) > 0 {
			return &retry{responses: req.Params.InputResponses}, nil
		}
		return nil, nil
	}
	m := g.fwd.mrtr
	client := callClientKey(req)
	r := &retry{state: state, responses: req.Params.InputResponses}
	m.mu.Lock()
	h, held := m.held[state]
	m.mu.Unlock()
	switch {
	case held:
		if h.client != client || h.server != to.server || h.tool != to.name {
			return nil, errStateRefused(to.exposed)
		}
		r.held = h
		return r, nil
	case g.stateGiven(client, to.server, to.name, state):
		return r, nil
	case g.callRelay() != nil && strings.HasPrefix(state, heldStatePrefix):
		// Another replica holds the call (mrtrheld.go); its holder checks
		// the client and the tool.
		r.remote = true
		return r, nil
	}
	return nil, errStateRefused(to.exposed)
}

// stateGiven reports whether client was given state for item of server (a
// tool, or a prompt or resource as checkRound names them): bound here and
// not used on another replica since, or bound by another replica and
// shared through the cluster (mrtrcluster.go).
func (g *Gateway) stateGiven(client, server, item, state string) bool {
	m := g.fwd.mrtr
	m.mu.Lock()
	b, bound := m.states[bindKey(client, state)]
	m.mu.Unlock()
	if !bound {
		v, _ := g.sharedBinding(client, state)
		return v == bindingValue(server, item)
	}
	if time.Now().After(b.expires) || b.server != server || b.tool != item {
		return false
	}
	// A retry on another replica may have used it meanwhile.
	if b.shared {
		if v, known := g.sharedBinding(client, state); known && v == "" {
			m.dropState(client, state)
			return false
		}
	}
	return true
}

// errStateRefused is the error of a retry whose requestState the gateway
// did not hand to this client for this tool.
func errStateRefused(name string) error {
	return fmt.Errorf("the requestState of this call to %s was not given to this client by a call to %s (or it expired, or was already used); "+
		"call the tool again without requestState and inputResponses", name, name)
}

// upstreamMeta is the _meta a call goes upstream with: the client's, less
// its progress token (the gateway uses its own) and the protocol's own keys
// (io.modelcontextprotocol/…), which describe the client's side of the
// gateway, not the gateway's side of the server. A 2026 server is told,
// in the per-request capabilities, what the gateway can get from this
// client (as this request declares them, for a 2026-07-28 client), so
// that it can refuse a call that needs one the client lacks (-32021): roots always (none, when the client has none), sampling and
// elicitation when the client has them, and the client's extensions; and
// the log level a 2025 client set (level), unless the client's request
// names its own.
//
//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func upstreamMeta(req *mcp.CallToolRequest, modernUp bool, level mcp.LoggingLevel) mcp.Meta {
	var out mcp.Meta
	set := func(k string, v any) {
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	if req != nil && req.Params != nil {
		for k, v := range req.Params.Meta {
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			if k == "progressToken" || (strings.HasPrefix(k, "io.modelcontextprotocol/") && !(modernUp && k == mcp.MetaKeyLogLevel)) {
				continue
			}
			set(k, v)
		}
	}
	if !modernUp {
		return out
	}
	// Always set: without it, the MCP library would declare the gateway's
	// own capabilities, which are not the client's.
	cc := &mcp.ClientCapabilities{}
	if req != nil {
		// A 2026-07-28 request's own capabilities, else its session's.
		if c := req.ClientCapabilities(); c != nil {
			cc = c
		}
	}
	set(mcp.MetaKeyClientCapabilities, relayedCaps(cc))
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	if _, ok := out[mcp.MetaKeyLogLevel]; !ok && level != "" {
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		set(mcp.MetaKeyLogLevel, level)
	}
	return out
}

// relayedCaps are the capabilities a 2026 server is told the gateway has
// while it serves a request of a client with caps cc.
func relayedCaps(cc *mcp.ClientCapabilities) map[string]any {
	m := map[string]any{"roots": map[string]any{"listChanged": true}}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	if cc.Sampling != nil {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		m["sampling"] = cc.Sampling
	}
	if cc.Elicitation != nil {
		m["elicitation"] = cc.Elicitation
	}
	if len(cc.Extensions) > 0 {
		m["extensions"] = cc.Extensions
	}
	return m
}

// afterResult handles a server's input_required result: for a 2025
// client (or none) the gateway asks the questions itself and calls again
// (fulfil); for a 2026 client the result goes out as it came, its state
// bound to the client and the tool. A complete result passes.
func (g *Gateway) afterResult(ctx context.Context, req *mcp.CallToolRequest, to target, ls upstream.Conn, params *mcp.CallToolParams, res *mcp.CallToolResult) (*mcp.CallToolResult, bool, error) {
	m := g.fwd.mrtr
	client := callClientKey(req)
	if params.RequestState != "" {
		m.dropState(client, params.RequestState)
		g.dropSharedBinding(client, params.RequestState)
	}
	if res == nil || !res.NeedsInput() {
		return res, false, nil
	}
	if req == nil || !clientModern(req.Session) {
		return g.fulfil(ctx, req, to, ls, params, res)
	}
	if res.InputRequests == nil {
		// Load shedding: input_required with nothing to answer. It stays
		// input_required on the way out.
		res.InputRequests = mcp.InputRequestMap{}
	}
	shared := g.shareBinding(client, to.server, to.name, res.RequestState) // mrtrcluster.go
	m.bindState(client, to.server, to.name, res.RequestState, shared)
	return res, false, nil
}

// fulfil answers a server's input requests for a client of 2025 (or for no
// client): each question goes to the client as the request it stands for,
// and the call is made again with the answers, until the server's result is
// complete, at most maxRounds times.
func (g *Gateway) fulfil(ctx context.Context, req *mcp.CallToolRequest, to target, ls upstream.Conn, params *mcp.CallToolParams, res *mcp.CallToolResult) (*mcp.CallToolResult, bool, error) {
	var ss *mcp.ServerSession
	if req != nil {
		ss = req.Session
	}
	shed := 0
	for round := 1; res != nil && res.NeedsInput(); round++ {
		if round > maxRounds {
			return toolError("%s still needed input after %d rounds; the gateway gave up", to.exposed, maxRounds), false, nil
		}
		if len(res.InputRequests) == 0 {
			// Load shedding: the server is busy; call again a little later.
			shed++
			if shed > 3 {
				return toolError("%s is busy (it asked to be called again %d times); try again later", to.exposed, shed-1), false, nil
			}
			select {
			case <-time.After(time.Duration(shed) * 200 * time.Millisecond):
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		if ss == nil {
			return toolError("%s needs input from the user or the client (%s), and this call has no client to ask", to.exposed, describeAsks(res.InputRequests)), false, nil
		}
		answers, err := g.askClient(ctx, to.server, ss, res.InputRequests)
		if err != nil {
			return toolError("%s needs input the gateway could not get from the client: %v", to.exposed, err), false, nil
		}
		next := *params
		next.InputResponses, next.RequestState = answers, res.RequestState
		var timedOut bool
		res, timedOut, err = g.callOnce(ctx, ls, &next)
		if err != nil {
			return nil, timedOut, err
		}
	}
	return res, false, nil
}

// describeAsks names the kinds of the input requests, for messages.
func describeAsks(reqs mcp.InputRequestMap) string {
	var kinds []string
	for _, r := range reqs {
		kinds = append(kinds, askKind(r))
	}
	if len(kinds) == 0 {
		return "nothing named"
	}
	return strings.Join(kinds, ", ")
}

func askKind(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return "elicitation"
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling"
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	case *mcp.ListRootsParams:
		return "roots"
	}
	return fmt.Sprintf("%T", r)
}

// askClient puts a server's input requests to a 2025 client session, one
// request each, concurrently, within the call timeout.
func (g *Gateway) askClient(ctx context.Context, server string, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		answers  = make(mcp.InputResponseMap, len(reqs))
		firstErr error
	)
	caps := clientCaps(ss)
	for key, r := range reqs {
		wg.Go(func() {
			a, err := askOne(ctx, ss, caps, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s (%s): %w", key, askKind(r), err)
				}
				cancel()
				return
			}
			answers[key] = a
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return answers, nil
}

// askOne puts one input request to a 2025 client, when it declared the
// capability the request needs; roots without the capability are none.
func askOne(ctx context.Context, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, r mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if !canElicit(caps) {
			return nil, errors.New("the client does not support elicitation")
		}
		return ss.Elicit(ctx, p)
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageWithToolsParams:
		if !canSample(caps) {
			return nil, errors.New("the client does not support sampling")
		}
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		if len(p.Tools) > 0 && caps.Sampling.Tools == nil {
			return nil, errors.New("the client does not support tools in sampling")
		}
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		return ss.CreateMessageWithTools(ctx, p)
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageParams:
		if !canSample(caps) {
			return nil, errors.New("the client does not support sampling")
		}
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		return ss.CreateMessage(ctx, p)
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	case *mcp.ListRootsParams:
		if !canRoots(caps) {
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
		}
		rctx, cancel := context.WithTimeout(ctx, rootsTimeout)
		defer cancel()
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		return ss.ListRoots(rctx, p)
	}
	return nil, fmt.Errorf("unknown input request %T", r)
}

// Prompts and resources: a 2026 server may answer prompts/get and
// resources/read with input_required too. The result goes to the client as
// it came, its state bound as a tool call's is (to the client, the server
// and the prompt or resource); a retry is checked the same way. For a 2025
// client the SDK answers the server's questions itself, with the client's
// requests of its era, and asks the gateway again with the answers once.

// checkRound checks the requestState of a prompts/get or resources/read
// retry against what the gateway (this replica or another) handed out for
// target.
func (g *Gateway) checkRound(client, server, target, state string) error {
	if state == "" || g.stateGiven(client, server, target, state) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("the requestState of this request for %s was not given to this client for it (or it expired, or was already used)", target)}
}

// noteRound binds or drops states after a prompts/get or resources/read
// answer, here and, as a tool call's, in the cluster, so that a retry may
// reach any replica. A state is bound for a 2025 client too: the SDK's
// retry on its behalf comes back to the gateway with it.
func (g *Gateway) noteRound(client, server, target, used string, needsInput bool, state string) {
	m := g.fwd.mrtr
	if used != "" {
		m.dropState(client, used)
		g.dropSharedBinding(client, used)
	}
	if needsInput {
		shared := g.shareBinding(client, server, target, state) // mrtrcluster.go
		m.bindState(client, server, target, state, shared)
	}
}

// readResourceFor serves a client's resources/read, retries included.
func (g *Gateway) readResourceFor(ctx context.Context, req *mcp.ReadResourceRequest, server, uri string) (*mcp.ReadResourceResult, error) {
	client := clientKey(req.Session, req.Extra)
	target := "resource:" + uri
	if err := g.checkRound(client, server, target, req.Params.RequestState); err != nil {
		return nil, err
	}
	res, err := g.readResourceWith(ctx, req.Session, server, &mcp.ReadResourceParams{Meta: roundMeta(req.Params.Meta), URI: uri,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState})
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() && res.InputRequests == nil {
		res.InputRequests = mcp.InputRequestMap{}
	}
	g.noteRound(client, server, target, req.Params.RequestState, res.NeedsInput(), res.RequestState)
	return res, nil
}

// getPromptFor serves a client's prompts/get, retries included.
func (g *Gateway) getPromptFor(ctx context.Context, req *mcp.GetPromptRequest, server, name string) (*mcp.GetPromptResult, error) {
	client := clientKey(req.Session, req.Extra)
	target := "prompt:" + name
	if err := g.checkRound(client, server, target, req.Params.RequestState); err != nil {
		return nil, err
	}
	res, err := g.getPromptWith(ctx, req.Session, server, &mcp.GetPromptParams{Meta: roundMeta(req.Params.Meta), Name: name,
		Arguments: req.Params.Arguments, InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState})
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() && res.InputRequests == nil {
		res.InputRequests = mcp.InputRequestMap{}
	}
	g.noteRound(client, server, target, req.Params.RequestState, res.NeedsInput(), res.RequestState)
	return res, nil
}

// roundMeta is the client's _meta of a prompts/get or resources/read, less
// the protocol's own keys (see upstreamMeta).
func roundMeta(in mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range in {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}
