package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/deferral"
	"github.com/toolsearch/toolsearch/discovery"
)

// Conversation is the state of one conversation, all of it in the
// conversation itself: the messages (where references and announcements
// live) and the tools array last sent (so that definitions of tools that
// have since left the catalog, and the search tool's description, stay
// byte-identical).
type Conversation struct {
	// System is the system prompt, sent as is.
	System []sdk.TextBlockParam
	// Messages are the messages so far. Turn appends delta announcements to
	// the last user message.
	Messages []sdk.MessageParam
	// Tools is the tools array of the last request Turn built.
	Tools []sdk.ToolUnionParam
}

// Turn is one request, ready to send, and what went into it.
type Turn struct {
	// Params is the request: the base given to Toolset.Turn with Tools,
	// System and Messages set.
	Params sdk.MessageNewParams
	// Decision is the deferral decision, with its reasons.
	Decision deferral.Decision
	// Loaded are the tools loaded by search (and carried across
	// compaction), in first-seen order.
	Loaded []string
	// Announcement is what this turn announced (empty when nothing changed
	// or search is off).
	Announcement discovery.Announcement
	// Rewritten counts the references written as text or dropped because
	// the endpoint takes none or their tool is not sent.
	Rewritten int
	// ToolsSent counts the definitions in the tools array, ToolsDeferred
	// those with defer_loading that no reference has loaded yet (the model
	// does not see them), and ToolsVisible the others.
	ToolsSent, ToolsDeferred, ToolsVisible int
}

// Turn assembles the next request of conv: the tools array (loaded tools,
// the search tool, then discovered or deferred tools), the announcement of
// deferred tools, and the messages with every reference pointing at a tool
// that is sent. base supplies everything else (model, max_tokens, ...).
//
// With delta announcements Turn appends the announcement to the last user
// message of conv.Messages (or a new user message), and records the tools
// array in conv.Tools; earlier messages are never modified, so every byte of
// the previous request (system, tools, messages) is a prefix of this one's,
// as long as no discovered definition changed.
func (ts *Toolset) Turn(conv *Conversation, base sdk.MessageNewParams) (*Turn, error) {
	raws := make([]json.RawMessage, len(conv.Messages))
	for i, m := range conv.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		raws[i] = b
	}
	client := ""
	if ts.cfg.Search == ClientSearch {
		client = ts.searchName
	}
	h := ReadHistory(raws, client)
	loaded := h.Loaded()
	carried := h.Carried()
	turn := &Turn{Decision: ts.decision, Loaded: loaded.Names()}

	tools, sent := ts.buildTools(conv.Tools, loaded, carried)
	conv.Tools = tools
	for _, t := range tools {
		switch {
		case isDeferred(t) && !loaded.Has(nameOfUnion(t)):
			turn.ToolsDeferred++
		default:
			turn.ToolsVisible++
		}
	}
	turn.ToolsSent = len(tools)

	// Announcements.
	var snapshotText string
	if ts.decision.SearchOn {
		view := ts.deferredView()
		switch ts.cfg.Announce {
		case discovery.Snapshot:
			turn.Announcement = discovery.SnapshotOf(view, ts.cfg.Budget)
			snapshotText = turn.Announcement.Text()
		default:
			a := h.Announced.Delta(view, ts.cfg.Budget)
			if !a.Empty() {
				turn.Announcement = a
				appendUserText(conv, a.Text())
				b, err := json.Marshal(conv.Messages[len(conv.Messages)-1])
				if err != nil {
					return nil, fmt.Errorf("anthropic: announcement: %w", err)
				}
				if len(raws) == len(conv.Messages) {
					raws[len(raws)-1] = b
				} else {
					raws = append(raws, b)
				}
			}
		}
	}

	// Messages: references rewritten where the endpoint or the tools array
	// cannot take them.
	rw := rewrite{expand: ts.cfg.Wire != References || ts.decision.Expand, sent: sent}
	msgs := make([]sdk.MessageParam, len(conv.Messages))
	copy(msgs, conv.Messages)
	for i, raw := range raws {
		out, n, changed := rw.message(raw)
		if !changed {
			continue
		}
		turn.Rewritten += n
		// The rewritten message goes out as raw JSON through the SDK's
		// documented escape hatch.
		msgs[i] = param.Override[sdk.MessageParam](out)
	}
	if turn.Rewritten > 0 {
		ts.log.Debug("toolsearch: references rewritten", "count", turn.Rewritten, "expand", rw.expand)
	}
	if snapshotText != "" {
		msgs = prependUserText(msgs, snapshotText)
	}

	p := base
	p.Tools = tools
	p.System = conv.System
	p.Messages = msgs
	turn.Params = p
	return turn, nil
}

// buildTools returns the tools array of a turn and a function telling
// whether a name is in it.
func (ts *Toolset) buildTools(prev []sdk.ToolUnionParam, loaded, carried *discovery.Set) ([]sdk.ToolUnionParam, func(string) bool) {
	var out []sdk.ToolUnionParam
	in := map[string]bool{}
	put := func(name string, def sdk.ToolUnionParam) {
		if name == "" || in[name] {
			return
		}
		in[name] = true
		out = append(out, def)
	}
	prevDef := map[string]sdk.ToolUnionParam{}
	var prevOrder []string
	for _, t := range prev {
		n := nameOfUnion(t)
		prevDef[n] = t
		prevOrder = append(prevOrder, n)
	}

	if !ts.decision.SearchOn {
		for _, t := range ts.tools {
			put(t.name, ts.definition(t, false))
		}
		ts.markCache(out)
		return out, func(n string) bool { return in[n] }
	}

	// Loaded from the start: built-ins, then always-load MCP tools.
	for _, t := range ts.tools {
		if !t.deferred {
			put(t.name, ts.definition(t, false))
		}
	}
	// The search tool: kept from the previous request so that its
	// description (which names servers and counts) stays byte-identical.
	st, ok := prevDef[ts.searchName]
	if !ok {
		st = ts.searchTool()
	}
	put(ts.searchName, st)
	ts.markCache(out)

	expand := ts.decision.Expand
	deferredDef := func(name string) (sdk.ToolUnionParam, bool) {
		i, ok := ts.byName[name]
		if !ok {
			if _, hidden := ts.names.Tool(name); hidden {
				return sdk.ToolUnionParam{}, false // hidden by policy
			}
			// Gone from the catalog: keep the definition the model saw,
			// so that its references stay valid; calling it fails in the
			// host's router.
			d, ok := prevDef[name]
			return d, ok
		}
		t := ts.tools[i]
		if !t.deferred {
			return sdk.ToolUnionParam{}, false // already loaded above
		}
		return ts.definition(t, !expand && !carried.Has(name)), true
	}
	// Server-side search sends every deferred tool; the previous request's
	// order comes first so the array only grows at its end.
	if ts.cfg.Search != ClientSearch {
		for _, n := range prevOrder {
			if i, ok := ts.byName[n]; ok && ts.tools[i].deferred {
				d, _ := deferredDef(n)
				put(n, d)
			}
		}
		for _, n := range loaded.Names() {
			if d, ok := deferredDef(n); ok {
				put(n, d)
			}
		}
		for _, t := range ts.tools {
			if t.deferred {
				put(t.name, ts.definition(t, !carried.Has(t.name)))
			}
		}
		return out, func(n string) bool { return in[n] }
	}
	// Client-side search sends the tools found so far, in the order found.
	for _, n := range loaded.Names() {
		if d, ok := deferredDef(n); ok {
			put(n, d)
		}
	}
	return out, func(n string) bool { return in[n] }
}

// markCache puts a cache_control breakpoint on the last tool of tools (never
// a deferred one, which the API refuses).
func (ts *Toolset) markCache(tools []sdk.ToolUnionParam) {
	if ts.cfg.NoCacheControl || len(tools) == 0 {
		return
	}
	last := &tools[len(tools)-1]
	if isDeferred(*last) {
		return
	}
	cc := sdk.NewCacheControlEphemeralParam()
	switch {
	case last.OfTool != nil:
		p := *last.OfTool
		p.CacheControl = cc
		last.OfTool = &p
	case last.OfToolSearchToolBm25_20251119 != nil:
		p := *last.OfToolSearchToolBm25_20251119
		p.CacheControl = cc
		last.OfToolSearchToolBm25_20251119 = &p
	case last.OfToolSearchToolRegex20251119 != nil:
		p := *last.OfToolSearchToolRegex20251119
		p.CacheControl = cc
		last.OfToolSearchToolRegex20251119 = &p
	}
}

// nameOfUnion returns a tool's name, reading the JSON of a tool the SDK
// does not model.
func nameOfUnion(t sdk.ToolUnionParam) string {
	if n := t.GetName(); n != nil && *n != "" {
		return *n
	}
	b, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	var v struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Name
}

// isDeferred reports whether a tool is sent with defer_loading: true.
func isDeferred(t sdk.ToolUnionParam) bool {
	if t.OfTool != nil {
		return t.OfTool.DeferLoading.Valid() && t.OfTool.DeferLoading.Value
	}
	b, err := json.Marshal(t)
	if err != nil {
		return false
	}
	var v struct {
		DeferLoading bool `json:"defer_loading"`
	}
	_ = json.Unmarshal(b, &v)
	return v.DeferLoading
}

// appendUserText adds a text block at the end of the last message when it
// is a user message, else appends a user message holding it.
func appendUserText(conv *Conversation, text string) {
	n := len(conv.Messages)
	if n > 0 {
		if u := conv.Messages[n-1].OfUser; u != nil {
			c := *u
			c.Content = append(slices.Clip(c.Content), sdk.NewTextBlock(text))
			conv.Messages[n-1] = sdk.MessageParam{OfUser: &c}
			return
		}
	}
	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(text)))
}

// prependUserText puts a text block in front of the first message when it
// is a user message, else a user message in front of all (request copy
// only).
func prependUserText(msgs []sdk.MessageParam, text string) []sdk.MessageParam {
	if len(msgs) > 0 && msgs[0].OfUser != nil {
		c := *msgs[0].OfUser
		c.Content = append([]sdk.ContentBlockParamUnion{sdk.NewTextBlock(text)}, c.Content...)
		out := slices.Clone(msgs)
		out[0] = sdk.MessageParam{OfUser: &c}
		return out
	}
	return append([]sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(text))}, msgs...)
}

// Compact replaces conv.Messages[:keep] by a user message holding summary,
// and carries the tools loaded so far across the boundary: the summary
// message also holds their CarriedText, so that reading the compacted
// conversation yields the same loaded set, in the same order, and the same
// tools stay loaded (sent in full from now on, since the references that
// loaded them are gone). It returns the carried event.
//
// The kept messages must not begin with a user message of tool_result
// blocks whose tool_use would be cut off.
func (ts *Toolset) Compact(conv *Conversation, keep int, summary string) (discovery.Event, error) {
	if keep < 0 || keep > len(conv.Messages) {
		return discovery.Event{}, fmt.Errorf("anthropic: compact: keep %d of %d messages", keep, len(conv.Messages))
	}
	if keep < len(conv.Messages) {
		if u := conv.Messages[keep].OfUser; u != nil && keep > 0 {
			for _, b := range u.Content {
				if b.OfToolResult != nil {
					return discovery.Event{}, fmt.Errorf("anthropic: compact: message %d answers a tool_use that compaction would remove", keep)
				}
			}
		}
	}
	raws := make([]json.RawMessage, len(conv.Messages))
	for i, m := range conv.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			return discovery.Event{}, fmt.Errorf("anthropic: compact: message %d: %w", i, err)
		}
		raws[i] = b
	}
	client := ""
	if ts.cfg.Search == ClientSearch {
		client = ts.searchName
	}
	carry := discovery.Carry(ReadHistory(raws, client).Events)
	blocks := []sdk.ContentBlockParamUnion{sdk.NewTextBlock(summary)}
	if t := discovery.CarriedText(carry.Names); t != "" {
		blocks = append(blocks, sdk.NewTextBlock(t))
	}
	msgs := []sdk.MessageParam{sdk.NewUserMessage(blocks...)}
	conv.Messages = append(msgs, conv.Messages[keep:]...)
	ts.log.Debug("toolsearch: compacted", "dropped", keep, "carried", len(carry.Names))
	return carry, nil
}
