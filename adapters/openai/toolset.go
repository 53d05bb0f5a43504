// Package openai wires toolsearch into the OpenAI APIs through the official
// Go SDK (github.com/openai/openai-go/v3).
//
// Responses API: three strategies reach the deferred tools (Strategy), and
// each Turn says which one it used and why:
//
//   - tool_search: a client-executed tool_search ({"type": "tool_search",
//     "execution": "client"}) puts toolsearch's engine behind the model's
//     search. A tool_search_call is answered (AnswerToolSearch) with a
//     tool_search_output whose namespaces hold the found functions with
//     defer_loading: true. The default for a model that supports
//     tool_search.
//   - additional_tools: the search is a plain function; its answer
//     (AnswerSearchCall) names the tools found and an additional_tools
//     input item (role developer) adds their definitions, in namespaces,
//     at that point of the conversation. The default for a model without
//     tool_search (Config.NoToolSearch).
//   - functions: the search is a plain function whose answer names the
//     tools found, and the next requests send them as ordinary functions.
//     It needs nothing beyond function calling.
//
// Under the first two the tools array never changes while the conversation
// goes on, so the prompt cache keeps it, and deferred tools are not sent
// at all until found. defer_loading is only ever sent beside a tool_search
// tool, as the API requires.
//
// Send sends a turn and, when the endpoint refuses a feature with a 400
// that names it (Refused: a Responses-compatible server without namespace,
// additional_tools or tool_search), remembers the refusal per endpoint and
// model (Endpoints) and sends again one step down: namespaces to plain
// functions "server__tool", tool_search to additional_tools,
// additional_tools to functions. Turn rewrites the conversation's items for
// the strategy in use, so a conversation may move between endpoints.
//
// Namespaces: a server of at most nine tools (Config.NamespaceSize) is one
// namespace named by its key. A larger one is split by topic, the word of
// the tools' names other than verbs and the server's own words that most
// of them share ("create_issue", "list_issues" → "issue"): a topic of three
// tools or more is a namespace "server__topic" (cut into even parts
// "server__topic1", "server__topic2" past nine), smaller topics share one
// ("server__label_milestone"). Every name leads back to its tool (Route,
// Resolve), also the names of an older split: the server is the part
// before "__", and function names are unique within a server.
//
// A tool loaded by a tool_search_output or additional_tools item is never
// dropped: after the catalog loses it, it keeps its last definition in
// every later request and across Compact, and Resolve answers its calls
// with the reason.
//
// Chat Completions has no tool search. ChatTurn emulates it: the search is
// an ordinary function whose answer names the tools it loaded
// (discovery.LoadedText), and the next turn sends them as plain functions.
//
// Both keep their state in the conversation (the input items or messages,
// and the tools array last sent), announce deferred tools in append-only
// developer/system messages, and carry loaded tools across compaction.
package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

// DefaultSearchToolName is the name of the Chat Completions search
// function.
const DefaultSearchToolName = "tool_search"

// Builtin is a function of the host itself, sent as given. Built-ins are
// never deferred by this package (deferral needs them in the search index;
// put host tools that should be deferred into the catalog as a server).
type Builtin struct {
	// Name and Description are the function's.
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments; {"type":"object"}
	// when empty.
	Parameters json.RawMessage
	// Primary marks the host's primary channel to the user.
	Primary bool
}

// Config configures a Toolset. The zero value is usable: mode on, delta
// announcements, namespaces of at most 9 functions.
type Config struct {
	// Mode says when search is on.
	Mode deferral.Mode
	// Strategy is how Responses requests reach the deferred tools;
	// StrategyAuto (the zero value) picks by model and endpoint.
	Strategy Strategy
	// NoToolSearch says that the model does not support tool_search (the
	// Responses API needs a recent model); StrategyAuto then searches with
	// a function and adds what it finds with additional_tools items, with
	// NoToolSearchWhy in the reason. Chat Completions ignores it (its
	// search is emulated).
	NoToolSearch bool
	// NoToolSearchWhy is the reason given when NoToolSearch is set.
	NoToolSearchWhy string
	// ContextWindow is the model's context window in tokens (mode auto); 0
	// means deferral.DefaultContextWindow.
	ContextWindow int
	// Announce chooses delta (default) or snapshot announcements.
	Announce discovery.Strategy
	// Budget is the size in bytes past which announcements group whole
	// servers; 0 means discovery.DefaultBudget.
	Budget int
	// MaxResults is the default number of tools a search returns.
	MaxResults int
	// NamespaceSize is the most functions a namespace holds; 0 means 9.
	NamespaceSize int
	// NoNamespaces sends found tools as plain functions ("server__tool")
	// rather than in namespaces.
	NoNamespaces bool
	// Endpoints remembers what each endpoint refused for each model
	// (Send); share one across the Toolsets of a session. nil means a
	// memory of this Toolset's own.
	Endpoints *Endpoints
	// Endpoint names the endpoint the requests go to (its base URL, say),
	// the key of Endpoints.
	Endpoint string
	// DescribeServers caps how many servers the search tool's description
	// names; 0 means 40.
	DescribeServers int
	// SearchToolName names the Chat Completions search function;
	// DefaultSearchToolName when empty.
	SearchToolName string
	// Builtins are the host's own functions, sent first.
	Builtins []Builtin
	// Visible hides the MCP tools for which it returns false.
	Visible func(*catalog.Tool) bool
	// Logger receives debug records; nil means slog.Default().
	Logger *slog.Logger
}

// Source is the catalog state a Toolset works on.
type Source struct {
	// Snapshot holds the MCP tools.
	Snapshot *catalog.Snapshot
	// Index is the search index of Snapshot (search.Build(Snapshot)).
	Index *search.Index
	// Connecting are the keys of servers still starting.
	Connecting []string
}

// Toolset binds a catalog snapshot, its index and a configuration. It is
// immutable and safe for concurrent use; build a new one when the catalog
// changes.
type Toolset struct {
	cfg        Config
	src        Source
	names      *discovery.Names
	ns         *namespaces
	searchName string
	// decision is for the Responses API with tool_search, fnDecision for
	// its function search, chatDecision for Chat Completions (always
	// emulated).
	decision, fnDecision, chatDecision deferral.Decision
	endpoints                          *Endpoints
	mcp                                []*catalog.Tool // visible MCP tools, snapshot order
	byWire                             map[string]*catalog.Tool
	log                                *slog.Logger
}

// NewToolset prepares a catalog snapshot for the OpenAI APIs.
func NewToolset(src Source, cfg Config) (*Toolset, error) {
	if src.Snapshot == nil {
		src.Snapshot = catalog.Empty
	}
	if src.Index == nil {
		return nil, fmt.Errorf("openai: Source.Index is required")
	}
	ts := &Toolset{cfg: cfg, src: src, byWire: map[string]*catalog.Tool{}, log: cfg.Logger}
	if ts.log == nil {
		ts.log = slog.Default()
	}
	ts.searchName = cfg.SearchToolName
	if ts.searchName == "" {
		ts.searchName = DefaultSearchToolName
	}
	ts.names = discovery.NewNames(src.Snapshot, "")
	size := cfg.NamespaceSize
	if size <= 0 {
		size = 9
	}
	var cands []deferral.Tool
	seen := map[string]bool{ts.searchName: true}
	for _, b := range cfg.Builtins {
		if b.Name == "" || seen[b.Name] {
			return nil, fmt.Errorf("openai: built-in %q: empty or duplicate name", b.Name)
		}
		seen[b.Name] = true
		cands = append(cands, deferral.Tool{ID: b.Name, Origin: deferral.Builtin, Primary: b.Primary})
	}
	for _, t := range src.Snapshot.Tools() {
		if cfg.Visible != nil && !cfg.Visible(t) {
			continue
		}
		w := ts.names.Wire(t)
		if seen[w] {
			return nil, fmt.Errorf("openai: two tools are named %q", w)
		}
		seen[w] = true
		ts.mcp = append(ts.mcp, t)
		ts.byWire[w] = t
		cands = append(cands, deferral.FromCatalog(t, w, t.Tokens()))
	}
	ts.ns = splitNamespaces(src.Snapshot, ts.mcp, size)
	cands = append(cands, deferral.Tool{ID: ts.searchName, Origin: deferral.SearchTool})
	in := deferral.Input{Tools: cands, Mode: cfg.Mode, ContextWindow: cfg.ContextWindow,
		References: !cfg.NoToolSearch, NoReferencesWhy: cfg.NoToolSearchWhy}
	if in.NoReferencesWhy == "" {
		in.NoReferencesWhy = "the model does not support tool_search"
	}
	ts.decision = deferral.Decide(in)
	in.References, in.Expand = false, true
	in.NoReferencesWhy = "the search is a function; what it finds is added to the conversation"
	ts.fnDecision = deferral.Decide(in)
	in.NoReferencesWhy = "Chat Completions has no tool search"
	ts.chatDecision = deferral.Decide(in)
	ts.endpoints = cfg.Endpoints
	if ts.endpoints == nil {
		ts.endpoints = &Endpoints{}
	}
	ts.log.Debug("toolsearch: deferral decided", "search", ts.decision.SearchOn, "deferred", len(ts.decision.Deferred), "reason", ts.decision.Why())
	return ts, nil
}

// Decision returns the Responses API's deferral decision for the strategy
// Config chooses before any refusal of the endpoint.
func (ts *Toolset) Decision() deferral.Decision {
	s, _, _ := ts.choose("")
	return ts.decisionFor(s)
}

// decisionFor returns the Responses deferral decision under s.
func (ts *Toolset) decisionFor(s Strategy) deferral.Decision {
	if s == StrategyToolSearch {
		return ts.decision
	}
	return ts.fnDecision
}

// ChatDecision returns the Chat Completions deferral decision (search
// emulated).
func (ts *Toolset) ChatDecision() deferral.Decision { return ts.chatDecision }

// Names is the naming of the snapshot's tools for plain functions
// ("server__name").
func (ts *Toolset) Names() *discovery.Names { return ts.names }

// Route returns the catalog tool a function_call names: by namespace and
// function name for a tool loaded in a namespace, or by its plain function
// name ("server__name") for a tool sent as a function. Resolve says why a
// call does not route. A namespace from an
// older split of the same server still routes. Built-ins and unknown names
// yield false; search never grants a permission, so the host checks its
// rules before running the tool.
func (ts *Toolset) Route(namespace, name string) (*catalog.Tool, bool) {
	if namespace != "" {
		return ts.ns.route(namespace, name)
	}
	t, ok := ts.byWire[name]
	return t, ok
}

// deferredView lists the deferred tools by server, by wire name.
func (ts *Toolset) deferredView(d deferral.Decision) discovery.Deferred {
	var out discovery.Deferred
	idx := map[string]int{}
	for _, t := range ts.mcp {
		w := ts.names.Wire(t)
		if !d.IsDeferred(w) {
			continue
		}
		p := ts.names.ServerPrefix(t.Server)
		i, ok := idx[p]
		if !ok {
			i = len(out.Servers)
			idx[p] = i
			out.Servers = append(out.Servers, discovery.ServerTools{Prefix: p})
		}
		out.Servers[i].Names = append(out.Servers[i].Names, w)
	}
	out.Connecting = ts.src.Connecting
	return out
}

// searchable reports whether the search may return t: deferred tools only.
func (ts *Toolset) searchable(d deferral.Decision) func(*catalog.Tool) bool {
	return func(t *catalog.Tool) bool {
		w := ts.names.Wire(t)
		return ts.byWire[w] == t && d.IsDeferred(w)
	}
}

// schema returns a tool's input schema, {"type":"object"} when it has none
// and with "type":"object" added in front when the server left "type" out.
// Every other byte is kept.
func schema(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return raw
	}
	if _, ok := probe["type"]; ok {
		return raw
	}
	out := append([]byte(`{"type":"object"`), raw[1:]...)
	if len(probe) > 0 {
		out = append([]byte(`{"type":"object",`), raw[1:]...)
	}
	return out
}

// searchParameters is the parameter schema of the search tool.
// It takes query, queries or both (see search.Index.SearchMany).
const searchParameters = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool does; or select:name1,name2; or a server prefix such as github__"},` +
	`"queries":{"type":"array","items":{"type":"string"},"maxItems":8,"description":"Several queries, one per need, answered as one list"},` +
	`"max_results":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to load at most (default 5)"}},` +
	`"additionalProperties":false}`

// searchArgs are the arguments of a search call.
type searchArgs struct {
	Query      string   `json:"query"`
	Queries    []string `json:"queries"`
	MaxResults int      `json:"max_results"`
}

// asked lists the queries of the arguments, for messages.
func (a searchArgs) asked() []string { return append([]string{a.Query}, a.Queries...) }

func (ts *Toolset) description(d deferral.Decision) string {
	n := ts.cfg.DescribeServers
	if n <= 0 {
		n = 40
	}
	return discovery.SearchToolDescription(ts.deferredView(d), n)
}
