package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
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
	// Strategy is how discovered tools reach the model in this request,
	// and StrategyWhy why it was chosen (configured, chosen for the
	// endpoint and model, or downgraded after a refusal).
	Strategy    Strategy
	StrategyWhy string
	// Betas are the anthropic-beta values the request needs; Options
	// returns them as request options.
	Betas []string
	// Decision is the deferral decision, with its reasons.
	Decision deferral.Decision
	// Loaded are the tools in effect (loaded by search, carried across
	// compaction or added by tool_addition, less those withdrawn), in
	// first-seen order.
	Loaded []string
	// Added and Removed are the tools this turn's system message enables
	// (tool_addition) and withdraws (tool_removal), under Inline and
	// ReferenceAdd.
	Added, Removed []string
	// Kept are the tools gone from the catalog whose last definition is
	// still sent, because a reference in the history names them or, under
	// ReferenceAdd, to keep the tools array as it was; answer their calls
	// with GoneResult.
	Kept []string
	// Announcement is what this turn announced (empty when nothing changed
	// or search is off).
	Announcement discovery.Announcement
	// Rewritten counts the references written as text or dropped because
	// the endpoint takes none or their tool is not sent.
	Rewritten int
	// ToolsSent counts the definitions in the tools array, ToolsDeferred
	// those with defer_loading that nothing has loaded yet (the model does
	// not see them), and ToolsVisible the others. ToolsInline counts the
	// definitions the turn added inline.
	ToolsSent, ToolsDeferred, ToolsVisible, ToolsInline int

	// visible are the tools the request shows the model (see Callable);
	// deferred and deferredFold tell a deferred tool not loaded, by its
	// exact name and by a name that differs only in case; searchName is
	// the search tool's name.
	visible      map[string]bool
	deferred     func(string) bool
	deferredFold func(string) string
	searchName   string
}

// Options returns the request options the turn needs: one anthropic-beta
// header value per beta of Betas.
func (t *Turn) Options() []option.RequestOption {
	var out []option.RequestOption
	for _, b := range t.Betas {
		out = append(out, option.WithHeaderAdd("anthropic-beta", b))
	}
	return out
}

// Turn assembles the next request of conv: the tools array (loaded tools,
// the search tool, then discovered or deferred tools, as the strategy
// wants), the announcement of deferred tools, the system message that adds
// the tools found since the last request (Inline, ReferenceAdd), and the
// messages with every reference pointing at a tool that is sent. base
// supplies everything else (model, max_tokens, ...).
//
// Turn appends to conv.Messages only: a delta announcement to the last user
// message (or a new user message), and a {"role":"system"} message of
// tool_addition and tool_removal blocks; it records the tools array in
// conv.Tools. Earlier messages are never modified, so every byte of the
// previous request (system, tools, messages) is a prefix of this one's, as
// long as the strategy stays the same and no discovered definition
// changed. After a downgrade the request renders the history for the
// plainer strategy (see Strategy); conv itself keeps what was appended.
func (ts *Toolset) Turn(conv *Conversation, base sdk.MessageNewParams) (*Turn, error) {
	model := string(base.Model)
	if model == "" {
		model = ts.cfg.Model
	}
	strat, why := ts.Strategy(model)
	afterAssistant := endsWithAssistant(conv.Messages)
	raws, err := marshalMessages(conv.Messages)
	if err != nil {
		return nil, err
	}
	client := ""
	if ts.cfg.Search == ClientSearch {
		client = ts.searchName
	}
	h := ReadHistory(raws, client)
	active := h.Active()
	turn := &Turn{Decision: ts.decision, Loaded: active.Names(), Strategy: strat, StrategyWhy: why}
	if ts.decision.SearchOn {
		turn.Betas = strat.Betas()
	}

	tools, sent, kept := ts.buildTools(conv.Tools, strat, h, active)
	conv.Tools = tools
	turn.Kept = kept
	for _, t := range tools {
		switch {
		case isDeferred(t) && !active.Has(nameOfUnion(t)):
			turn.ToolsDeferred++
		default:
			turn.ToolsVisible++
		}
	}
	turn.ToolsSent = len(tools)
	turn.visible = make(map[string]bool, len(tools)+len(active.Names()))
	for _, t := range tools {
		if n := nameOfUnion(t); !isDeferred(t) || active.Has(n) {
			turn.visible[n] = true
		}
	}
	for _, n := range active.Names() {
		turn.visible[n] = true
	}
	if ts.decision.SearchOn {
		turn.searchName = ts.searchName
	}
	turn.deferred = func(name string) bool {
		i, ok := ts.byName[name]
		return ok && ts.tools[i].deferred && !turn.visible[name]
	}
	turn.deferredFold = func(name string) string {
		for n, i := range ts.byName {
			if strings.EqualFold(n, name) && ts.tools[i].deferred && !turn.visible[n] {
				return n
			}
		}
		return ""
	}

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

	// Tool changes since the last request, in a system message of their own.
	if ts.decision.SearchOn && strat.UsesAdditions() && !afterAssistant {
		msg, added, removed, inline := ts.toolChanges(strat, h, active, sent)
		if msg != nil {
			conv.Messages = append(conv.Messages, param.Override[sdk.MessageParam](msg))
			raws = append(raws, msg)
			turn.Added, turn.Removed, turn.ToolsInline = added, removed, inline
		}
	}

	// Messages: the history rendered for the strategy, and references
	// rewritten where the endpoint or the tools array cannot take them.
	rendered, renderedChanged := messages.RenderHistory(raws, strat, sent, ts.hidden)
	expand := ts.cfg.Wire != References || ts.decision.Expand || strat == Plain
	msgs := make([]sdk.MessageParam, 0, len(rendered))
	for i, raw := range rendered {
		out, n, changed := messages.RewriteReferences(raw, expand, sent)
		turn.Rewritten += n
		switch {
		case changed:
			// A rewritten message goes out as raw JSON through the SDK's
			// documented escape hatch.
			msgs = append(msgs, param.Override[sdk.MessageParam](out))
		case renderedChanged:
			msgs = append(msgs, param.Override[sdk.MessageParam](raw))
		default:
			msgs = append(msgs, conv.Messages[i])
		}
	}
	if turn.Rewritten > 0 {
		ts.log.Debug("toolsearch: references rewritten", "count", turn.Rewritten, "expand", expand)
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

// endsWithAssistant reports whether the last message is the assistant's (a
// prefill, or a turn that paused): no system message may follow it, so the
// tool changes wait for the next user message.
func endsWithAssistant(msgs []sdk.MessageParam) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].OfAssistant != nil
}

// marshalMessages returns the JSON of each message.
func marshalMessages(msgs []sdk.MessageParam) ([]json.RawMessage, error) {
	raws := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		raws[i] = b
	}
	return raws, nil
}

// buildTools returns the tools array of a turn, a function telling whether
// a name is in it, and the tools kept although the catalog lost them.
func (ts *Toolset) buildTools(prev []sdk.ToolUnionParam, strat Strategy, h *History, active *discovery.Set) ([]sdk.ToolUnionParam, func(string) bool, []string) {
	var out []sdk.ToolUnionParam
	var kept []string
	in := map[string]bool{}
	put := func(name string, def sdk.ToolUnionParam) {
		if name == "" || in[name] {
			return
		}
		in[name] = true
		out = append(out, def)
	}
	sentFn := func(n string) bool { return in[n] }
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
		return out, sentFn, nil
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

	expand := ts.decision.Expand || strat == Plain
	// full says whether a tool in tools goes without defer_loading: when
	// the endpoint takes no references, and, under Classic, for a tool in
	// effect that no reference loads (carried across compaction, or found
	// by a text answer or a tool_addition before a downgrade).
	full := func(name string) bool {
		if expand {
			return true
		}
		return !strat.UsesAdditions() && active.Has(name) && !h.Referenced.Has(name)
	}
	// deferredDef is the definition of a deferred tool, or of one gone from
	// the catalog that must stay (never drop a tool the history names).
	deferredDef := func(name string) (sdk.ToolUnionParam, bool) {
		i, ok := ts.byName[name]
		if !ok {
			if _, hidden := ts.names.Tool(name); hidden {
				return sdk.ToolUnionParam{}, false // hidden by policy
			}
			// Gone from the catalog: keep the definition the model saw,
			// so that the history's references stay valid; a call gets
			// GoneResult.
			if d, ok := prevDef[name]; ok {
				kept = append(kept, name)
				return d, true
			}
			if raw, ok := h.Definitions[name]; ok && !expand {
				kept = append(kept, name)
				return deferredRaw(raw), true
			}
			return sdk.ToolUnionParam{}, false
		}
		t := ts.tools[i]
		if !t.deferred {
			return sdk.ToolUnionParam{}, false // already loaded above
		}
		return ts.definition(t, !full(name)), true
	}
	putDeferred := func(n string) {
		if in[n] {
			return
		}
		if d, ok := deferredDef(n); ok {
			put(n, d)
		}
	}
	// mustDeclare are the names the history needs in tools: those a
	// tool_reference names, and those a tool_addition or tool_removal names
	// by reference without an inline definition before it.
	mustDeclare := h.Referenced.Names()
	for _, c := range h.Changes {
		if c.Kind == typeToolReference && h.Definitions[c.Name] == nil {
			mustDeclare = append(mustDeclare, c.Name)
		}
	}

	switch {
	case ts.cfg.Search != ClientSearch || strat == ReferenceAdd:
		// Every deferred tool is declared; the previous request's order
		// comes first so the array only grows at its end. Under
		// ReferenceAdd a tool gone from the catalog stays declared too (the
		// engine no longer finds it, a tool_removal withdraws it); the
		// API's own search would find it, so there it stays only while a
		// reference names it.
		for _, n := range prevOrder {
			if strat == ReferenceAdd || ts.available(n) {
				putDeferred(n)
			}
		}
		for _, n := range active.Names() {
			putDeferred(n)
		}
		for _, n := range mustDeclare {
			putDeferred(n)
		}
		if strat == ReferenceAdd {
			// Tools a downgrade from Inline left defined in the history only.
			for _, c := range h.Changes {
				if c.Kind == typeToolDefinition {
					putDeferred(c.Name)
				}
			}
		}
		for _, t := range ts.tools {
			if t.deferred {
				putDeferred(t.name)
			}
		}
	case strat == Inline:
		// Only what the history's references need; discovered tools are
		// added inline.
		for _, n := range mustDeclare {
			putDeferred(n)
		}
	default:
		// Classic and Plain: the tools in effect, in the order found, and
		// those the history's references name.
		for _, n := range active.Names() {
			putDeferred(n)
		}
		for _, n := range mustDeclare {
			putDeferred(n)
		}
	}
	return out, sentFn, kept
}

// deferredRaw is a definition from the history, sent with defer_loading.
func deferredRaw(raw json.RawMessage) sdk.ToolUnionParam {
	obj, err := parseObject(raw)
	if err != nil {
		return param.Override[sdk.ToolUnionParam](raw)
	}
	obj.Del("cache_control")
	obj.Set("defer_loading", json.RawMessage("true"))
	return param.Override[sdk.ToolUnionParam](obj.Marshal())
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
