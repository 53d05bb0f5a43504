package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/enrichment"
)

// maxDynamicTools caps how many found tools one dynamic session carries;
// the oldest are dropped first.
const maxDynamicTools = 64

// downstreamVersions are the protocol versions served to clients, newest
// first: 2026-07-28 (no sessions: each request carries its version, era.go)
// and the versions of the initialize handshake, whose sessions may have
// their own tool list (dynamic exposure).
var downstreamVersions = []string{clientera.PerRequestVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// searchInputSchema is search_tools' input: query, queries or both. How to
// word a query is said in the description (searchDescription), once.
var searchInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool does; or select:name1,name2, a tool or server name, a regex. +word must match."},` +
	`"queries":{"type":"array","items":{"type":"string"},"maxItems":8,"description":"Several queries, one per need, answered as one list."},` +
	`"max_results":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to return (default 5)."}}}`)

var callInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"The tool's name as search_tools returned it."},` +
	`"arguments":{"type":"object","description":"The tool's arguments, matching its input schema."}},"required":["name"]}`)

var alwaysLoadMeta = mcp.Meta{catalog.MetaAlwaysLoad: true}

// session is one client connection with its own tool list, or (shared)
// the server of every 2026-07-28 client of one exposure over HTTP.
type session struct {
	g      *Gateway
	server *mcp.Server
	seq    int64 // order of creation
	// auto: the client asked for auto exposure, which is re-decided when
	// the catalog changes (see sync).
	auto bool
	// shared: the server of 2026-07-28 clients over HTTP (era.go); it has
	// no client session of its own and is never dynamic.
	shared bool
	// byClient: a shared server whose exposure auto gave by the clients'
	// names (clientmode.go); set before the server serves.
	byClient bool
	// ownKind: a shared server of the 2026-07-28 clients of one kind
	// with tools of their own, whose built-ins it decides for
	// (builtinclient.go).
	ownKind string

	subMu   sync.Mutex
	subRefs map[string]int // shared: subscription streams per URI

	mu     sync.Mutex
	mode   string // full, search or dynamic; guarded by mu
	reason string
	era    string // the protocol version the client speaks; "" until known
	client string // how the client names itself (shown, never acted on)
	ss     *mcp.ServerSession
	tools  map[string][]byte // exposed name → what was registered
	loaded []string          // dynamic: IDs of found tools, oldest first
	// foundSkills are, under dynamic exposure, the gateway URIs of the
	// skills search found for the session, oldest first: its skills/list
	// gives them after those of always-load servers (skills.go).
	foundSkills []string
	lastSearch  *pendingSearch // the search a call may follow (learning.go)
	searchDesc  string
	hasCall     bool
	resources   map[string]string // exposed URI → signature
	templates   map[string]string
	prompts     map[string]string
	loadedTok   int
	// full is the view's list a session in full mode serves (fulllist.go).
	full *fullList
	// facts is what the client said in initialize, which auto decides
	// by (clientmode.go); listed tells whether it has had a tools/list
	// answer (fulllist.go).
	facts  *clientera.Facts
	listed bool
	// bridge: a session in full mode whose first list was answered
	// while servers were still starting also lists search_tools and
	// call_tool (fulllist.go).
	bridge bool
	// relist counts the client's tools/list requests (relist.go).
	relist relistState
	// builtinOff names the built-in tools this session leaves out, roots
	// are the client's MCP roots, and rootsDone is closed once the first
	// roots/list has been answered (nil when none is asked for)
	// (builtinclient.go).
	builtinOff map[string]bool
	roots      []string
	rootsDone  chan struct{}
	// share is set for a session kept in the cluster, before it serves
	// (sessionshare.go).
	share *sessionShare
	// life ends when the client hangs up (its session deleted or expired,
	// its connection gone): the requests it has in flight end with it
	// (forward.go).
	life   context.Context
	hangUp context.CancelCauseFunc
}

// newSession makes a server for one client connection in the given mode.
// Auto is resolved now, and again whenever the catalog changes: see sync.
func (g *Gateway) newSession(mode string) *session { return g.makeSession(mode, false) }

// makeSession makes a server for one client connection, or (shared) the
// server of 2026-07-28 clients over HTTP, whose exposure is never dynamic.
func (g *Gateway) makeSession(mode string, shared bool) *session {
	m, reason := g.resolveMode(mode)
	if shared && m == config.ExposureDynamic {
		g.logDynamic(mode, reason)
		m, reason = config.ExposureSearch, dynamicWhy
	}
	s := &session{g: g, mode: m, reason: reason, auto: mode == config.ExposureAuto || mode == "", seq: g.sessSeq.Add(1),
		shared:    shared,
		tools:     map[string][]byte{},
		resources: map[string]string{}, templates: map[string]string{}, prompts: map[string]string{}}
	s.life, s.hangUp = context.WithCancelCause(context.Background())
	subscribe := func(ctx context.Context, req *mcp.SubscribeRequest) error {
		return g.subscribe(ctx, s, req.Params.URI)
	}
	unsubscribe := func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		return g.unsubscribe(ctx, s, req.Params.URI)
	}
	if shared {
		// Many streams share the server's subscriptions.
		subscribe = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return s.subscribeShared(ctx, req.Params.URI)
		}
		unsubscribe = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return s.unsubscribeShared(ctx, req.Params.URI)
		}
	}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "toolsearch", Title: "toolsearch gateway", Version: g.version}, &mcp.ServerOptions{
		Instructions: g.instructions(m, s.auto),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
			// The servers' extensions (MCP Apps...), as they declared them.
			Extensions: g.upstreamExtensions(),
		},
		// What passes besides listings and calls (forward.go).
		CompletionHandler:  g.complete,
		SubscribeHandler:   subscribe,
		UnsubscribeHandler: unsubscribe,
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) {
			g.rootsChanged()
			s.mu.Lock()
			ask := s.wantsRoots(s.facts)
			s.mu.Unlock()
			if ask && req != nil && req.Session != nil {
				go s.askRoots(req.Session, nil) // builtinclient.go
			}
		},
		SupportedProtocolVersions: downstreamVersions,
		// ttlMs and cacheScope of lists and resources/read (era_cache.go).
		SetCacheable: s.setCacheable,
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			s.mu.Lock()
			s.ss = req.Session
			if ip := req.Session.InitializeParams(); ip != nil {
				s.era, s.client = ip.ProtocolVersion, clientera.ClientName(ip.ClientInfo)
			}
			era, client, mode, rootsDone := s.era, s.client, s.mode, s.rootsDone
			s.mu.Unlock()
			g.log.Info("a client speaks MCP "+era, "era", clientera.Era(era), "client", client, "exposure", mode, "transport", "session")
			g.register(s)
			s.sync()
			if rootsDone != nil {
				go s.askRoots(req.Session, rootsDone) // builtinclient.go
			}
			go func() {
				_ = req.Session.Wait()
				s.hangUp(errClientGone) // forward.go
				g.unregister(s)
				g.dropSubscriptions(s)
				s.feedClosed() // feed.go
			}()
		},
	})
	s.serveSkills()                                    // skills.go
	s.server.AddReceivingMiddleware(s.fullMiddleware)  // fulllist.go; inside the drain's
	s.server.AddReceivingMiddleware(g.drainMiddleware) // drain.go
	// The exposure auto gives the client, decided at initialize (clientmode.go).
	s.server.AddReceivingMiddleware(s.clientMiddleware)
	s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "logging/setLevel" && err == nil {
				//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
					g.setUpstreamLogLevel(p.Level)
				}
			}
			return res, err
		}
	})
	s.server.AddReceivingMiddleware(s.shareMiddleware) // sessionshare.go
	s.server.AddReceivingMiddleware(s.eraMiddleware)   // era.go
	// A client that hangs up ends its requests (forward.go).
	s.server.AddReceivingMiddleware(s.hangUpMiddleware)
	if g.tracer != nil {
		s.server.AddReceivingMiddleware(s.traceMiddleware) // tracing.go; outermost
	}
	s.mu.Lock()
	s.decideBuiltins() // builtinclient.go
	s.mu.Unlock()
	s.sync()
	return s
}

func (g *Gateway) instructions(mode string, auto bool) string {
	if mode == config.ExposureFull {
		if auto {
			return "toolsearch gateway: the tools of several MCP servers, each named server__tool unless its server keeps bare names. " +
				"If the servers grow too many tools, the new ones go behind a search_tools tool: search for what you need, then call it."
		}
		return "toolsearch gateway: the tools of several MCP servers, each named server__tool unless its server keeps bare names."
	}
	return "toolsearch gateway: the tools of many MCP servers are behind search_tools. " +
		"Search for what you need, then call the tool found (by name, or through call_tool)."
}

func (s *session) serverSession() *mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ss
}

func (g *Gateway) register(s *session) {
	g.sessMu.Lock()
	g.sessions[s] = struct{}{}
	g.sessMu.Unlock()
	g.enr.Kick() // a client that offers sampling may have come (package enrichment)
}

func (g *Gateway) unregister(s *session) {
	g.sessMu.Lock()
	delete(g.sessions, s)
	g.sessMu.Unlock()
}

func (g *Gateway) sessionList() []*session {
	g.sessMu.Lock()
	defer g.sessMu.Unlock()
	out := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		out = append(out, s)
	}
	return out
}

// samplingProvider is background enrichment's provider "sampling"
// (enrichment.Sampler): it asks a connected client's model through MCP
// sampling, as a server would ask it.
type samplingProvider struct {
	g     *Gateway
	model string
}

var _ enrichment.Sampler = (*samplingProvider)(nil)

// Ready reports whether a connected client offers sampling.
func (p *samplingProvider) Ready() bool { return p.client() != nil }

// client returns the newest client session that declared sampling.
func (p *samplingProvider) client() *mcp.ServerSession {
	var best *session
	for _, s := range p.g.sessionList() {
		ss := s.serverSession()
		if ss == nil || !canSample(clientCaps(ss)) {
			continue
		}
		if best == nil || s.seq > best.seq {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	return best.serverSession()
}

// Complete sends the prompt as sampling/createMessage and reads the text
// of the answer.
func (p *samplingProvider) Complete(ctx context.Context, req enrich.Request) (enrich.Reply, error) {
	ss := p.client()
	if ss == nil {
		return enrich.Reply{}, fmt.Errorf("%w: %w", enrich.ErrFatal, enrichment.ErrNoSampler)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	params := &mcp.CreateMessageParams{
		SystemPrompt: req.System,
		MaxTokens:    int64(req.MaxTokens),
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Prompt}}},
		// Short structured text: a small, fast model does.
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		ModelPreferences: &mcp.ModelPreferences{CostPriority: 0.8, SpeedPriority: 0.8, IntelligencePriority: 0.3},
	}
	if p.model != "" {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		params.ModelPreferences.Hints = []*mcp.ModelHint{{Name: p.model}}
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	res, err := ss.CreateMessage(ctx, params)
	if err != nil {
		return enrich.Reply{}, fmt.Errorf("sampling: %w", err)
	}
	text, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return enrich.Reply{}, fmt.Errorf("sampling: the client answered with %T, not text", res.Content)
	}
	return enrich.Reply{Text: text.Text, InputTokens: catalog.CountTokens(req.System) + catalog.CountTokens(req.Prompt),
		OutputTokens: catalog.CountTokens(text.Text)}, nil
}

// syncSessions brings every session's lists (and the shared servers' of
// 2026-07-28 clients) up to date with the current view; the SDK sends
// list_changed to clients whose lists changed.
func (g *Gateway) syncSessions() {
	for _, s := range g.sessionList() {
		s.sync()
	}
	for _, s := range g.sharedSessions() {
		s.sync()
	}
}

// modern reports whether the session serves 2026-07-28 clients. s.mu is
// held.
func (s *session) modern() bool { return s.shared || clientera.Modern(s.era) }

// guard runs f and turns a panic of the SDK's Add* functions into a log
// line, so that one bad upstream definition cannot bring the gateway down.
func (g *Gateway) guard(what string, f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			g.log.Warn("skipping a definition the MCP server library refused", "what", what, "err", fmt.Sprint(r))
			ok = false
		}
	}()
	f()
	return true
}

// sync reconciles the session's tools, resources and prompts with the view.
//
// Auto exposure is re-decided here, at every catalog change, by one rule: a
// session that auto put in full mode switches to dynamic as soon as the
// definitions clients may see exceed the threshold (a server came up late
// with many tools, a list_changed added some). The search and call tools
// are added, the tools the session listed so far stay (as if found by
// search, so that a client that never refreshes keeps its call path), and
// the new tools are behind search; the client is told with list_changed.
// A session never switches back to full: a tool list that shrinks and
// grows with the catalog would churn the client's cache and context.
func (s *session) sync() {
	g := s.g
	v := g.cur.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.feed != nil {
		defer s.feedSession(v, false) // feed.go
	}
	if s.auto && s.mode == config.ExposureFull {
		if m, reason := g.resolveModeFor(config.ExposureAuto, s.facts); m != config.ExposureFull {
			if s.modern() && m == config.ExposureDynamic {
				m, reason = config.ExposureSearch, dynamicWhy
			}
			kept := make([]string, 0, len(s.tools))
			for _, name := range append(s.fullNames(), sortedKeys(s.tools)...) {
				if name == searchToolName || name == callToolName {
					continue
				}
				if tg, err := v.names.Resolve(name); err == nil {
					kept = append(kept, tg.tool.ID())
				}
			}
			sort.Strings(kept)
			s.leaveFull()
			s.mode, s.reason, s.loaded = m, reason, kept
			g.log.Info("auto exposure: a session switches from full to "+m, "why", reason, "tools_kept", len(kept))
		}
	}
	if s.mode == config.ExposureFull {
		// One list for every session in full mode (fulllist.go).
		s.syncFull(v)
		s.loadedTok = g.visibleTokens(v)
		s.syncExtras(v)
		return
	}
	desired := map[string]*catalog.Tool{}
	for _, t := range v.snap.Tools() {
		if t.AlwaysLoad && v.names.visible(t) && !s.hidesTool(t) {
			desired[v.names.toolName(t)] = t
		}
	}
	kept := s.loaded[:0]
	for _, id := range s.loaded {
		if t, ok := v.snap.Tool(id); ok && v.names.visible(t) && !s.hidesTool(t) {
			desired[v.names.toolName(t)] = t
			kept = append(kept, id)
		}
	}
	s.loaded = kept
	var remove []string
	for name := range s.tools {
		if name == searchToolName || name == callToolName {
			continue
		}
		if _, ok := desired[name]; !ok {
			remove = append(remove, name)
			delete(s.tools, name)
		}
	}
	if len(remove) > 0 {
		s.server.RemoveTools(remove...)
	}
	names := make([]string, 0, len(desired))
	for n := range desired {
		names = append(names, n)
	}
	sort.Strings(names)
	tok := 0
	for _, n := range names {
		t := desired[n]
		tok += t.Tokens()
		if prev, ok := s.tools[n]; ok && bytes.Equal(prev, t.Raw) {
			continue
		}
		mt, err := mcpTool(t, n)
		if err != nil {
			g.log.Warn("skipping a tool", "tool", t.ID(), "err", err)
			continue
		}
		if !t.AlwaysLoad {
			// Found by a search: a client with its own tool search
			// (Claude Code) must not defer it again.
			if mt.Meta == nil {
				mt.Meta = mcp.Meta{}
			}
			mt.Meta[catalog.MetaAlwaysLoad] = true
		}
		if g.guard(t.ID(), func() { s.server.AddTool(mt, s.nativeHandler) }) {
			s.tools[n] = t.Raw
		}
	}
	desc, schema := g.searchToolSchema(searchDescription(v, g, s.mode, g.visibleWithout(s.builtinOff)), true) // skills.go
	if desc != s.searchDesc {
		s.server.AddTool(&mcp.Tool{Name: searchToolName, Title: "Search tools", Description: desc,
			InputSchema: schema, Meta: alwaysLoadMeta,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.handleSearch)
		s.searchDesc = desc
		s.tools[searchToolName] = nil
	}
	if !s.hasCall {
		s.server.AddTool(&mcp.Tool{Name: callToolName, Title: "Call a tool", Description: callDescription,
			InputSchema: callInputSchema, Meta: alwaysLoadMeta}, s.handleCall)
		s.hasCall = true
		s.tools[callToolName] = nil
	}
	tok += catalog.CountTokens(s.searchDesc) + catalog.CountTokens(callDescription) + 200
	s.loadedTok = tok
	s.syncExtras(v)
}

const callDescription = "Call a tool that search_tools found, by the name it returned, with its arguments. " +
	"Use it when the tool is not in your tool list."

// searchAdvice tells the model how to ask. Tools are found by the words of
// their definitions, so a query worded like the wanted tool's description
// finds it best.
const searchAdvice = `Ask as the wanted tool's own description would, naming the product ("create a GitHub pull request"). ` +
	`Several needs at once: queries. Known names: select:name1,name2.`

// searchDescription names the servers and their tool counts, not every
// tool, so that its size does not grow with the catalog.
func searchDescription(v *view, g *Gateway, mode string, visible func(*catalog.Tool) bool) string {
	type sc struct {
		key string
		n   int
	}
	var list []sc
	total := 0
	for _, srv := range v.snap.Servers() {
		n := 0
		for _, t := range srv.Tools {
			if visible(t) {
				n++
			}
		}
		if n > 0 {
			list = append(list, sc{srv.Key, n})
			total += n
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Find tools among %d tools of %d MCP servers; returns each match's name, description and input schema", total, len(list))
	if mode == config.ExposureDynamic {
		b.WriteString(", and adds it to your tool list")
	}
	b.WriteString(". Then call it by name (or through call_tool). " + searchAdvice + " Servers (tools): ")
	for i, s := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d)", s.key, s.n)
	}
	var starting []string
	for _, k := range g.keys() {
		if _, ok := v.snap.Server(k); !ok {
			starting = append(starting, k)
		}
	}
	if len(starting) > 0 {
		fmt.Fprintf(&b, ". Not listed yet: %s", strings.Join(starting, ", "))
	}
	b.WriteString(".")
	return b.String()
}

// mcpTool turns a catalog tool into the definition clients see: the
// upstream definition under its exposed name and, for always-loaded tools,
// the alwaysLoad hint in _meta. Schemas pass through byte for byte.
func mcpTool(t *catalog.Tool, name string) (*mcp.Tool, error) {
	var mt mcp.Tool
	if len(t.Raw) > 0 {
		if err := json.Unmarshal(t.Raw, &mt); err != nil {
			return nil, err
		}
	}
	mt.Name = name
	if len(t.InputSchema) > 0 {
		mt.InputSchema = json.RawMessage(t.InputSchema)
	} else {
		mt.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	mt.OutputSchema = nil
	if len(t.OutputSchema) > 0 {
		mt.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	if t.AlwaysLoad {
		if mt.Meta == nil {
			mt.Meta = mcp.Meta{}
		}
		mt.Meta[catalog.MetaAlwaysLoad] = true
	}
	return &mt, nil
}

// toolError is a tool result that reports an error to the model.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// nativeHandler serves a call of an upstream tool by its own name.
func (s *session) nativeHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return s.call(ctx, req, req.Params.Name, req.Params.Arguments)
}

func (s *session) handleCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &args); err != nil {
		return toolError("call_tool takes {\"name\": string, \"arguments\": object}: %v", err), nil
	}
	if strings.TrimSpace(args.Name) == "" {
		return toolError("call_tool needs the name of the tool to call"), nil
	}
	if args.Name == searchToolName || args.Name == callToolName {
		return toolError("call %s directly, not through call_tool", args.Name), nil
	}
	return s.call(ctx, req, args.Name, args.Arguments)
}

// call serves the client's call of name with args (call.go). A built-in
// tool the session is not shown is refused first, and a call of a tool the
// session's last search found is learned from.
func (s *session) call(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c := s.g.newCall(s, req, name, args)
	if res := s.refusedBuiltin(c.asked, c.to); res != nil { // builtinclient.go
		return res, nil
	}
	s.noteCall(c.to) // learning.go
	return s.g.callTool(ctx, c)
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || string(b) == "null" {
		return json.RawMessage(`{}`)
	}
	return b
}

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query      string   `json:"query"`
	Queries    []string `json:"queries"`
	MaxResults int      `json:"max_results"`
	// Kind is what to find: "tools", "skills" or "both" (the default).
	Kind string `json:"kind"`
}

// searchOutput is what search_tools returns, as JSON text, with the
// query and queries it was asked.
type searchOutput struct {
	Query    string          `json:"query,omitempty"`
	Queries  []string        `json:"queries,omitempty"`
	Matched  string          `json:"matched_as"`
	Total    int             `json:"total"`
	AtLeast  bool            `json:"total_at_least,omitempty"`
	Tools    []searchToolOut `json:"tools"`
	More     []searchToolOut `json:"more,omitempty"`
	Unknown  []string        `json:"unknown,omitempty"`
	Starting []string        `json:"servers_starting,omitempty"`
	Skills   []skillHitOut   `json:"skills,omitempty"`
	Note     string          `json:"note"`
}

type searchToolOut struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

func (s *session) handleSearch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	g := s.g
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	var args searchArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &args); err != nil {
		return toolError("search_tools takes {\"query\": string, \"queries\": [string], \"max_results\": integer}: %v", err), nil
	}
	if args.Query == "" && len(args.Queries) == 0 {
		return toolError("search_tools needs a query (a string) or queries (a list of strings)"), nil
	}
	max := args.MaxResults
	if max <= 0 {
		max = g.cfg.Gateway.Limits.MaxResults
	}
	switch args.Kind {
	case "", kindBoth, kindTools:
	case kindSkills:
		return s.skillsOnlyResult(ctx, args, max), nil // skills.go
	default:
		return toolError("search_tools: kind is %q; it is \"tools\", \"skills\" or \"both\"", args.Kind), nil
	}
	start := time.Now()
	res, err := g.searchMany(ctx, args.Query, args.Queries, max, s.visibleFunc())
	var skillHits []skillHitOut
	if err == nil && args.Kind != kindTools {
		skillHits = g.shareSkillHits(ctx, &res, args, max) // skills.go: one max_results for both
		s.loadSkills(skillHits)
	}
	if g.feed != nil {
		s.feedSearch(req, args, res, err, start) // feed.go
	}
	if err != nil {
		if errors.Is(err, search.ErrBadQuery) {
			return toolError("%v", err), nil
		}
		return toolError("search failed: %v", err), nil
	}
	out := searchOutput{Query: args.Query, Queries: args.Queries, Matched: string(res.Form), Total: res.Total, AtLeast: res.TotalAtLeast,
		Unknown: res.Unknown, Tools: []searchToolOut{}}
	budget := g.cfg.Gateway.Limits.ResultTokens
	used := 0
	v := g.cur.Load()
	var found []*catalog.Tool
	for _, h := range res.Hits {
		t := h.Tool
		found = append(found, t)
		cost := t.Tokens()
		if used+cost <= budget || len(out.Tools) == 0 {
			used += cost
			out.Tools = append(out.Tools, searchToolOut{Name: v.names.toolName(t), Description: t.Description, InputSchema: orEmpty(t.InputSchema)})
			continue
		}
		out.More = append(out.More, searchToolOut{Name: v.names.toolName(t), Description: firstSentence(t.Description)})
	}
	for _, k := range g.keys() {
		if st := g.ups()[k].Status().State; (st == StateStarting || st == StateRestarting) && !v.fromCache[k] {
			if _, ok := v.snap.Server(k); !ok {
				out.Starting = append(out.Starting, k)
			}
		}
	}
	switch {
	case len(res.Hits) == 0 && len(skillHits) > 0:
		out.Note = "No tool matched."
	case len(res.Hits) == 0:
		out.Note = "No tool matched."
		if len(res.NearestServers) > 0 {
			out.Note += " Servers with the closest names: " + strings.Join(res.NearestServers, ", ") + "."
		}
		out.Note += " Try other words, a server name, or select:<exact tool name>."
	case mode == config.ExposureDynamic:
		out.Note = "These tools are now in your tool list: call them by name. call_tool also works."
	default:
		out.Note = "Call a tool with call_tool {\"name\": <name>, \"arguments\": {...}}."
	}
	if len(out.More) > 0 {
		out.Note += fmt.Sprintf(" %d more matches are listed without schemas (token budget); load them with select:<name>.", len(out.More))
	}
	if len(skillHits) > 0 {
		out.Skills = skillHits
		out.Note += " " + skillsNote
	}
	if note := g.startingNote(out.Starting); len(out.Starting) > 0 && note != "" {
		out.Note += " " + note
	}
	told := map[string]bool{}
	for _, q := range append([]string{args.Query}, args.Queries...) {
		for _, k := range g.targetedServers(q) {
			if st := g.ups()[k].Status(); st.State == StateFailed && !told[k] {
				if _, ok := v.snap.Server(k); !ok {
					told[k] = true
					out.Note += fmt.Sprintf(" Server %s could not start: %s", k, st.Error)
				}
			}
		}
	}
	if g.feed != nil {
		s.feedLoadedOut(mode, found, out.Tools) // feed.go
	}
	s.noteSearch(args.Query, args.Queries, res) // learning.go
	if mode == config.ExposureDynamic && len(found) > 0 {
		s.loadAndAwaitRelist(ctx, found) // relist.go
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return toolError("encoding the result: %v", err), nil
	}
	return textResult(string(b)), nil
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".\n"); i > 0 {
		s = s[:i+1]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// load adds found tools to a dynamic session's tool list.
func (s *session) load(tools []*catalog.Tool) {
	s.mu.Lock()
	present := map[string]bool{}
	for _, w := range s.loaded {
		present[w] = true
	}
	v := s.g.cur.Load()
	for _, t := range tools {
		id := t.ID()
		if _, ok := s.tools[v.names.toolName(t)]; ok || present[id] {
			continue
		}
		s.loaded = append(s.loaded, id)
		present[id] = true
	}
	if len(s.loaded) > maxDynamicTools {
		s.loaded = append([]string(nil), s.loaded[len(s.loaded)-maxDynamicTools:]...)
	}
	s.mu.Unlock()
	s.sync()
}

// exposedURI returns the URI clients see for a server's resource: the
// original one, unless another server has the same URI.
func exposedURI(server, uri string, owners map[string]int) string {
	if owners[uri] <= 1 {
		return uri
	}
	return "toolsearch://" + server + "/" + url.PathEscape(uri)
}

// syncExtras reconciles resources, resource templates and prompts.
// s.mu is held.
func (s *session) syncExtras(v *view) {
	g := s.g
	owners := map[string]int{}
	keys := make([]string, 0, len(v.extras))
	sv := g.skillView()
	for k, m := range v.extras {
		keys = append(keys, k)
		for _, r := range m.Resources {
			owners[r.URI]++
		}
	}
	sort.Strings(keys)
	wantRes := map[string]bool{}
	wantTpl := map[string]bool{}
	wantPr := map[string]bool{}
	for _, k := range keys {
		m := v.extras[k]
		for _, r := range m.Resources {
			server, orig := k, r.URI
			exp := exposedURI(k, r.URI, owners)
			if gw, ok := sv.gatewayURI(k, r.URI); ok { // skills.go: read through the checks
				exp = gw
			}
			wantRes[exp] = true
			sig := k + "\x00" + mustJSON(r)
			if s.resources[exp] == sig {
				continue
			}
			rr := *r
			rr.URI = exp
			if !v.names.keepsBare(k) {
				rr.Name = k + catalog.WireSeparator + r.Name
			}
			if g.guard("resource "+exp, func() {
				s.server.AddResource(&rr, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return g.readResourceFor(ctx, req, server, orig)
				})
			}) {
				s.resources[exp] = sig
			}
		}
		for _, t := range m.Templates {
			tt := *t
			if gw, ok := sv.gatewayTemplate(k, t.URITemplate); ok { // skills.go
				tt.URITemplate = gw
			}
			if wantTpl[tt.URITemplate] {
				continue // another server has the same template; the first wins
			}
			wantTpl[tt.URITemplate] = true
			sig := k + "\x00" + mustJSON(t)
			if s.templates[tt.URITemplate] == sig {
				continue
			}
			if !v.names.keepsBare(k) {
				tt.Name = k + catalog.WireSeparator + t.Name
			}
			server := k
			if g.guard("resource template "+tt.URITemplate, func() {
				s.server.AddResourceTemplate(&tt, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return g.readResourceFor(ctx, req, server, req.Params.URI)
				})
			}) {
				s.templates[tt.URITemplate] = sig
			}
		}
		for _, p := range m.Prompts {
			name := v.names.promptName(k, p.Name)
			if tg, ok := v.names.ResolvePrompt(name); !ok || tg.server != k || tg.name != p.Name || wantPr[name] {
				continue // listed twice by its server
			}
			wantPr[name] = true
			sig := mustJSON(p)
			if s.prompts[name] == sig {
				continue
			}
			pp := *p
			pp.Name = name
			server, orig := k, p.Name
			if g.guard("prompt "+name, func() {
				s.server.AddPrompt(&pp, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return g.getPromptFor(ctx, req, server, orig)
				})
			}) {
				s.prompts[name] = sig
			}
		}
	}
	if rm := dropUnwanted(s.resources, wantRes); len(rm) > 0 {
		s.server.RemoveResources(rm...)
	}
	if rm := dropUnwanted(s.templates, wantTpl); len(rm) > 0 {
		s.server.RemoveResourceTemplates(rm...)
	}
	if rm := dropUnwanted(s.prompts, wantPr); len(rm) > 0 {
		s.server.RemovePrompts(rm...)
	}
}

// dropUnwanted deletes from have every key that want lacks and returns them.
func dropUnwanted[V any](have map[string]V, want map[string]bool) []string {
	var rm []string
	for k := range have {
		if !want[k] {
			rm = append(rm, k)
			delete(have, k)
		}
	}
	return rm
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// readResource reads a resource from its server on behalf of a client
// session (ss; nil when there is none).
func (g *Gateway) readResource(ctx context.Context, ss *mcp.ServerSession, server, uri string) (*mcp.ReadResourceResult, error) {
	return g.readResourceWith(ctx, ss, server, &mcp.ReadResourceParams{URI: uri})
}

// readResourceWith is readResource with the params to send (a retry's
// inputResponses and requestState with the URI).
func (g *Gateway) readResourceWith(ctx context.Context, ss *mcp.ServerSession, server string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if err := g.resourceAllowed(server, p.URI); err != nil {
		return nil, err
	}
	if err := g.nativeSkillRead(server, p.URI); err != nil { // skills.go
		return nil, err
	}
	return g.readUpstream(ctx, ss, server, p)
}

// readUpstream reads a resource from its server, unchecked.
func (g *Gateway) readUpstream(ctx context.Context, ss *mcp.ServerSession, server string, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	u := g.ups()[server]
	if u == nil {
		return nil, fmt.Errorf("server %q is not configured", server)
	}
	return onUpstream(ctx, g, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, p)
	})
}

// getPromptWith gets a prompt from its server on behalf of a client
// session, with the params to send.
func (g *Gateway) getPromptWith(ctx context.Context, ss *mcp.ServerSession, server string, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if err := g.cur.Load().names.promptAllowed(server, p.Name); err != nil {
		return nil, err
	}
	u := g.ups()[server]
	if u == nil {
		return nil, fmt.Errorf("server %q is not configured", server)
	}
	return onUpstream(ctx, g, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, p)
	})
}
