// Package anthropic wires toolsearch into the Anthropic Messages API through
// the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2): it builds
// each turn's request (the tools array, and the system messages that add
// the tools found), answers client-side search calls, keeps every reference
// pointing at a tool that is sent, announces the deferred tools in
// append-only blocks, and carries loaded tools across compaction.
//
// How found tools reach the model is a Strategy, chosen per endpoint and
// model (Config.Strategy, Config.Endpoint; Toolset.Strategy says which and
// why):
//
//   - Inline: each found definition is added where it is found, as a
//     tool_addition holding a tool_definition in a {"role":"system"}
//     message; tools never changes and holds no deferred tool;
//   - ReferenceAdd: the catalog is declared in tools with defer_loading
//     and a tool_addition names each found tool;
//   - Classic: found tools are sent with defer_loading and loaded by the
//     tool_reference blocks of the search answer;
//   - Plain: found tools are sent as ordinary tools and the answer names
//     them in text.
//
// Toolset.Send sends a turn with the betas it needs and, when the endpoint
// refuses a feature of the strategy with a 400 (ReadRefusal), moves to the
// plainer strategy that does without it, retries, and remembers the move
// per endpoint and model (Capabilities). The history is read the same way
// whatever wrote it (ReadHistory: tool_reference blocks, search results,
// tool_addition and tool_removal in system messages and in a compaction
// block's tool_changes; package messages, which the proxy shares), and
// rendered for the strategy in force. A tool a reference in the history
// names is never dropped from tools, even once its server has left the
// catalog (Turn.Kept, GoneResult).
//
// Two ways to search:
//
//   - Client-side (ClientSearch, the default): toolsearch's engine sits
//     behind an ordinary tool, whose answers the strategy shapes (under
//     Classic, a tool_result of tool_reference blocks, as Claude Code
//     does; under the others, text naming the tools, which the next Turn
//     adds).
//   - Server-side (ServerBM25, ServerRegex): the API's own
//     tool_search_tool_bm25_20251119 or tool_search_tool_regex_20251119, with
//     every deferred tool sent with defer_loading: true.
//
// For an endpoint known to refuse tool references (many Anthropic-compatible
// proxies), Config.Wire = Expand starts at Plain: discovered tools are sent
// as ordinary tools and the references already in the history are rewritten
// as text, so the same conversation goes on.
//
// The flow of an agent loop:
//
//	ts, _ := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: ix}, cfg)
//	conv := &anthropic.Conversation{}
//	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
//	for {
//		msg, turn, _ := ts.Send(ctx, &client.Messages, conv, sdk.MessageNewParams{Model: model, MaxTokens: 1024})
//		conv.Messages = append(conv.Messages, msg.ToParam())
//		_ = turn.Strategy // and turn.StrategyWhy: what this request did, and why
//		// answer tool_use blocks: ts.AnswerSearch for the search tool,
//		// ts.Resolve to route the others (ts.GoneResult for ts.Gone ones);
//		// then append anthropic.ResultsMessage(...)
//	}
//
// Deferred tools are announced in <deferred-tools> text blocks (package
// discovery) appended to the last user message of the turn in which
// something changed — not in a {"role":"system"} message as Claude Code
// does, which needs the mid-conversation-system beta: a text block works on
// every endpoint. Reconcile and ExpandReferences do the history rewrites of
// Turn on raw JSON, for a proxy.
//
// A Toolset is bound to one catalog snapshot; make a new one when the
// catalog changes (the conversation carries everything else).
package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

// SearchKind chooses who runs the tool search.
type SearchKind uint8

// Search kinds.
const (
	// ClientSearch puts toolsearch's engine behind an ordinary tool whose
	// results are tool_reference blocks.
	ClientSearch SearchKind = iota
	// ServerBM25 uses the API's tool_search_tool_bm25_20251119.
	ServerBM25
	// ServerRegex uses the API's tool_search_tool_regex_20251119.
	ServerRegex
)

// String names the search kind.
func (k SearchKind) String() string {
	switch k {
	case ServerBM25:
		return "server-bm25"
	case ServerRegex:
		return "server-regex"
	}
	return "client"
}

// ParseSearchKind reads "client", "server-bm25" (or "bm25") and
// "server-regex" (or "regex").
func ParseSearchKind(s string) (SearchKind, error) {
	switch s {
	case "", "client":
		return ClientSearch, nil
	case "server-bm25", "bm25":
		return ServerBM25, nil
	case "server-regex", "regex":
		return ServerRegex, nil
	}
	return 0, fmt.Errorf("search kind %q: want client, server-bm25 or server-regex", s)
}

// Wire says what the endpoint accepts.
type Wire uint8

// Endpoint capabilities.
const (
	// References: the model and endpoint accept tool_reference blocks and
	// defer_loading (the Anthropic API with a recent model).
	References Wire = iota
	// Expand: they do not, and toolsearch emulates them: discovered tools
	// are sent in full and references are written as text. Needs
	// ClientSearch.
	Expand
	// NoReferences: they do not, and search is turned off (every tool is
	// sent in full), with the reason given.
	NoReferences
)

// Names of the server-side search tools.
const (
	nameBM25Tool  = "tool_search_tool_bm25"
	nameRegexTool = "tool_search_tool_regex"
)

// MaxServerDeferred is the most deferred tools the API's server-side search
// takes in one request.
const MaxServerDeferred = 10000

// DefaultSearchToolName is the name of the client-side search tool.
const DefaultSearchToolName = "tool_search"

// Builtin is a tool of the host itself (not from an MCP server).
type Builtin struct {
	// Tool is the definition as it is sent. Its name must be unique among
	// all tools.
	Tool sdk.ToolUnionParam
	// Defer asks for the tool to be deferred when search is on (Claude
	// Code's shouldDefer). Deferred built-ins are found by the client-side
	// search like MCP tools. Only custom tools (OfTool) can be deferred.
	Defer bool
	// AlwaysLoad and Primary keep the tool loaded.
	AlwaysLoad, Primary bool
}

// Config configures a Toolset. The zero value is usable: client-side
// search, mode on, delta announcements, an endpoint that takes references.
type Config struct {
	// Mode says when search is on (deferral.ParseMode).
	Mode deferral.Mode
	// Search chooses client- or server-side search.
	Search SearchKind
	// Wire says whether the endpoint takes tool references.
	Wire Wire
	// NoReferencesWhy explains, for Wire Expand or NoReferences, why the
	// endpoint takes none (it ends up in the decision's reason).
	NoReferencesWhy string
	// ContextWindow is the model's context window in tokens (mode auto);
	// 0 means deferral.DefaultContextWindow.
	ContextWindow int
	// Announce chooses delta (default) or snapshot announcements.
	Announce discovery.Strategy
	// Budget is the size in bytes past which announcements group whole
	// servers; 0 means discovery.DefaultBudget.
	Budget int
	// Prefix is put before every MCP tool's wire name ("" gives
	// "github__create_issue", "mcp__" gives "mcp__github__create_issue").
	Prefix string
	// SearchToolName names the client-side search tool;
	// DefaultSearchToolName when empty.
	SearchToolName string
	// MaxResults is the default number of tools a search returns; 0 means
	// search.DefaultMaxResults.
	MaxResults int
	// DescribeServers caps how many servers the search tool's description
	// names (with their tool counts); 0 means 40.
	DescribeServers int
	// Builtins are the host's own tools, sent first, in order.
	Builtins []Builtin
	// Visible, when set, hides the MCP tools for which it returns false:
	// never sent, never found, never announced.
	Visible func(*catalog.Tool) bool
	// NoCacheControl leaves out the cache_control breakpoint that Turn puts
	// on the last tool the model sees from the start (the search tool when
	// search is on). A breakpoint is never put on a deferred tool.
	NoCacheControl bool
	// Strategy chooses how discovered tools reach the model (see
	// Strategy); StrategyAuto picks one per endpoint and model, and a
	// refusal of the endpoint lowers it (see Toolset.Send).
	Strategy Strategy
	// Endpoint is the base URL requests go to ("" for Anthropic's API),
	// which StrategyAuto and Capabilities key on.
	Endpoint string
	// Model is the model AnswerSearch shapes its answers for, when the
	// request's own model is not at hand; Turn uses the request's.
	Model string
	// Capabilities remembers downgrades for the session; share one between
	// the Toolsets of a session. nil gives the Toolset a memory of its own.
	Capabilities *Capabilities
	// Logger receives debug records of decisions and rewrites; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Source is the catalog state a Toolset works on.
type Source struct {
	// Snapshot holds the MCP tools.
	Snapshot *catalog.Snapshot
	// Index is the search index of Snapshot (search.Build(Snapshot)). It
	// may be nil with server-side search.
	Index *search.Index
	// Connecting are the keys of servers still starting, announced as such.
	Connecting []string
}

// builtinServer is the catalog key under which deferred built-ins are
// indexed for the client-side search. ValidKey accepts it and no npm
// package name can take it.
const builtinServer = "_host"

// tool is one tool a Toolset can send.
type tool struct {
	name     string
	cat      *catalog.Tool // nil for a built-in that is not indexed
	builtin  int           // index in Config.Builtins, or -1
	deferred bool
}

// Toolset binds a catalog snapshot, its index and a configuration, and
// holds the deferral decision for them. It is immutable and safe for
// concurrent use; build a new one when the catalog changes.
type Toolset struct {
	cfg        Config
	src        Source
	ix         *search.Index
	names      *discovery.Names
	searchName string
	decision   deferral.Decision
	tools      []tool // built-ins, then MCP tools in snapshot order
	byName     map[string]int
	builtinCat map[*catalog.Tool]int // indexed built-in → Builtins index
	caps       *Capabilities
	log        *slog.Logger
}

// NewToolset prepares the tools of a catalog snapshot for the Messages API.
// It fails on a configuration it cannot honour: duplicate tool names, a
// built-in without a name, Expand with server-side search, or client-side
// search without an index.
func NewToolset(src Source, cfg Config) (*Toolset, error) {
	if src.Snapshot == nil {
		src.Snapshot = catalog.Empty
	}
	ts := &Toolset{cfg: cfg, src: src, ix: src.Index, byName: map[string]int{}, builtinCat: map[*catalog.Tool]int{}, log: cfg.Logger}
	if ts.log == nil {
		ts.log = slog.Default()
	}
	ts.caps = cfg.Capabilities
	if ts.caps == nil {
		ts.caps = &Capabilities{}
	}
	ts.searchName = cfg.SearchToolName
	switch cfg.Search {
	case ServerBM25:
		ts.searchName = nameBM25Tool
	case ServerRegex:
		ts.searchName = nameRegexTool
	default:
		if ts.searchName == "" {
			ts.searchName = DefaultSearchToolName
		}
		if src.Index == nil {
			return nil, fmt.Errorf("anthropic: client-side search needs Source.Index")
		}
	}
	if cfg.Wire == Expand && cfg.Search != ClientSearch {
		return nil, fmt.Errorf("anthropic: Wire Expand needs client-side search (the API's own search answers with references)")
	}
	ts.names = discovery.NewNames(src.Snapshot, cfg.Prefix)

	candidates := []deferral.Tool{}
	add := func(t tool, d deferral.Tool) error {
		if t.name == "" {
			return fmt.Errorf("anthropic: a tool has no name")
		}
		if _, dup := ts.byName[t.name]; dup || t.name == ts.searchName {
			return fmt.Errorf("anthropic: two tools are named %q", t.name)
		}
		ts.byName[t.name] = len(ts.tools)
		ts.tools = append(ts.tools, t)
		candidates = append(candidates, d)
		return nil
	}
	for i, b := range cfg.Builtins {
		raw, err := json.Marshal(b.Tool)
		if err != nil {
			return nil, fmt.Errorf("anthropic: built-in tool %d: %w", i, err)
		}
		name := ""
		if n := b.Tool.GetName(); n != nil {
			name = *n
		}
		d := deferral.Tool{ID: name, Origin: deferral.Builtin, Defer: b.Defer && b.Tool.OfTool != nil,
			AlwaysLoad: b.AlwaysLoad, Primary: b.Primary, Tokens: catalog.ClaudeTokens(catalog.CountTokens(string(raw)))}
		if err := add(tool{name: name, builtin: i}, d); err != nil {
			return nil, err
		}
	}
	for _, t := range src.Snapshot.Tools() {
		if cfg.Visible != nil && !cfg.Visible(t) {
			continue
		}
		name := ts.names.Wire(t)
		if err := add(tool{name: name, cat: t, builtin: -1}, deferral.FromCatalog(t, name, catalog.ClaudeTokens(t.Tokens()))); err != nil {
			return nil, err
		}
	}
	candidates = append(candidates, deferral.Tool{ID: ts.searchName, Origin: deferral.SearchTool})
	in := deferral.Input{
		Tools: candidates, Mode: cfg.Mode, ContextWindow: cfg.ContextWindow,
		References: cfg.Wire == References, NoReferencesWhy: cfg.NoReferencesWhy,
		Expand: cfg.Wire == Expand,
	}
	ts.decision = deferral.Decide(in)
	for i := range ts.tools {
		ts.tools[i].deferred = ts.decision.IsDeferred(ts.tools[i].name)
	}
	if ts.decision.SearchOn && cfg.Search != ClientSearch && len(ts.decision.Deferred) > MaxServerDeferred {
		return nil, fmt.Errorf("anthropic: %d deferred tools; the API's server-side search takes at most %d (use client-side search)",
			len(ts.decision.Deferred), MaxServerDeferred)
	}
	ts.log.Debug("toolsearch: deferral decided", "search", ts.decision.SearchOn, "deferred", len(ts.decision.Deferred),
		"loaded", len(ts.decision.Loaded), "reason", ts.decision.Why())

	// Deferred built-ins join the index under their own server so that the
	// client-side search finds them.
	if ts.decision.SearchOn && cfg.Search == ClientSearch {
		if err := ts.indexBuiltins(); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// indexBuiltins adds the deferred custom built-ins to a copy of the index.
func (ts *Toolset) indexBuiltins() error {
	var raws []json.RawMessage
	var which []int
	for i, b := range ts.cfg.Builtins {
		t := ts.tools[ts.byName[nameOf(b)]]
		if !t.deferred || b.Tool.OfTool == nil {
			continue
		}
		p := b.Tool.OfTool
		schema, err := json.Marshal(p.InputSchema)
		if err != nil {
			return fmt.Errorf("anthropic: built-in %q: %w", p.Name, err)
		}
		raw, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}{p.Name, p.Description.Value, schema})
		if err != nil {
			return fmt.Errorf("anthropic: built-in %q: %w", p.Name, err)
		}
		raws = append(raws, raw)
		which = append(which, i)
	}
	if len(raws) == 0 {
		return nil
	}
	if _, taken := ts.src.Snapshot.Server(builtinServer); taken {
		return fmt.Errorf("anthropic: the catalog has a server named %q, which toolsearch uses for built-in tools", builtinServer)
	}
	srv, err := catalog.NewServer(builtinServer, raws, nil, false)
	if err != nil {
		return fmt.Errorf("anthropic: indexing built-in tools: %w", err)
	}
	snap, _, err := ts.src.Snapshot.Apply(catalog.Put(srv))
	if err != nil {
		return fmt.Errorf("anthropic: indexing built-in tools: %w", err)
	}
	ts.ix = ts.ix.Update(snap, builtinServer)
	for j, t := range srv.Tools {
		ts.builtinCat[t] = which[j]
		ts.tools[ts.byName[t.Name]].cat = t
	}
	return nil
}

func nameOf(b Builtin) string {
	if n := b.Tool.GetName(); n != nil {
		return *n
	}
	return ""
}

// Decision returns the deferral decision, with its reasons.
func (ts *Toolset) Decision() deferral.Decision { return ts.decision }

// SearchToolName is the name of the search tool the model calls: the
// client-side tool's, or the server tool's.
func (ts *Toolset) SearchToolName() string { return ts.searchName }

// IsClientSearch reports whether name is the client-side search tool, whose
// calls the host answers with AnswerSearch.
func (ts *Toolset) IsClientSearch(name string) bool {
	return ts.cfg.Search == ClientSearch && ts.decision.SearchOn && name == ts.searchName
}

// Names is the naming of the snapshot's tools.
func (ts *Toolset) Names() *discovery.Names { return ts.names }

// Resolve returns the catalog tool a tool_use's name calls, or false for a
// built-in, the search tool, or an unknown name. Routing the call (and
// checking permissions) is the host's business: search never grants one.
// Resolve does not know what the model was shown: check the call first with
// Turn.Callable, which refuses a deferred tool no search loaded.
func (ts *Toolset) Resolve(name string) (*catalog.Tool, bool) {
	i, ok := ts.byName[name]
	if !ok || ts.tools[i].builtin >= 0 {
		return nil, false
	}
	return ts.tools[i].cat, true
}

// deferredView lists the deferred tools by server, for announcements and
// the search tool's description.
func (ts *Toolset) deferredView() discovery.Deferred {
	var d discovery.Deferred
	var builtins discovery.ServerTools
	idx := map[string]int{}
	for _, t := range ts.tools {
		if !t.deferred {
			continue
		}
		if t.builtin >= 0 {
			builtins.Names = append(builtins.Names, t.name)
			continue
		}
		p := ts.names.ServerPrefix(t.cat.Server)
		i, ok := idx[p]
		if !ok {
			i = len(d.Servers)
			idx[p] = i
			d.Servers = append(d.Servers, discovery.ServerTools{Prefix: p})
		}
		d.Servers[i].Names = append(d.Servers[i].Names, t.name)
	}
	if len(builtins.Names) > 0 {
		d.Servers = append(d.Servers, builtins)
	}
	d.Connecting = ts.src.Connecting
	return d
}

// definition returns the tool's definition as sent, with defer_loading when
// deferred is true.
func (ts *Toolset) definition(t tool, deferred bool) sdk.ToolUnionParam {
	if t.builtin >= 0 {
		u := ts.cfg.Builtins[t.builtin].Tool
		if deferred && u.OfTool != nil {
			p := *u.OfTool
			p.DeferLoading = param.NewOpt(true)
			p.CacheControl = sdk.CacheControlEphemeralParam{}
			u = sdk.ToolUnionParam{OfTool: &p}
		}
		return u
	}
	c := t.cat
	p := sdk.ToolParam{
		Name: t.name,
		// The schema goes out as the server sent it (compacted by the
		// SDK's encoder), through the SDK's documented escape hatch
		// param.Override: ToolInputSchemaParam would re-encode it and
		// reorder its keys.
		InputSchema: param.Override[sdk.ToolInputSchemaParam](inputSchema(c.InputSchema)),
	}
	if c.Description != "" {
		p.Description = param.NewOpt(c.Description)
	}
	if deferred {
		p.DeferLoading = param.NewOpt(true)
	}
	return sdk.ToolUnionParam{OfTool: &p}
}

// inputSchema returns an MCP input schema as the Messages API takes it. The
// API requires "type": "object" at the top; MCP servers are supposed to
// send it, and a schema that has no "type" at all (seen in the wild: only
// "$schema") gets it added in front. Every other byte is kept.
func inputSchema(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	obj, err := parseObject(raw)
	if err != nil || obj.Get("type") != nil {
		return raw
	}
	return append(object{{Key: "type", Val: json.RawMessage(`"object"`)}}, obj...).Marshal()
}
