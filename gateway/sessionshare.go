package gateway

// MCP 2025-11-25 sessions that outlive their replica (docs/scale.md).
//
// With a cluster that keeps session states (SessionStore), the gateway
// serves the sessions of its HTTP endpoints itself rather than through the
// MCP library's handler, which keeps its sessions in a private table that
// no other replica could add to. Each session is still the library's
// ServerSession, on the library's own StreamableServerTransport; what the
// gateway adds is:
//
//   - its state, saved after notifications/initialized and after every
//     request that changed it (savedSession: what the library's
//     ServerSessionState holds, as the gateway's middleware saw it, plus
//     the exposure, the client's facts, the dynamic discovered set in
//     order and the resource subscriptions), with the idle timeout as TTL;
//   - adoption: a request with a session id this replica does not hold is
//     looked up in the cluster; if the state is there (and opens for that
//     id, see package cluster), the session is rebuilt from it, connected
//     with that state (Server.Connect with ServerSessionOptions.State), and
//     served here from then on;
//   - the event stream: a message for the client's GET stream (a
//     list_changed, a resource update, a log message, a request of the
//     gateway's own) that this replica has but whose stream another
//     replica holds is published to that replica (streamTransport), which
//     sends it on; the client's answers to requests find the replica that
//     asked (sessionrequests.go);
//   - the events of every stream, kept in the cluster (sessionevents.go):
//     a client whose stream broke resumes it with Last-Event-ID on any
//     replica, and misses nothing sent meanwhile.
//
// The session id is a bearer credential: the cluster never sees it (its
// keys and its sealing come from hashes of it), and an id the cluster does
// not know, or whose saved state does not open, is answered 404 as the
// library would. Without a SessionStore none of this runs, and the
// library's handler serves the sessions as in a single gateway.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// sessionStore is the cluster's SessionStore, nil without one.
func (g *Gateway) sessionStore() SessionStore {
	if g.cluster == nil {
		return nil
	}
	st, _ := g.cluster.(SessionStore)
	return st
}

// savedSessionVersion is the version of savedSession's layout.
const savedSessionVersion = 1

// savedSession is what another replica needs to serve a session: nothing
// secret (the session id is not in it, and nor is any credential).
type savedSession struct {
	Version int `json:"v"`
	// State is the library's session state as the middleware saw it.
	State mcp.ServerSessionState `json:"state"`
	// Endpoint is the exposure of the endpoint the session was opened
	// at; the session continues only at an endpoint of the same.
	Endpoint string `json:"endpoint"`
	// Mode and Reason are the session's exposure and why.
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// Client is what the client said of itself (what auto decided by).
	Client savedClient `json:"client"`
	// Roots are the client's MCP roots, as it listed them.
	Roots []string `json:"roots,omitempty"`
	// Loaded is the dynamic discovered set, oldest first.
	Loaded []string `json:"loaded,omitempty"`
	// Subscriptions are the resource URIs subscribed, as the client
	// named them.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// StreamReplica names the replica holding the event stream, if any.
	StreamReplica string `json:"streamReplica,omitempty"`
}

type savedClient struct {
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Roots    bool   `json:"roots,omitempty"`
}

// sessionShare is a shared session's part of a session: its id, what the
// middleware saw, and its transport.
type sessionShare struct {
	id       string
	endpoint string
	tr       *streamTransport

	mu         sync.Mutex
	initParams *mcp.InitializeParams
	negotiated string
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	logLevel mcp.LoggingLevel
	subs     []string // subscribed URIs, in order
	streamAt string   // the replica holding the event stream

	ended atomic.Bool // its client closed it: nothing more is saved

	saveMu sync.Mutex
	last   []byte    // the state last saved
	lastAt time.Time // when it was saved or touched
}

// inRequestKey marks the context of a request's handlers: what is written
// with it goes to that request's response stream, never to the event
// stream (streamConn).
type inRequestKey struct{}

// shareMiddleware records what the library's session state is made of
// (the negotiated version, the log level) and the subscriptions, and saves
// the session after each request that changed it.
func (s *session) shareMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		sh := s.share
		if sh == nil {
			return next(ctx, method, req)
		}
		res, err := next(context.WithValue(ctx, inRequestKey{}, true), method, req)
		if err != nil {
			return res, err
		}
		sh.mu.Lock()
		switch p := req.GetParams().(type) {
		case *mcp.InitializeParams:
			if ir, ok := res.(*mcp.InitializeResult); ok {
				sh.initParams, sh.negotiated = p, ir.ProtocolVersion
			}
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		case *mcp.SetLoggingLevelParams:
			sh.logLevel = p.Level
		case *mcp.SubscribeParams:
			if method == "resources/subscribe" && !slices.Contains(sh.subs, p.URI) {
				sh.subs = append(sh.subs, p.URI)
			}
		case *mcp.UnsubscribeParams:
			sh.subs = slices.DeleteFunc(sh.subs, func(u string) bool { return u == p.URI })
		}
		sh.mu.Unlock()
		// Saved from initialize on: the client may open its event
		// stream on another replica before it sends initialized.
		s.saveShared()
		return res, err
	}
}

// sharedState is the session's state to save, false before initialize
// has been answered.
func (s *session) sharedState() ([]byte, bool) {
	sh := s.share
	if sh == nil {
		return nil, false
	}
	sh.mu.Lock()
	saved := savedSession{Version: savedSessionVersion, Endpoint: sh.endpoint,
		State: mcp.ServerSessionState{InitializeParams: sh.initParams,
			NegotiatedProtocolVersion: sh.negotiated, LogLevel: sh.logLevel},
		Subscriptions: slices.Clone(sh.subs), StreamReplica: sh.streamAt}
	sh.mu.Unlock()
	if saved.State.InitializeParams == nil {
		return nil, false
	}
	if s.serverSession() != nil {
		saved.State.InitializedParams = &mcp.InitializedParams{}
	}
	s.mu.Lock()
	saved.Mode, saved.Reason = s.mode, s.reason
	saved.Loaded = slices.Clone(s.loaded)
	saved.Roots = slices.Clone(s.roots)
	if c := s.facts; c != nil {
		saved.Client = savedClient{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Roots: c.Roots}
	}
	s.mu.Unlock()
	b, err := json.Marshal(saved)
	return b, err == nil
}

// saveShared writes the session's state to the cluster when it changed,
// and renews its TTL now and then when it did not. It returns once the
// cluster has it (or failed to take it), so that a change a request made
// is shared before the request is answered.
func (s *session) saveShared() {
	g, sh := s.g, s.share
	st := g.sessionStore()
	if st == nil || sh == nil {
		return
	}
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	data, ok := s.sharedState()
	if !ok || sh.ended.Load() {
		return
	}
	ttl := g.cfg.Gateway.Serve.SessionIdleTimeout
	if bytes.Equal(data, sh.last) {
		if time.Since(sh.lastAt) >= ttl/4 {
			if err := st.TouchSession(context.Background(), sh.id, ttl); err == nil {
				sh.lastAt = time.Now()
			}
		}
		return
	}
	if err := st.SaveSession(context.Background(), sh.id, data, ttl); err != nil {
		g.log.Debug("could not save an MCP session's state in the cluster", "err", err)
		return
	}
	sh.last, sh.lastAt = data, time.Now()
}

// streamTransport is the library's transport of one session, its
// connection wrapped (streamConn) so that a message for the event stream
// goes to the replica holding it.
type streamTransport struct {
	*mcp.StreamableServerTransport
	g       *Gateway
	id      string
	conn    mcp.Connection // the library's connection, once connected
	wrapped *streamConn    // conn as the session writes to it
	gets    atomic.Int32   // event streams open on this replica
}

// newStreamTransport makes the transport of shared session id; events is
// the cluster's event store (sharedEvents).
func newStreamTransport(g *Gateway, id string, events mcp.EventStore) *streamTransport {
	tr := &mcp.StreamableServerTransport{SessionID: id, EventStore: events}
	return &streamTransport{StreamableServerTransport: tr, g: g, id: id}
}

// Connect connects the library's transport and wraps its connection.
func (t *streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.StreamableServerTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = c
	t.wrapped = newStreamConn(c, t)
	return t.wrapped, nil
}

// notify sends a notification for the event stream: here, or to the
// replica that holds it.
func (t *streamTransport) notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if t.wrapped == nil {
		return fmt.Errorf("the session is not connected")
	}
	return t.wrapped.Write(ctx, &jsonrpc.Request{Method: method, Params: b})
}

// resourceUpdated tells a shared session's client that a resource it
// subscribed to changed, and reports whether it was a shared session. The
// library's own subscription table does not know the subscriptions of a
// session taken over (its session state has none), so the gateway's table
// (forward.go) decides, and the notification is written here.
func (s *session) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) bool {
	if s.share == nil {
		return false
	}
	if err := s.share.tr.notify(ctx, "notifications/resources/updated", p); err != nil {
		s.g.log.Debug("could not pass on a resource update", "err", err)
	}
	return true
}

// sentElsewhere publishes msg to the replica holding the event stream,
// when it is for the event stream and this replica holds none; it reports
// whether a replica received it.
func (t *streamTransport) sentElsewhere(ctx context.Context, msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || ctx.Value(inRequestKey{}) != nil || t.gets.Load() > 0 {
		return false
	}
	st := t.g.sessionStore()
	if st == nil {
		return false
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return false
	}
	n, err := st.PublishStream(context.Background(), t.id, data)
	if err != nil {
		t.g.log.Debug("could not pass a message to the replica holding the event stream", "method", req.Method, "err", err)
		return false
	}
	return n > 0
}

// serveStream serves a GET (the event stream) of a shared session: while
// it is open, this replica receives what other replicas publish for the
// stream and sends it on.
func (t *streamTransport) serveStream(w http.ResponseWriter, r *http.Request, s *session) {
	t.gets.Add(1)
	defer t.gets.Add(-1)
	if st := t.g.sessionStore(); st != nil {
		if msgs, stop, err := st.SubscribeStream(r.Context(), t.id); err == nil {
			defer stop()
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			go t.relay(ctx, msgs)
		}
	}
	s.streamAt(t.g.replicaName())
	defer s.streamAt("")
	t.StreamableServerTransport.ServeHTTP(w, r)
}

// relay sends what other replicas published for this replica's event
// stream: notifications, and requests (their ids are the requesting
// replica's, sessionrequests.go, so the client's answer finds its way
// back there). A response is never sent on: the client made no request
// of the gateway on the event stream.
func (t *streamTransport) relay(ctx context.Context, msgs <-chan []byte) {
	for {
		select {
		case <-ctx.Done():
			return
		case data := <-msgs:
			msg, err := jsonrpc.DecodeMessage(data)
			if _, ok := msg.(*jsonrpc.Request); err != nil || !ok {
				t.g.log.Debug("dropping a stream message that is not a request or notification")
				continue
			}
			_ = t.conn.Write(context.Background(), msg)
		}
	}
}

// streamAt records which replica holds the session's event stream ("" when
// it closed here). An opened stream is saved at once; a closed one with
// the next change, since a client that closes its session closes its
// stream first, and the saved state must not outlive the session.
func (s *session) streamAt(replica string) {
	sh := s.share
	sh.mu.Lock()
	if replica != "" || sh.streamAt == s.g.replicaName() {
		sh.streamAt = replica
	}
	sh.mu.Unlock()
	if replica != "" {
		s.saveShared()
	}
}

func (g *Gateway) replicaName() string {
	if g.cluster == nil {
		return ""
	}
	return g.cluster.Replica()
}

// serveShared serves a request of the 2025-11-25 era when the cluster keeps
// sessions; it reports false, having done nothing, when it does not (the
// library's handler serves the request then).
func (g *Gateway) serveShared(w http.ResponseWriter, r *http.Request, mode string, hs *httpSessions, events mcp.EventStore) bool {
	if g.sessionStore() == nil {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(downstreamVersions, v) {
		http.Error(w, "Bad Request: Unsupported protocol version (supported versions: "+strings.Join(downstreamVersions, ",")+")", http.StatusBadRequest)
		return true
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		switch r.Method {
		case http.MethodPost:
			if checkPost(w, r) {
				g.openShared(w, r, mode, hs, events)
			}
		case http.MethodGet, http.MethodDelete:
			http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return true
	}
	if r.Method == http.MethodPost && !checkPost(w, r) {
		return true
	}
	if r.Method == http.MethodGet && !acceptsStream(r) {
		http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
		return true
	}
	hsn := hs.lookup(id)
	if hsn == nil && g.Draining() {
		// A replica that stops takes no session over: another will.
		w.Header().Set("Retry-After", "5")
		http.Error(w, shuttingDown, http.StatusServiceUnavailable)
		return true
	}
	if hsn == nil {
		var refused bool
		if hsn, refused = g.adopt(r.Context(), id, mode, hs, events); refused {
			hs.refuse(w)
			return true
		}
	}
	if hsn == nil || hsn.s.share == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return true
	}
	switch r.Method {
	case http.MethodGet:
		hsn.s.share.tr.serveStream(w, r, hsn.s)
	case http.MethodPost:
		defer hs.busy(id)()
		hsn.s.refreshShared(r.Context())
		versioned(w, r, hsn.s.share.tr.ServeHTTP) // sdkversion.go
	case http.MethodDelete:
		defer hs.busy(id)()
		hsn.s.share.ended.Store(true)
		g.forgetShared(id)
		_ = hsn.s.closeClient(hsn.ss, errSessionDeleted) // forward.go
		w.WriteHeader(http.StatusNoContent)
	}
	return true
}

// checkPost answers a POST whose headers the streamable transport refuses,
// as the library's handler does; it reports whether the request may pass.
func checkPost(w http.ResponseWriter, r *http.Request) bool {
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); strings.TrimSpace(strings.ToLower(ct)) != "application/json" {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return false
	}
	if !acceptsJSON(r) || !acceptsStream(r) {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return false
	}
	return true
}

func acceptsJSON(r *http.Request) bool   { return accepts(r, "application/json", "application/*") }
func acceptsStream(r *http.Request) bool { return accepts(r, "text/event-stream", "text/*") }

func accepts(r *http.Request, types ...string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			base = strings.ToLower(strings.TrimSpace(base))
			if base == "*/*" || slices.Contains(types, base) {
				return true
			}
		}
	}
	return false
}

// openShared serves the request that opens a session (initialize).
func (g *Gateway) openShared(w http.ResponseWriter, r *http.Request, mode string, hs *httpSessions, events mcp.EventStore) {
	if g.Draining() {
		w.Header().Set("Retry-After", "5")
		http.Error(w, shuttingDown, http.StatusServiceUnavailable)
		return
	}
	id := rand.Text()
	lease, ok := hs.reserveFor(r.Context(), id)
	if !ok {
		hs.refuse(w)
		return
	}
	s := g.newSession(mode)
	tr := newStreamTransport(g, id, events)
	s.share = &sessionShare{id: id, endpoint: mode, tr: tr}
	ss, err := s.server.Connect(r.Context(), tr, nil)
	if err != nil {
		lease()
		hs.release()
		g.log.Warn("could not start an MCP session", "err", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	hs.track(s, ss, lease)
	versioned(w, r, tr.ServeHTTP)
	if ss.InitializeParams() == nil {
		_ = ss.Close() // not an initialize, or a failed one
	}
}

// adopt takes over a session another replica held, from its saved state.
// It returns nil when there is none to take over (or its state is not
// valid for the id), and refused when the session cap is reached.
func (g *Gateway) adopt(ctx context.Context, id, mode string, hs *httpSessions, events mcp.EventStore) (hsn *httpSession, refused bool) {
	unlock := hs.lockID(id)
	defer unlock()
	if hsn := hs.lookup(id); hsn != nil {
		return hsn, false // taken over meanwhile by a concurrent request
	}
	st := g.sessionStore()
	data, err := st.LoadSession(ctx, id)
	if err != nil || data == nil {
		if err != nil {
			g.log.Info("not taking over an MCP session", "err", err)
		}
		return nil, false
	}
	saved, err := parseSavedSession(data, mode)
	if err != nil {
		g.log.Warn("not taking over an MCP session whose saved state is not usable", "err", err)
		return nil, false
	}
	lease, ok := hs.reserveFor(ctx, id)
	if !ok {
		return nil, true
	}
	s := g.newSession(mode)
	tr := newStreamTransport(g, id, events)
	s.share = &sessionShare{id: id, endpoint: mode, tr: tr, initParams: saved.State.InitializeParams,
		negotiated: saved.State.NegotiatedProtocolVersion, logLevel: saved.State.LogLevel, last: data, lastAt: time.Now()}
	s.restore(saved)
	state := saved.State
	// A session whose client had not yet sent initialized when it was
	// saved (it opened its event stream here at once) is served as
	// initialized: the notification goes to the replica that answered
	// initialize, or comes here and is a harmless duplicate.
	state.InitializedParams = &mcp.InitializedParams{}
	ss, err := s.server.Connect(context.Background(), tr, &mcp.ServerSessionOptions{State: &state})
	if err != nil {
		lease()
		hs.release()
		g.log.Warn("could not take over an MCP session", "err", err)
		return nil, false
	}
	s.mu.Lock()
	s.ss = ss
	s.mu.Unlock()
	g.register(s)
	go func() {
		_ = ss.Wait()
		g.unregister(s)
		g.dropSubscriptions(s)
	}()
	hsn = hs.track(s, ss, lease)
	for _, uri := range saved.Subscriptions {
		if err := g.subscribe(ctx, s, uri); err != nil {
			g.log.Warn("a session taken over could not renew a resource subscription", "uri", uri, "err", err)
			continue
		}
		s.share.mu.Lock()
		s.share.subs = append(s.share.subs, uri)
		s.share.mu.Unlock()
	}
	g.log.Info("took over an MCP session another replica held", "client", saved.Client.Name, "exposure", s.mode,
		"tools_found", len(saved.Loaded), "subscriptions", len(saved.Subscriptions), "stream_was_at", saved.StreamReplica)
	s.saveShared()
	return hsn, false
}

// parseSavedSession reads a saved state and checks that it can be served
// at an endpoint of exposure mode.
func parseSavedSession(data []byte, mode string) (*savedSession, error) {
	var saved savedSession
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("reading the saved session: %w", err)
	}
	ip := saved.State.InitializeParams
	switch {
	case saved.Version != savedSessionVersion:
		return nil, fmt.Errorf("saved session layout %d, want %d", saved.Version, savedSessionVersion)
	case ip == nil:
		return nil, fmt.Errorf("the saved session has no initialize parameters")
	case !slices.Contains(downstreamVersions, saved.State.NegotiatedProtocolVersion) || clientera.Modern(saved.State.NegotiatedProtocolVersion):
		return nil, fmt.Errorf("the saved session speaks MCP %q, which has no sessions here", saved.State.NegotiatedProtocolVersion)
	case saved.Endpoint != mode:
		return nil, fmt.Errorf("the session was opened at the %s endpoint, not %s", saved.Endpoint, mode)
	case !slices.Contains([]string{config.ExposureFull, config.ExposureSearch, config.ExposureDynamic}, saved.Mode):
		return nil, fmt.Errorf("the saved session has exposure %q", saved.Mode)
	case len(saved.Loaded) > maxDynamicTools:
		return nil, fmt.Errorf("the saved session has %d tools found, more than %d", len(saved.Loaded), maxDynamicTools)
	}
	return &saved, nil
}

// restore gives a new session the exposure, client facts and discovered
// set of a saved one, before it is connected: its tool list is then the
// one the client already has.
func (s *session) restore(saved *savedSession) {
	g := s.g
	s.mu.Lock()
	c := saved.Client
	s.facts = &clientera.Facts{Name: c.Name, Version: c.Version, Protocol: c.Protocol, Roots: c.Roots}
	s.era, s.client = saved.State.InitializeParams.ProtocolVersion, clientera.ClientName(saved.State.InitializeParams.ClientInfo)
	s.roots = slices.Clone(saved.Roots)
	s.decideBuiltins()
	if s.auto {
		// The exposure auto gave the client stays, whatever the
		// threshold says now (a session never switches back to full).
		switch {
		case saved.Mode == s.mode:
		case saved.Mode == config.ExposureFull:
			s.full = g.fullToolsFor(g.cur.Load(), s.builtinOff)
		case s.mode == config.ExposureFull:
			s.leaveFull()
		}
		s.mode, s.reason = saved.Mode, saved.Reason
	}
	s.loaded = slices.Clone(saved.Loaded)
	s.listed = true
	s.mu.Unlock()
	s.sync()
}

// resaveShared writes the state of every session this replica holds to
// the cluster again, as a restarted Redis has lost them (rejoined); each
// replica holding a copy of a session writes it, the same state.
func (g *Gateway) resaveShared() {
	if g.sessionStore() == nil {
		return
	}
	t := g.httpSessionTable()
	t.mu.Lock()
	var ss []*session
	for _, hs := range t.byID {
		if hs.s.share != nil {
			ss = append(ss, hs.s)
		}
	}
	t.mu.Unlock()
	for _, s := range ss {
		s.share.saveMu.Lock()
		s.share.last = nil // not what the cluster has any more
		s.share.saveMu.Unlock()
		s.saveShared()
	}
	if len(ss) > 0 {
		g.log.Info("saved this replica's MCP sessions in the cluster again", "sessions", len(ss))
	}
}

// forgetShared removes a session its client closed (DELETE) from the
// cluster, and so from every replica holding it. A session that is idle
// here may be busy on another replica, and a replica that stops leaves
// its sessions for another to take over: both leave the saved state to
// its TTL.
func (g *Gateway) forgetShared(id string) {
	if st := g.sessionStore(); st != nil {
		if err := st.DeleteSession(context.Background(), id); err != nil {
			g.log.Debug("could not remove an ended MCP session from the cluster", "err", err)
		}
	}
}

// endedElsewhere closes this replica's copies of a session another
// replica ended (its client closed it there).
func (t *httpSessions) endedElsewhere(ended func(id string) bool) {
	t.mu.Lock()
	var gone []*httpSession
	for id, hs := range t.byID {
		if hs.s.share != nil && ended(id) {
			gone = append(gone, hs)
		}
	}
	t.mu.Unlock()
	for _, hs := range gone {
		hs.s.share.ended.Store(true)
		_ = hs.s.closeClient(hs.ss, errSessionExpired) // forward.go
	}
}

// refreshShared brings a dynamic session's discovered set up to date with
// the saved state, which another replica serving the same session (a load
// balancer that is not sticky) may have changed since this replica last
// saved or read it. Other sessions have nothing another replica changes.
func (s *session) refreshShared(ctx context.Context) {
	sh, st := s.share, s.g.sessionStore()
	s.mu.Lock()
	dynamic := s.mode == config.ExposureDynamic
	s.mu.Unlock()
	if sh == nil || st == nil || !dynamic || s.serverSession() == nil {
		return
	}
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	data, err := st.LoadSession(ctx, sh.id)
	if err != nil || data == nil || bytes.Equal(data, sh.last) {
		return
	}
	saved, err := parseSavedSession(data, sh.endpoint)
	if err != nil {
		return
	}
	s.mu.Lock()
	changed := !slices.Equal(s.loaded, saved.Loaded)
	s.loaded = slices.Clone(saved.Loaded)
	s.mu.Unlock()
	sh.last, sh.lastAt = data, time.Now()
	if changed {
		s.sync()
	}
}
