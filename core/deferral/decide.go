package deferral

import (
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Origin says where a tool comes from.
type Origin uint8

// Tool origins.
const (
	// MCP is a tool of an MCP server: deferred by default.
	MCP Origin = iota
	// Builtin is a tool of the host itself: deferred only when it asks to be
	// (Tool.Defer).
	Builtin
	// SearchTool is the tool search tool itself: never deferred.
	SearchTool
)

// String names the origin.
func (o Origin) String() string {
	switch o {
	case Builtin:
		return "built-in"
	case SearchTool:
		return "search"
	}
	return "mcp"
}

// Tool is one tool of a request, as far as the decision needs to know it.
type Tool struct {
	// ID names the tool uniquely within the request (for example its wire
	// name). Decision lists tools by ID.
	ID string
	// Origin says where the tool comes from.
	Origin Origin
	// Defer is a built-in tool's own request to be deferred. It is ignored
	// for MCP tools (deferred by default) and for the search tool.
	Defer bool
	// AlwaysLoad marks a tool that must never be deferred, from
	// _meta["anthropic/alwaysLoad"] or the operator's configuration.
	AlwaysLoad bool
	// Primary marks the host's primary channel to the user (a send-message
	// tool, for instance): never deferred.
	Primary bool
	// Tokens is the size of the tool's definition in the target model's
	// tokens. Only mode auto uses it.
	Tokens int
}

// FromCatalog describes a catalog tool as an MCP tool named id, with its
// size in tokens (use catalog.ClaudeTokens(t.Tokens()) for Claude models).
func FromCatalog(t *catalog.Tool, id string, tokens int) Tool {
	return Tool{ID: id, Origin: MCP, AlwaysLoad: t.AlwaysLoad, Tokens: tokens}
}

// DefaultContextWindow is the context window, in tokens, assumed when the
// Input does not give one.
const DefaultContextWindow = 200_000

// Input is everything the decision depends on.
type Input struct {
	// Tools are the request's tools in the order they are sent, the search
	// tool included. Without a search tool, search stays off.
	Tools []Tool
	// Mode says when search is on.
	Mode Mode
	// ContextWindow is the model's context window in tokens; 0 means
	// DefaultContextWindow.
	ContextWindow int
	// References is true when both the model and the endpoint accept
	// tool_reference blocks and defer_loading.
	References bool
	// NoReferencesWhy says, when References is false, why (for example
	// "the endpoint https://proxy.example rejects tool_reference blocks").
	NoReferencesWhy string
	// Expand is true when the caller can do without references: it sends
	// discovered tools in full and rewrites references as text. Search then
	// stays possible when References is false.
	Expand bool
}

// Reason is one decision and why it was taken.
type Reason struct {
	// Tool is the ID of the tool the reason is about, or "" for a reason
	// about the request as a whole (whether search is on).
	Tool string
	// Text is the reason in words.
	Text string
}

// String writes the reason on one line.
func (r Reason) String() string {
	if r.Tool == "" {
		return r.Text
	}
	return r.Tool + ": " + r.Text
}

// Decision is what Decide concluded.
type Decision struct {
	// SearchOn is true when the search tool is sent and deferred tools are
	// hidden from the model.
	SearchOn bool
	// Expand is true when search is on without references: discovered tools
	// are sent in full and references are written as text.
	Expand bool
	// Deferred lists the IDs of the deferred tools in input order. It is
	// empty when search is off.
	Deferred []string
	// Loaded lists the IDs of the tools the model sees from the start, in
	// input order. It is never empty when the input has a tool. When search
	// is off it does not hold the search tool.
	Loaded []string
	// DeferrableTokens is the total size of the tools that search would
	// defer, and Threshold the size past which mode auto turns search on
	// (0 outside mode auto).
	DeferrableTokens, Threshold int
	// Reasons holds one request-level reason (Tool "") first, then one
	// reason per tool in input order.
	Reasons []Reason

	deferred map[string]bool
}

// IsDeferred reports whether the tool with the given ID is deferred.
func (d Decision) IsDeferred(id string) bool { return d.deferred[id] }

// Why returns the request-level reason: why search is on or off.
func (d Decision) Why() string {
	if len(d.Reasons) > 0 && d.Reasons[0].Tool == "" {
		return d.Reasons[0].Text
	}
	return ""
}

// Decide applies the rules to one request. It never fails: odd input (no
// tools, no search tool, duplicate IDs) yields a decision with search off
// and a reason saying so.
func Decide(in Input) Decision {
	var d Decision
	window := in.ContextWindow
	if window <= 0 {
		window = DefaultContextWindow
	}

	// Which tools could be deferred at all, and why each other one cannot.
	deferrable := make([]bool, len(in.Tools))
	toolWhy := make([]string, len(in.Tools))
	searchAt := -1
	seen := make(map[string]bool, len(in.Tools))
	duplicate := ""
	for i, t := range in.Tools {
		if seen[t.ID] && duplicate == "" {
			duplicate = t.ID
		}
		seen[t.ID] = true
		switch {
		case t.Origin == SearchTool:
			if searchAt < 0 {
				searchAt = i
			}
			toolWhy[i] = "the search tool is never deferred"
		case t.Primary:
			toolWhy[i] = "the host's primary channel is never deferred"
		case t.AlwaysLoad:
			toolWhy[i] = "marked always-load"
		case t.Origin == Builtin && !t.Defer:
			toolWhy[i] = "a built-in tool is deferred only when it asks to be"
		case t.Origin == Builtin:
			deferrable[i] = true
			toolWhy[i] = "a built-in tool that asks to be deferred"
		default:
			deferrable[i] = true
			toolWhy[i] = "an MCP tool is deferred by default"
		}
		if deferrable[i] {
			d.DeferrableTokens += max(t.Tokens, 0)
		}
	}
	count := 0
	for _, ok := range deferrable {
		if ok {
			count++
		}
	}

	on, why := false, ""
	switch {
	case len(in.Tools) == 0:
		why = "search off: the request has no tools"
	case duplicate != "":
		why = fmt.Sprintf("search off: the tool %q appears twice in the request", duplicate)
	case in.Mode.Kind == Off:
		why = "search off: mode is off"
	case count == 0:
		why = "search off: no tool can be deferred (none is an MCP tool or a built-in that asks to be deferred)"
	case searchAt < 0:
		why = "search off: the request has no search tool"
	case !in.References && !in.Expand:
		w := in.NoReferencesWhy
		if w == "" {
			w = "the model or the endpoint does not accept tool references"
		}
		why = "search off: " + w
	case in.Mode.Kind == Auto:
		d.Threshold = window * in.Mode.percent() / 100
		if d.DeferrableTokens > d.Threshold {
			on = true
			why = fmt.Sprintf("search on (mode %s): the definitions of %s take %d tokens, more than %d%% of the %d-token context window (%d)",
				in.Mode, plural(count, "deferrable tool"), d.DeferrableTokens, in.Mode.percent(), window, d.Threshold)
		} else {
			why = fmt.Sprintf("search off (mode %s): the definitions of %s take %d tokens, not more than %d%% of the %d-token context window (%d)",
				in.Mode, plural(count, "deferrable tool"), d.DeferrableTokens, in.Mode.percent(), window, d.Threshold)
		}
	default:
		on = true
		why = fmt.Sprintf("search on (mode on): %s deferred", plural(count, "tool"))
	}
	if on && !in.References {
		d.Expand = true
		w := in.NoReferencesWhy
		if w == "" {
			w = "the model or the endpoint does not accept tool references"
		}
		why += "; " + w + ", so discovered tools are sent in full and references are written as text"
	}
	d.SearchOn = on
	d.Reasons = append(d.Reasons, Reason{Text: why})

	if on {
		d.deferred = make(map[string]bool, count)
	}
	for i, t := range in.Tools {
		var text string
		switch {
		case on && deferrable[i]:
			d.Deferred = append(d.Deferred, t.ID)
			d.deferred[t.ID] = true
			text = "deferred: " + toolWhy[i]
		case !on && t.Origin == SearchTool:
			text = "not sent: search is off"
		case on || !deferrable[i]:
			d.Loaded = append(d.Loaded, t.ID)
			text = "loaded: " + toolWhy[i]
		default:
			d.Loaded = append(d.Loaded, t.ID)
			text = "loaded: search is off"
		}
		d.Reasons = append(d.Reasons, Reason{Tool: t.ID, Text: text})
	}
	// At least one tool stays loaded. With search on the search tool is
	// loaded, so this only matters for a request whose only tool is the
	// search tool while search is off: send it rather than nothing.
	if len(d.Loaded) == 0 && searchAt >= 0 {
		id := in.Tools[searchAt].ID
		d.Loaded = append(d.Loaded, id)
		d.Reasons[1+searchAt] = Reason{Tool: id, Text: "loaded: at least one tool stays loaded"}
	}
	return d
}

// plural writes "1 tool" or "3 tools".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
