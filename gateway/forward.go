package gateway

// What passes between clients and servers besides listings and calls:
// requests a server makes of the client (sampling, elicitation, roots),
// notifications both ways (roots changed, resource updates, logs,
// progress), resource subscriptions and completions.
//
// Every upstream session is shared by all client sessions, so a request
// from a server goes to the client on whose behalf the gateway is talking
// to that server at the moment: the newest request in flight to it whose
// client declared the capability needed. When requests are in flight and
// none of their clients can answer, the server is told so. A server that
// asks on its own, with no request of a client in flight, is refused
// sampling and elicitation (an upstream must not be able to prompt a user,
// or spend a client's model, whenever it likes), and gets the roots of the
// only client session when exactly one is connected, none otherwise (one
// client's folders are not shown to a server another client is using).
// Over streamable HTTP the request travels on the stream of the client's
// request in flight, as it would from the server itself.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// track records that a client request (ctx, from ss) is being served by
// server, until the returned function is called.
func (g *Gateway) track(server string, ctx context.Context, ss *mcp.ServerSession) func() {
	return g.trackOrigin(server, origin{ss: ss, ctx: ctx})
}

// trackOrigin records that a client request o is being served by server,
// until the returned function is called.
func (g *Gateway) trackOrigin(server string, o origin) func() {
	if o.ss == nil {
		return func() {}
	}
	f := g.fwd
	f.mu.Lock()
	f.seq++
	id := f.seq
	m := f.inflight[server]
	if m == nil {
		m = map[int64]origin{}
		f.inflight[server] = m
	}
	m[id] = o
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.inflight[server], id)
		if len(f.inflight[server]) == 0 {
			delete(f.inflight, server)
		}
		f.mu.Unlock()
	}
}

// clientCaps returns the capabilities a client session declared.
func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if ss == nil {
		return nil
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return nil
	}
	return ip.Capabilities
}

// originFor picks the client a request from server goes to: the newest
// request in flight to server whose client can take it. ok is false when
// no client can; busy says whether any request was in flight.
func (g *Gateway) originFor(server string, can func(*mcp.ClientCapabilities) bool) (o origin, ok, busy bool) {
	f := g.fwd
	f.mu.Lock()
	defer f.mu.Unlock()
	best := int64(-1)
	for id, cand := range f.inflight[server] {
		if id > best && cand.ss != nil && can(clientCaps(cand.ss)) {
			best, o = id, cand
		}
	}
	return o, best >= 0, len(f.inflight[server]) > 0
}

// onlyClient returns the client session connected, when exactly one is
// and it can take the request.
func (g *Gateway) onlyClient(can func(*mcp.ClientCapabilities) bool) (origin, bool) {
	var only *mcp.ServerSession
	for _, s := range g.sessionList() {
		ss := s.serverSession()
		if ss == nil {
			continue
		}
		if only != nil {
			return origin{}, false
		}
		only = ss
	}
	if only == nil || !can(clientCaps(only)) {
		return origin{}, false
	}
	return origin{ss: only, ctx: context.Background()}, true
}

// unsolicited is the error a server gets for a sampling or elicitation
// request made while no client request of it is in flight.
func unsolicited(what string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "the toolsearch gateway passes " + what + " requests to a client only while the server is serving one of that client's requests; this one came on its own, so it was refused"}
}

// relayContext is the context of a server's request passed on to a
// client: it ends when the server withdraws its request (upCtx), when the
// client's request it belongs to ends, and at the call timeout.
func (g *Gateway) relayContext(upCtx context.Context, o origin) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(o.ctx, g.cfg.Gateway.Limits.CallTimeout)
	stop := context.AfterFunc(upCtx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
func canSample(c *mcp.ClientCapabilities) bool { return c != nil && c.Sampling != nil }
func canElicit(c *mcp.ClientCapabilities) bool { return c != nil && c.Elicitation != nil }

//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
func canRoots(c *mcp.ClientCapabilities) bool { return c != nil && c.RootsV2 != nil }

// relaySampling passes a server's sampling/createMessage to a client.
//
//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
func (g *Gateway) relaySampling(ctx context.Context, server string, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	o, ok, busy := g.originFor(server, canSample)
	if !ok && !busy {
		return nil, unsolicited("sampling")
	}
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "the client of the toolsearch gateway making this request does not support sampling (or no client that supports sampling is connected)"}
	}
	if p != nil && len(p.Tools) > 0 {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		if c := clientCaps(o.ss); c.Sampling.Tools == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "the client connected to the toolsearch gateway does not support tools in sampling"}
		}
	}
	if o.held != nil {
		ans, err := o.held.ask(ctx, "sampling", p)
		if err != nil {
			return nil, fmt.Errorf("sampling through the gateway: %w", err)
		}
		return asSamplingResult(ans)
	}
	rctx, cancel := g.relayContext(ctx, o)
	defer cancel()
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	res, err := o.ss.CreateMessageWithTools(rctx, p)
	if err != nil {
		return nil, fmt.Errorf("sampling through the gateway: %w", err)
	}
	return res, nil
}

// asSamplingResult is a client's answer to a held sampling request, in
// the form the server's request takes.
//
//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
func asSamplingResult(ans mcp.InputResponse) (*mcp.CreateMessageWithToolsResult, error) {
	switch r := ans.(type) {
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageWithToolsResult:
		return r, nil
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	case *mcp.CreateMessageResult:
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		out := &mcp.CreateMessageWithToolsResult{Meta: r.Meta, Model: r.Model, Role: r.Role, StopReason: r.StopReason}
		if r.Content != nil {
			out.Content = []mcp.Content{r.Content}
		}
		return out, nil
	}
	return nil, fmt.Errorf("the client answered sampling with %T", ans)
}

// relayElicit passes a server's elicitation/create to a client.
func (g *Gateway) relayElicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	o, ok, busy := g.originFor(server, canElicit)
	if !ok && !busy {
		return nil, unsolicited("elicitation")
	}
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "the client of the toolsearch gateway making this request does not support elicitation (or no client that supports elicitation is connected)"}
	}
	if p != nil && p.ElicitationID != "" {
		g.fwd.mu.Lock()
		g.fwd.elicitations[p.ElicitationID] = o.ss
		g.fwd.mu.Unlock()
	}
	if o.held != nil {
		ans, err := o.held.ask(ctx, "elicitation", p)
		if err != nil {
			return nil, fmt.Errorf("elicitation through the gateway: %w", err)
		}
		res, _ := ans.(*mcp.ElicitResult)
		return res, nil
	}
	rctx, cancel := g.relayContext(ctx, o)
	defer cancel()
	res, err := o.ss.Elicit(rctx, p)
	if err != nil {
		return nil, fmt.Errorf("elicitation through the gateway: %w", err)
	}
	return res, nil
}

// relayElicitationComplete passes a server's notice that a URL-mode
// elicitation finished to the client that was asked.
func (g *Gateway) relayElicitationComplete(p *mcp.ElicitationCompleteParams) {
	if p == nil {
		return
	}
	g.fwd.mu.Lock()
	ss := g.fwd.elicitations[p.ElicitationID]
	delete(g.fwd.elicitations, p.ElicitationID)
	g.fwd.mu.Unlock()
	if ss == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ss.NotifyElicitationComplete(ctx, p)
}

// relayRoots answers a server's roots/list with a client's roots, or with
// none when no client declared roots.
//
//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
func (g *Gateway) relayRoots(ctx context.Context, server string) (*mcp.ListRootsResult, error) {
	o, ok, busy := g.originFor(server, canRoots)
	if !ok && !busy {
		o, ok = g.onlyClient(canRoots)
	}
	if !ok {
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}
	if o.held != nil {
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		ans, err := o.held.ask(ctx, "roots", &mcp.ListRootsParams{})
		if err != nil {
			return nil, fmt.Errorf("roots/list through the gateway: %w", err)
		}
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		res, _ := ans.(*mcp.ListRootsResult)
		if res == nil || res.Roots == nil {
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
		}
		return res, nil
	}
	rctx, cancel := g.relayContext(ctx, o)
	defer cancel()
	rctx, cancelRoots := context.WithTimeout(rctx, rootsTimeout)
	defer cancelRoots()
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	res, err := o.ss.ListRoots(rctx, nil)
	if err != nil {
		return nil, fmt.Errorf("roots/list through the gateway: %w", err)
	}
	if res.Roots == nil {
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		res.Roots = []*mcp.Root{}
	}
	return res, nil
}

// rootsTimeout bounds a roots/list passed on to a client. A client answers
// it from what it already knows; one that is closing its session never
// answers, and the pending request would hold up the session's close for
// the whole call timeout.
const rootsTimeout = 5 * time.Second

// rootsPlaceholder sits in every upstream client's own roots list, which is
// never served (roots/list is answered by relayRoots): re-adding it is how
// a client's roots/list_changed is passed on to the servers.
//
//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
var rootsPlaceholder = &mcp.Root{URI: "toolsearch://roots", Name: "the roots of the gateway's clients"}

// rootsChanged tells every connected server that the roots changed.
func (g *Gateway) rootsChanged() {
	for _, k := range g.keys() {
		u := g.ups()[k]
		if _, c := u.ReadySession(); c != nil {
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			c.AddRoots(rootsPlaceholder)
		}
	}
}

// upstreamClient makes the MCP client of one start of u: every
// request and notification a server may send is passed on.
func (g *Gateway) upstreamClient(u *upstream.Server) *mcp.Client {
	key := u.Key()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsearch", Version: g.version}, &mcp.ClientOptions{
		// Roots are answered from the clients (relayRoots); sampling and
		// elicitation are inferred from their handlers.
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		// A 2026-07-28 server's input_required results come back to the
		// gateway as they are, for the client to answer (mrtr.go).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// On 2026-07-28 the SDK opens subscriptions/listen for the lists
		// these handlers are set for; on older versions the server sends
		// the notifications on its own. Each is passed on to the clients
		// (listchanged.go).
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.ListChanged(upstream.ListTools)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			u.ListChanged(upstream.ListResources, upstream.ListTemplates)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			u.ListChanged(upstream.ListPrompts)
		},
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			g.forwardLog(key, req.Params)
			u.Tap().LogHandled()
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params == nil {
				return
			}
			g.forwardProgress(req.Params)
			u.Tap().ProgressHandled(req.Params.ProgressToken)
		},
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		CreateMessageWithToolsHandler: func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return g.relaySampling(ctx, key, req.Params)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return g.relayElicit(ctx, key, req.Params)
		},
		ElicitationCompleteHandler: func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			g.relayElicitationComplete(req.Params)
		},
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			g.resourceUpdated(key, req.Params)
		},
	})
	addSkillMethods(client) // skills.go
	// roots/list is answered by the clients; elicitation/create goes to
	// them as it came, without the SDK client's own check of its schema,
	// which refuses forms the specification allows (titled multi-select
	// enums): the client that shows the form is the judge.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "notifications/subscriptions/acknowledged":
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
					g.subscriptionsAcked(key, p.Notifications.ResourceSubscriptions)
				}
			case "roots/list":
				return g.relayRoots(ctx, key)
			case "elicitation/create":
				if er, ok := req.(*mcp.ElicitRequest); ok && er.Params != nil {
					return g.relayElicit(ctx, key, er.Params)
				}
			}
			return next(ctx, method, req)
		}
	})
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	client.AddRoots(rootsPlaceholder)
	return client
}

// subscribe subscribes a client session to a resource: the first
// subscriber of an upstream resource subscribes the gateway to it.
func (g *Gateway) subscribe(ctx context.Context, s *session, uri string) error {
	server, orig, err := g.cur.Load().names.routeURI(uri)
	if err == nil {
		err = g.resourceAllowed(server, orig)
	}
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	f := g.fwd
	f.subOp.Lock()
	defer f.subOp.Unlock()
	key := subKey{server, orig}
	f.mu.Lock()
	subscribed := len(f.subs[key]) > 0
	f.mu.Unlock()
	if !subscribed {
		if err := g.subscribeUpstream(ctx, key); err != nil {
			return err
		}
	}
	f.mu.Lock()
	if f.subs[key] == nil {
		f.subs[key] = map[*session]string{}
	}
	f.subs[key][s] = uri
	f.mu.Unlock()
	return nil
}

// subscribeTimeout bounds subscribing upstream: subscriptions are made one
// at a time, so a server that does not answer must not hold the others up
// for long.
const subscribeTimeout = 30 * time.Second

// subscribeUpstream subscribes the gateway to one upstream resource.
func (g *Gateway) subscribeUpstream(ctx context.Context, key subKey) error {
	ctx, stop := context.WithTimeout(ctx, subscribeTimeout)
	defer stop()
	u := g.ups()[key.server]
	if u == nil {
		return fmt.Errorf("server %q is not configured", key.server)
	}
	ls, err := u.Live(ctx)
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", key.uri, err)
	}
	if caps := ls.Session.InitializeResult().Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("server %s does not support resource subscriptions", key.server)}
	}
	// A 2026-07-28 server subscribes on a subscriptions/listen stream,
	// which the MCP library opens without waiting for it: the subscription
	// holds once the server acknowledges it (its first message on the
	// stream), and an update before that is never sent. The client is
	// answered once it holds, or after subscribeAckWait at most.
	var acked chan struct{}
	if upstream.ModernSession(ls.Session) {
		acked = make(chan struct{})
		f := g.fwd
		f.mu.Lock()
		f.acks[key] = acked
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.acks[key] == acked {
				delete(f.acks, key)
			}
			f.mu.Unlock()
		}()
	}
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	if err := ls.Session.Subscribe(cctx, &mcp.SubscribeParams{URI: key.uri}); err != nil {
		return fmt.Errorf("subscribing to %s on %s: %w", key.uri, key.server, err)
	}
	if acked != nil {
		select {
		case <-acked:
		case <-time.After(subscribeAckWait):
			g.log.Debug("a server did not acknowledge a resource subscription in time", "server", key.server, "uri", key.uri)
		case <-cctx.Done():
		}
	}
	return nil
}

// subscribeAckWait bounds how long a subscription to a 2026-07-28 server
// waits for the server's acknowledgement.
const subscribeAckWait = 5 * time.Second

// subscriptionsAcked marks the subscriptions to server's resources uris
// as acknowledged by the server (subscribeUpstream waits for it).
func (g *Gateway) subscriptionsAcked(server string, uris []string) {
	f := g.fwd
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, uri := range uris {
		key := subKey{server, uri}
		if ch := f.acks[key]; ch != nil {
			close(ch)
			delete(f.acks, key)
		}
	}
}

// unsubscribe ends a client session's subscription; the last one out
// unsubscribes the gateway upstream.
func (g *Gateway) unsubscribe(ctx context.Context, s *session, uri string) error {
	server, orig, err := g.cur.Load().names.routeURI(uri)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	f := g.fwd
	f.subOp.Lock()
	defer f.subOp.Unlock()
	key := subKey{server, orig}
	f.mu.Lock()
	delete(f.subs[key], s)
	last := f.subs[key] != nil && len(f.subs[key]) == 0
	if last {
		delete(f.subs, key)
	}
	f.mu.Unlock()
	if last {
		g.unsubscribeUpstream(ctx, key)
	}
	return nil
}

// unsubscribeUpstream ends the gateway's subscription to one upstream
// resource; a failure is only logged (the server may be gone).
func (g *Gateway) unsubscribeUpstream(ctx context.Context, key subKey) {
	u := g.ups()[key.server]
	if u == nil {
		return
	}
	cs, _ := u.ReadySession()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: key.uri}); err != nil {
		g.log.Debug("unsubscribing upstream failed", "server", key.server, "uri", key.uri, "err", err)
	}
}

// dropSubscriptions ends every subscription of a session that closed.
func (g *Gateway) dropSubscriptions(s *session) {
	f := g.fwd
	f.subOp.Lock()
	defer f.subOp.Unlock()
	var emptied []subKey
	f.mu.Lock()
	for key, m := range f.subs {
		if _, ok := m[s]; !ok {
			continue
		}
		delete(m, s)
		if len(m) == 0 {
			delete(f.subs, key)
			emptied = append(emptied, key)
		}
	}
	f.mu.Unlock()
	for _, key := range emptied {
		g.unsubscribeUpstream(context.Background(), key)
	}
}

// resubscribe renews the gateway's subscriptions to a server after it
// (re)started.
func (g *Gateway) resubscribe(ctx context.Context, server string, cs *mcp.ClientSession) {
	f := g.fwd
	f.mu.Lock()
	var uris []string
	for key := range f.subs {
		if key.server == server {
			uris = append(uris, key.uri)
		}
	}
	f.mu.Unlock()
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			g.log.Warn("could not renew a resource subscription", "server", server, "uri", uri, "err", err)
		}
	}
}

// resourceUpdated passes a server's notifications/resources/updated to the
// client sessions subscribed to that resource, under the URI each
// subscribed with.
func (g *Gateway) resourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	f := g.fwd
	f.mu.Lock()
	targets := map[*session]string{}
	for s, uri := range f.subs[subKey{server, p.URI}] {
		targets[s] = uri
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for s, uri := range targets {
		wg.Go(func() {
			up := &mcp.ResourceUpdatedNotificationParams{Meta: p.Meta, URI: uri}
			if s.resourceUpdated(ctx, up) { // a session the cluster keeps (sessionshare.go)
				return
			}
			_ = s.server.ResourceUpdated(ctx, up)
		})
	}
	wg.Wait()
}

// complete forwards a client's completion/complete to the server of the
// prompt or resource template it is about. A server that does not offer
// completions gets no request: the answer is an empty completion.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	ref := *p.Ref
	names := g.cur.Load().names
	var server string
	switch ref.Type {
	case "ref/prompt":
		tg, ok := names.ResolvePrompt(ref.Name)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		server, ref.Name = tg.server, tg.name
	case "ref/resource":
		if k, ok := names.templateOwner(ref.URI); ok {
			server = k
			break
		}
		k, orig, err := names.routeURI(ref.URI)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		server, ref.URI = k, orig
		if err := g.resourceAllowed(server, orig); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", ref.Type)}
	}
	u := g.ups()[server]
	if u == nil {
		return nil, fmt.Errorf("server %q is not configured", server)
	}
	ls, err := u.Live(ctx)
	if err != nil {
		return nil, fmt.Errorf("completion: %w", err)
	}
	if caps := ls.Session.InitializeResult().Capabilities; caps == nil || caps.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	done := g.track(server, ctx, req.Session)
	defer done()
	cctx, cancel := g.upstreamContext(ctx, ls)
	defer cancel()
	out := *p
	out.Ref = &ref
	res, err := ls.Session.Complete(cctx, &out)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return nil, rpcErr
		}
		return nil, fmt.Errorf("completion from %s: %w", server, err)
	}
	return res, nil
}

// Why a client's requests were ended without its notifications/cancelled.
var (
	// errClientGone: the client session ended (its connection closed,
	// stdin at EOF).
	errClientGone = errors.New("the client disconnected")
	// errSessionDeleted: the client deleted its session (HTTP DELETE).
	errSessionDeleted = errors.New("the client ended its session")
	// errSessionExpired: the gateway closed the session (idle, or ended
	// on another replica).
	errSessionExpired = errors.New("the client session was closed")
)

// hangUpMiddleware ends a request of the client when the client hangs
// up, so that what it waits on (an upstream call, which is then told
// notifications/cancelled) does not run on for nobody until the call
// timeout. It is needed because a session's close waits for its
// requests in flight: without it, a client deleting its session would
// wait for them, and an upstream call would outlive the client. A
// shared server's requests each have their own HTTP stream, whose end
// already ends them.
func (s *session) hangUpMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.shared || clientera.IsNotification(method) {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(s.life, func() { cancel(context.Cause(s.life)) })
		defer stop()
		return next(ctx, method, req)
	}
}

// closeClient ends the requests of the session's client, for why, and
// then its session: the session's close waits for its requests in
// flight.
func (s *session) closeClient(ss *mcp.ServerSession, why error) error {
	s.hangUp(why)
	return ss.Close()
}

func (g *Gateway) forwardProgress(p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	g.progMu.Lock()
	t, ok := g.progress[fmt.Sprint(p.ProgressToken)]
	g.progMu.Unlock()
	if !ok || t.ss == nil {
		return
	}
	base := t.ctx
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithTimeout(base, 5*time.Second)
	defer cancel()
	_ = t.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{Meta: p.Meta, ProgressToken: t.token, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// forwardLog passes an upstream's log message to every client session
// (each gets what its logging/setLevel asks for). The logger is prefixed
// with the server's key, unless the server keeps bare names. The client
// whose request the server is serving gets the message in that request's
// stream, as it would from the server itself.
//
//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func (g *Gateway) forwardLog(server string, p *mcp.LoggingMessageParams) {
	if p == nil {
		return
	}
	logger := p.Logger
	if !g.cur.Load().names.keepsBare(server) {
		logger = server
		if p.Logger != "" {
			logger = server + "/" + p.Logger
		}
	}
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	out := &mcp.LoggingMessageParams{Meta: p.Meta, Level: p.Level, Logger: logger, Data: p.Data}
	related, _, _ := g.originFor(server, func(*mcp.ClientCapabilities) bool { return true })
	// One slow client must not hold up the others, nor the upstream
	// connection whose handler this is: all are sent at once, within one
	// bound.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range g.sessionList() {
		ss := s.serverSession()
		if ss == nil {
			continue
		}
		sctx := ctx
		if ss == related.ss && related.ctx != nil && related.ctx.Err() == nil {
			var c context.CancelFunc
			sctx, c = context.WithTimeout(related.ctx, 5*time.Second)
			defer c()
		}
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		wg.Go(func() { _ = ss.Log(sctx, out) })
	}
	wg.Wait()
}

// setUpstreamLogLevel forwards a client's logging/setLevel to every ready
// upstream. A 2026-07-28 server has no logging/setLevel: the level goes
// with each call instead (upstreamMeta).
//
//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func (g *Gateway) setUpstreamLogLevel(level mcp.LoggingLevel) {
	g.fwd.setLogLevel(level)
	for _, k := range g.keys() {
		u := g.ups()[k]
		cs, _ := u.ReadySession()
		if cs == nil {
			continue
		}
		if !sendsLogs(cs) || upstream.ModernSession(cs) {
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
		}()
	}
}
