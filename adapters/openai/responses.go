package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

// carryPrefix starts the call_id of the tool search pair Compact writes.
const carryPrefix = "call_toolsearch_carry_"

// Conversation is a Responses API conversation kept by the client (no
// previous_response_id): the input items, where tool_search outputs and
// announcements live, and the tools array last sent.
type Conversation struct {
	// Instructions is sent as the request's instructions, when not empty.
	Instructions string
	// Input are the items so far: the user's messages, the output items of
	// each response (see OutputItems) and the client's outputs.
	Input []responses.ResponseInputItemUnionParam
	// Tools is the tools array of the last request Turn built.
	Tools []responses.ToolUnionParam
}

// Turn is one Responses request, ready to send, and what went into it.
type Turn struct {
	// Params is the request: the base given to Turn with Tools, Input and
	// Instructions set.
	Params responses.ResponseNewParams
	// Strategy is how this request reaches the deferred tools, and
	// StrategyWhy why it was chosen (the model, Config.Strategy and what
	// the endpoint refused).
	Strategy    Strategy
	StrategyWhy string
	// Namespaces says whether found tools are grouped in namespaces; when
	// false they are plain functions named "server__tool".
	Namespaces bool
	// Decision is the deferral decision.
	Decision deferral.Decision
	// Loaded are the tools loaded so far (wire names), in first-seen
	// order, including tools the catalog has since lost, which stay
	// loaded with their last definition.
	Loaded []string
	// Announcement is what this turn announced.
	Announcement discovery.Announcement
	// ToolsSent counts the tools array's entries; LoadedFunctions the
	// definitions of loaded functions the history holds.
	ToolsSent, LoadedFunctions int

	// ts and shown serve Callable: the tools the request shows the model.
	ts    *Toolset
	shown map[string]bool
}

// OutputItems converts a response's output items into input items for the
// next request, through the SDK's documented escape hatch (param.Override
// with each item's raw JSON), so that no field is lost on the way.
func OutputItems(resp *responses.Response) []responses.ResponseInputItemUnionParam {
	out := make([]responses.ResponseInputItemUnionParam, 0, len(resp.Output))
	for _, item := range resp.Output {
		out = append(out, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
	}
	return out
}

// UserMessage is a user input message.
func UserMessage(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// Turn assembles the next request of conv with the strategy chosen for
// the model of base (see Strategy and Config.Endpoints). With search on,
// the tools array holds the host's built-ins, the always-load tools and the
// search (a client-executed tool_search, or the search function), and it
// never changes while the conversation goes on (the search tool's
// description is kept from conv.Tools), except under StrategyFunctions,
// where it grows by the tools found. Delta announcements are appended to
// conv.Input as developer messages.
//
// conv.Input is sent as it is, except for the items the strategy cannot
// carry, which are rewritten for this request only: a tool_search pair
// becomes a call of the search function and its output (followed by an
// additional_tools item under StrategyAdditionalTools), additional_tools
// items give way to functions in tools under StrategyFunctions, and without
// namespaces every namespace is flattened into plain functions. A tool a
// tool_search_output or additional_tools item in the history names stays
// reachable with its last definition even after the catalog lost it; a
// call to it is answered by Resolve's error. defer_loading is sent only
// beside a tool_search tool.
func (ts *Toolset) Turn(conv *Conversation, base responses.ResponseNewParams) (*Turn, error) {
	raws, err := itemsJSON(conv.Input)
	if err != nil {
		return nil, err
	}
	h := ts.readResponses(raws)
	strategy, namespaces, why := ts.choose(string(base.Model))
	d := ts.decisionFor(strategy)
	if !d.SearchOn {
		namespaces = false // every tool is a function in tools
	}
	turn := &Turn{Strategy: strategy, StrategyWhy: why, Namespaces: namespaces, Decision: d,
		Loaded: h.loaded.Names(), LoadedFunctions: len(h.defs)}

	prev := map[string]responses.ToolUnionParam{}
	for _, t := range conv.Tools {
		switch {
		case t.OfToolSearch != nil:
			prev["\x00tool_search"] = t
		default:
			if name := toolName(t); name != "" {
				prev[name] = t
			}
		}
	}
	var tools []responses.ToolUnionParam
	sent := map[string]bool{}
	put := func(name string, t responses.ToolUnionParam) {
		if !sent[name] {
			sent[name] = true
			tools = append(tools, t)
		}
	}
	for _, b := range ts.cfg.Builtins {
		put(b.Name, functionTool(b.Name, b.Description, b.Parameters, false))
	}
	for _, t := range ts.mcp {
		w := ts.names.Wire(t)
		if !d.IsDeferred(w) {
			put(w, functionTool(w, t.Description, schema(t.InputSchema), false))
		}
	}
	var snapshotText string
	if h.fnSearch && (!d.SearchOn || strategy == StrategyToolSearch) {
		// Calls of the search function in the history (sent before the
		// conversation moved here) need it in tools; with search off it
		// answers so.
		st, ok := prev[ts.searchName]
		if !ok || st.OfFunction == nil {
			st = functionTool(ts.searchName, ts.description(d), json.RawMessage(searchParameters), false)
		}
		put(ts.searchName, st)
	}
	if d.SearchOn {
		if strategy == StrategyToolSearch {
			st, ok := prev["\x00tool_search"]
			if !ok {
				st = responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{
					Execution:   responses.ToolSearchToolExecutionClient,
					Description: param.NewOpt(ts.description(d)),
					Parameters:  json.RawMessage(searchParameters),
				}}
			}
			put("\x00tool_search", st)
		} else {
			st, ok := prev[ts.searchName]
			if !ok || st.OfFunction == nil {
				st = functionTool(ts.searchName, ts.description(d), json.RawMessage(searchParameters), false)
			}
			put(ts.searchName, st)
		}
		if strategy == StrategyFunctions {
			for _, n := range h.loaded.Names() {
				if sent[n] {
					continue
				}
				if t, ok := ts.byWire[n]; ok {
					put(n, functionTool(n, t.Description, schema(t.InputSchema), false))
					continue
				}
				if _, hidden := ts.names.Tool(n); hidden {
					continue // in the catalog, hidden by Config.Visible
				}
				if def, ok := h.defs[n]; ok {
					put(n, functionTool(n, def.desc, def.params, false)) // gone: its last definition
				} else if t, ok := prev[n]; ok {
					put(n, t)
				}
			}
		}
		view := ts.deferredView(d)
		if ts.cfg.Announce == discovery.Snapshot {
			turn.Announcement = discovery.SnapshotOf(view, ts.cfg.Budget)
			snapshotText = turn.Announcement.Text()
		} else if a := h.announced.Delta(view, ts.cfg.Budget); !a.Empty() {
			turn.Announcement = a
			conv.Input = append(conv.Input, developerMessage(a.Text()))
			b, err := json.Marshal(conv.Input[len(conv.Input)-1])
			if err != nil {
				return nil, fmt.Errorf("openai: announcement: %w", err)
			}
			raws = append(raws, b)
		}
	}
	conv.Tools = tools
	turn.ToolsSent = len(tools)
	input := ts.render(conv.Input, raws, strategy, namespaces, d.SearchOn)
	if snapshotText != "" {
		input = append([]responses.ResponseInputItemUnionParam{developerMessage(snapshotText)}, input...)
	}
	p := base
	p.Tools = tools
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	if conv.Instructions != "" {
		p.Instructions = param.NewOpt(conv.Instructions)
	}
	turn.Params = p
	turn.ts, turn.shown = ts, shownFunctions(turn.Loaded, tools)
	return turn, nil
}

// itemsJSON marshals each input item.
func itemsJSON(items []responses.ResponseInputItemUnionParam) ([]json.RawMessage, error) {
	raws := make([]json.RawMessage, len(items))
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("openai: input item %d: %w", i, err)
		}
		raws[i] = b
	}
	return raws, nil
}

// toolName is the name of a function or namespace tool.
func toolName(t responses.ToolUnionParam) string {
	b, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	var v struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	_ = json.Unmarshal(b, &v)
	if v.Type != "function" && v.Type != "namespace" {
		return ""
	}
	return v.Name
}

// FunctionCallOutput is the function_call_output item answering call_id
// with a text.
func FunctionCallOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = param.NewOpt(callID)
	return item
}

func developerMessage(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleDeveloper)
}

// functionTool is a top-level function tool. It is written as raw JSON
// through param.Override, the SDK's escape hatch: FunctionToolParam keeps
// parameters as a map, which would reorder the schema's keys.
func functionTool(name, desc string, params json.RawMessage, deferred bool) responses.ToolUnionParam {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	v := struct {
		Type         string          `json:"type"`
		Name         string          `json:"name"`
		Description  string          `json:"description,omitempty"`
		Parameters   json.RawMessage `json:"parameters"`
		Strict       bool            `json:"strict"`
		DeferLoading bool            `json:"defer_loading,omitempty"`
	}{"function", name, desc, params, false, deferred}
	b, _ := json.Marshal(v)
	f := param.Override[responses.FunctionToolParam](json.RawMessage(b))
	return responses.ToolUnionParam{OfFunction: &f}
}

// toolDef is the definition of one loaded function: its namespace (""
// for a top-level function) and its fields.
type toolDef struct {
	ns, nsDesc string
	fn, desc   string
	params     json.RawMessage
}

// rawTool is a tool as items carry it.
type rawTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Tools       []rawTool       `json:"tools"`
}

// responsesHistory is what a Responses conversation says.
type responsesHistory struct {
	events    []discovery.Event
	loaded    *discovery.Set
	announced discovery.State
	// defs holds, by wire name, the last definition of each function a
	// tool_search_output or additional_tools item loaded.
	defs map[string]toolDef
	// fnSearch says whether the search function was called.
	fnSearch bool
}

// ReadResponses returns the tools loaded by a conversation (each input
// item as JSON), as wire names in first-seen order: by tool_search_output
// items (Carried events for the pair Compact writes), by additional_tools
// items, and by the answers of the search function (discovery.LoadedText).
// A tool the catalog no longer holds keeps its name ("server__tool").
func (ts *Toolset) ReadResponses(items []json.RawMessage) []discovery.Event {
	return ts.readResponses(items).events
}

func (ts *Toolset) readResponses(items []json.RawMessage) *responsesHistory {
	h := &responsesHistory{defs: map[string]toolDef{}}
	searchCalls := map[string]bool{}
	for i, raw := range items {
		var it struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Namespace string          `json:"namespace"`
			Content   json.RawMessage `json:"content"`
			Output    json.RawMessage `json:"output"`
			Tools     []rawTool       `json:"tools"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case it.Type == "tool_search_output" || it.Type == "additional_tools":
			var names []string
			for _, t := range it.Tools {
				for _, def := range defsOf(t) {
					w := ts.flatName(def.ns, def.fn)
					h.defs[w] = def
					names = append(names, w)
				}
			}
			kind := discovery.Found
			if it.Type == "tool_search_output" && strings.HasPrefix(it.CallID, carryPrefix) {
				kind = discovery.Carried
			}
			if len(names) > 0 {
				h.events = append(h.events, discovery.Event{Kind: kind, Names: names, Where: fmt.Sprintf("input item %d, %s %s", i, it.Type, it.CallID)})
			}
		case it.Type == "function_call":
			if it.Name == ts.searchName && it.Namespace == "" {
				searchCalls[it.CallID] = true
				h.fnSearch = true
			}
		case it.Type == "function_call_output":
			if !searchCalls[it.CallID] {
				continue
			}
			for _, text := range messageTexts(it.Output) {
				if names := discovery.ParseLoadedText(text); len(names) > 0 {
					h.events = append(h.events, discovery.Event{Kind: discovery.Found, Names: names, Where: fmt.Sprintf("input item %d, function_call_output %s", i, it.CallID)})
				}
			}
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			if it.Role == "assistant" {
				continue
			}
			for _, text := range messageTexts(it.Content) {
				if discovery.IsAnnouncement(text) {
					if a, ok := discovery.ParseAnnouncement(text); ok {
						h.announced.Apply(a)
					}
				}
			}
		}
	}
	h.loaded = discovery.Loaded(h.events)
	return h
}

// defsOf returns the function definitions of a tool an item carries: a
// function, or the functions of a namespace. Names that are not valid
// wire names are left out.
func defsOf(t rawTool) []toolDef {
	var out []toolDef
	switch t.Type {
	case "function":
		if validWireName(t.Name) {
			out = append(out, toolDef{fn: t.Name, desc: t.Description, params: schema(t.Parameters)})
		}
	case "namespace":
		if !validWireName(t.Name) {
			return nil
		}
		for _, m := range t.Tools {
			if (m.Type == "function" || m.Type == "") && validWireName(m.Name) {
				out = append(out, toolDef{ns: t.Name, nsDesc: t.Description, fn: m.Name, desc: m.Description, params: schema(m.Parameters)})
			}
		}
	}
	return out
}

// validWireName reports whether s is a name the APIs accept.
func validWireName(s string) bool {
	return s != "" && discovery.SafeName(s, discovery.MaxNameLen) == s
}

// flatName is the plain function name of function fn of namespace ns: the
// catalog tool's wire name when the pair routes to one, else the part of
// the namespace before "__" (the server), "__" and fn. A top-level
// function keeps its name.
func (ts *Toolset) flatName(ns, fn string) string {
	if ns == "" {
		return fn
	}
	if t, ok := ts.ns.route(ns, fn); ok {
		return ts.names.Wire(t)
	}
	server, _, _ := strings.Cut(ns, "__")
	return discovery.SafeName(server+"__"+fn, discovery.MaxNameLen)
}

// render returns the input items of a request: each item of conv as it is,
// but for those the strategy cannot carry, rewritten (see Turn).
//
// With search off every tool is in tools: the tool_search pairs and the
// additional_tools items are left out.
func (ts *Toolset) render(items []responses.ResponseInputItemUnionParam, raws []json.RawMessage, s Strategy, namespaces, searchOn bool) []responses.ResponseInputItemUnionParam {
	if s == StrategyToolSearch && namespaces && searchOn {
		return slices.Clone(items)
	}
	out := make([]responses.ResponseInputItemUnionParam, 0, len(items))
	for i, raw := range raws {
		var it struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Namespace *string         `json:"namespace"`
			Name      string          `json:"name"`
			Execution string          `json:"execution"`
			Arguments json.RawMessage `json:"arguments"`
			Tools     []rawTool       `json:"tools"`
		}
		if json.Unmarshal(raw, &it) != nil {
			out = append(out, items[i])
			continue
		}
		var defs []toolDef
		for _, t := range it.Tools {
			defs = append(defs, defsOf(t)...)
		}
		switch {
		case !searchOn && (it.Type == "tool_search_call" || it.Type == "tool_search_output" || it.Type == "additional_tools"):
		case it.Type == "tool_search_call" && s != StrategyToolSearch:
			args := string(it.Arguments)
			if len(it.Arguments) == 0 || it.Arguments[0] != '"' {
				if args == "" || args == "null" {
					args = "{}"
				}
			} else {
				_ = json.Unmarshal(it.Arguments, &args)
			}
			call := responses.ResponseInputItemParamOfFunctionCall(args, it.CallID, ts.searchName)
			call.OfFunctionCall.Status = responses.ResponseFunctionToolCallStatusCompleted
			out = append(out, call)
		case it.Type == "tool_search_output" && s != StrategyToolSearch:
			var names []string
			for _, d := range defs {
				names = append(names, ts.flatName(d.ns, d.fn))
			}
			text := "No tools were loaded."
			if len(names) > 0 {
				text = discovery.LoadedText(names)
			}
			out = append(out, FunctionCallOutput(it.CallID, text))
			if s == StrategyAdditionalTools && len(defs) > 0 {
				out = append(out, responses.ResponseInputItemParamOfAdditionalTools(ts.toolParams(defs, namespaces)))
			}
		case it.Type == "tool_search_output":
			// Under tool_search without namespaces.
			o := ts.searchOutput(it.CallID, defs, false)
			if it.Execution != "" && it.Execution != "client" {
				o.Execution = responses.ResponseToolSearchOutputItemParamExecution(it.Execution)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfToolSearchOutput: &o})
		case it.Type == "additional_tools" && s == StrategyFunctions:
			// Its tools are in the tools array.
		case it.Type == "additional_tools":
			if len(defs) > 0 {
				out = append(out, responses.ResponseInputItemParamOfAdditionalTools(ts.toolParams(defs, namespaces)))
			}
		case it.Type == "function_call" && it.Namespace != nil && !namespaces:
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				out = append(out, items[i])
				continue
			}
			name, _ := json.Marshal(ts.flatName(*it.Namespace, it.Name))
			m["name"] = name
			delete(m, "namespace")
			b, _ := json.Marshal(m)
			out = append(out, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(b)))
		default:
			out = append(out, items[i])
		}
	}
	return out
}

// toolParams are function or namespace tools for defs, without
// defer_loading: grouped in their namespaces, in order of first
// appearance, or plain functions named "server__tool".
func (ts *Toolset) toolParams(defs []toolDef, namespaces bool) []responses.ToolUnionParam {
	var out []responses.ToolUnionParam
	if !namespaces {
		for _, d := range defs {
			out = append(out, functionTool(ts.flatName(d.ns, d.fn), d.desc, d.params, false))
		}
		return out
	}
	index := map[string]int{}
	for _, d := range defs {
		if d.ns == "" {
			out = append(out, functionTool(d.fn, d.desc, d.params, false))
			continue
		}
		i, ok := index[d.ns]
		if !ok {
			i = len(out)
			index[d.ns] = i
			out = append(out, responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{Name: d.ns, Description: d.nsDesc}})
		}
		fn := &responses.NamespaceToolToolFunctionParam{Name: d.fn, Parameters: d.params, Strict: param.NewOpt(false)}
		if d.desc != "" {
			fn.Description = param.NewOpt(d.desc)
		}
		n := out[i].OfNamespace
		n.Tools = append(n.Tools, responses.NamespaceToolToolUnionParam{OfFunction: fn})
	}
	return out
}

// messageTexts returns the texts of a message content: a string, or parts
// with a "text" field.
func messageTexts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []string{s}
		}
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// ToolSearchAnswer is the answer to one search call.
type ToolSearchAnswer struct {
	// Items go into the conversation, in order: the tool_search_output (or
	// the search function's function_call_output and an additional_tools
	// item), then, when nothing matched, a developer message saying so.
	Items []responses.ResponseInputItemUnionParam
	// Loaded are the wire names of the tools loaded.
	Loaded []string
	// Result is what the engine found.
	Result search.Result
}

// AnswerToolSearch runs a client-executed tool_search_call (the call_id and
// arguments of the output item) and returns its tool_search_output: the
// tools found, grouped into their namespaces, each function with
// defer_loading: true. When nothing matches the output holds no tools and a
// developer message says so plainly, naming the nearest servers. The error
// is non-nil only when ctx ends.
func (ts *Toolset) AnswerToolSearch(ctx context.Context, callID string, arguments json.RawMessage) (ToolSearchAnswer, error) {
	found, ans, note, err := ts.find(ctx, ts.decisionFor(StrategyToolSearch), arguments)
	if err != nil {
		return ans, err
	}
	out := ts.searchOutput(callID, ts.defsFor(found), true)
	ans.Items = append(ans.Items, responses.ResponseInputItemUnionParam{OfToolSearchOutput: &out})
	if note != "" {
		ans.Items = append(ans.Items, developerMessage("tool_search: "+note))
	}
	return ans, nil
}

// AnswerSearchCall answers a function_call of the search function
// (SearchToolName; StrategyAdditionalTools and StrategyFunctions) with its
// function_call_output, whose text names the tools found
// (discovery.LoadedText), and an additional_tools item holding their
// definitions in their namespaces. Turn sends the additional_tools item
// under StrategyAdditionalTools and the tools as functions under
// StrategyFunctions. When nothing matches the output says so, naming the
// nearest servers. The error is non-nil only when ctx ends.
func (ts *Toolset) AnswerSearchCall(ctx context.Context, callID, arguments string) (ToolSearchAnswer, error) {
	found, ans, note, err := ts.find(ctx, ts.decisionFor(StrategyAdditionalTools), json.RawMessage(arguments))
	if err != nil {
		return ans, err
	}
	text := note
	if text == "" {
		text = discovery.LoadedText(ans.Loaded) + "\nThey can be called from your next step."
		if len(ans.Result.Unknown) > 0 {
			text += "\nUnknown names: " + strings.Join(ans.Result.Unknown, ", ")
		}
	}
	ans.Items = append(ans.Items, FunctionCallOutput(callID, text))
	if len(found) > 0 {
		ans.Items = append(ans.Items, responses.ResponseInputItemParamOfAdditionalTools(ts.toolParams(ts.defsFor(found), true)))
	}
	return ans, nil
}

// find runs the search of a call's arguments. note, when not empty, says
// that the arguments were bad or that nothing matched.
func (ts *Toolset) find(ctx context.Context, d deferral.Decision, arguments json.RawMessage) ([]*catalog.Tool, ToolSearchAnswer, string, error) {
	args, note := parseArgs(arguments)
	var res search.Result
	if note == "" {
		var err error
		res, err = ts.run(ctx, d, args)
		switch {
		case errors.Is(err, search.ErrBadQuery):
			note = err.Error()
		case err != nil:
			return nil, ToolSearchAnswer{}, "", fmt.Errorf("openai: tool search %q: %w", args.asked(), err)
		}
	}
	ans := ToolSearchAnswer{Result: res}
	var found []*catalog.Tool
	for _, hit := range res.Hits {
		if _, ok := ts.ns.byTool[hit.Tool]; ok {
			found = append(found, hit.Tool)
			ans.Loaded = append(ans.Loaded, ts.names.Wire(hit.Tool))
		}
	}
	if len(found) == 0 && note == "" {
		note = noMatchText(args.asked(), res)
	}
	ts.log.Debug("toolsearch: search answered", "query", args.Query, "queries", args.Queries, "loaded", ans.Loaded)
	return found, ans, note, nil
}

// parseArgs reads search arguments: a JSON object, or a JSON string holding
// one (as function arguments are sent).
func parseArgs(raw json.RawMessage) (searchArgs, string) {
	var args searchArgs
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return args, "the arguments are not valid JSON"
		}
		raw = json.RawMessage(s)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return args, fmt.Sprintf("the arguments must be {\"query\": \"...\"} or {\"queries\": [\"...\"]}: %v", err)
	}
	return args, ""
}

// run searches the deferred tools for the query and queries of args,
// answered as one merged list.
func (ts *Toolset) run(ctx context.Context, d deferral.Decision, args searchArgs) (search.Result, error) {
	if !d.SearchOn {
		return search.Result{}, fmt.Errorf("%w: tool search is off: %s", search.ErrBadQuery, d.Why())
	}
	max := args.MaxResults
	if max == 0 {
		max = ts.cfg.MaxResults
	}
	return ts.src.Index.SearchMany(ctx, search.Request{Query: args.Query, MaxResults: max, Visible: ts.searchable(d)}, args.Queries)
}

// noMatchText says plainly that nothing matched, and where to look.
func noMatchText(queries []string, res search.Result) string {
	return discovery.NoMatchAnyText(queries, res.Unknown, res.NearestServers)
}

// Resolve returns the catalog tool a function_call names (see Route), or
// an error whose text is the answer to give the model: that the tool's
// server has left the catalog (a tool the history loaded stays callable
// from the model's side, so its calls need this answer), that the server
// no longer offers it, or that no such tool exists.
func (ts *Toolset) Resolve(namespace, name string) (*catalog.Tool, error) {
	if t, ok := ts.Route(namespace, name); ok {
		return t, nil
	}
	full := name
	if namespace != "" {
		full = namespace + "." + name
	}
	if _, hidden := ts.names.Tool(ts.flatName(namespace, name)); hidden {
		return nil, fmt.Errorf("the tool %s is not available to this agent", full)
	}
	server, _, ok := strings.Cut(ts.flatName(namespace, name), "__")
	if !ok {
		return nil, fmt.Errorf("there is no tool named %s", full)
	}
	if _, there := ts.ns.byServer[server]; there {
		return nil, fmt.Errorf("the tool %s is no longer available: the server %s no longer offers it; search for another tool", full, server)
	}
	return nil, fmt.Errorf("the tool %s is no longer available: its server %s has left the catalog (disconnected or removed); do not call it again, search for another tool", full, server)
}

// Compact replaces conv.Input[:keep] by a user message holding summary,
// followed by a tool_search_call and tool_search_output pair that loads
// again every tool loaded so far, so the same tools stay loaded (Turn
// rewrites the pair for the strategy in use). A tool the catalog has lost
// keeps its last definition, so that calls to it in the kept items stay
// valid. Reading the compacted conversation yields the same loaded set in
// the same order. The kept items must not begin with the output of a call
// that compaction would remove.
func (ts *Toolset) Compact(conv *Conversation, keep int, summary string) (discovery.Event, error) {
	if keep < 0 || keep > len(conv.Input) {
		return discovery.Event{}, fmt.Errorf("openai: compact: keep %d of %d items", keep, len(conv.Input))
	}
	raws, err := itemsJSON(conv.Input)
	if err != nil {
		return discovery.Event{}, fmt.Errorf("openai: compact: %w", err)
	}
	if keep < len(raws) {
		var it struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raws[keep], &it)
		if strings.HasSuffix(it.Type, "_output") {
			return discovery.Event{}, fmt.Errorf("openai: compact: item %d is the output of a call that compaction would remove", keep)
		}
	}
	h := ts.readResponses(raws)
	carry := discovery.Carry(h.events)
	items := []responses.ResponseInputItemUnionParam{UserMessage(summary)}
	var defs []toolDef
	var names []string
	for _, n := range carry.Names {
		if t, ok := ts.byWire[n]; ok {
			defs = append(defs, ts.defsFor([]*catalog.Tool{t})...)
			names = append(names, n)
		} else if _, hidden := ts.names.Tool(n); hidden {
			continue
		} else if d, ok := h.defs[n]; ok {
			defs = append(defs, d)
			names = append(names, n)
		}
	}
	carry.Names = names
	if len(defs) > 0 {
		id := carryPrefix + fmt.Sprintf("%08x", fnv32(strings.Join(names, ",")))
		call := responses.ResponseInputItemToolSearchCallParam{
			Arguments: map[string]any{"query": "select:" + strings.Join(names, ",")},
			CallID:    param.NewOpt(id),
			Status:    "completed",
			Execution: "client",
		}
		out := ts.searchOutput(id, defs, true)
		items = append(items, responses.ResponseInputItemUnionParam{OfToolSearchCall: &call},
			responses.ResponseInputItemUnionParam{OfToolSearchOutput: &out})
	}
	conv.Input = append(items, conv.Input[keep:]...)
	return carry, nil
}

// defsFor returns the definitions of catalog tools, in their namespaces.
func (ts *Toolset) defsFor(tools []*catalog.Tool) []toolDef {
	var out []toolDef
	for _, t := range tools {
		n, ok := ts.ns.byTool[t]
		if !ok {
			continue
		}
		out = append(out, toolDef{ns: n.Name, nsDesc: n.Description, fn: ts.ns.fn[t], desc: t.Description, params: schema(t.InputSchema)})
	}
	return out
}

// searchOutput is a client tool_search_output loading defs, each function
// with defer_loading: true: grouped into their namespaces in order of first
// appearance, or, without namespaces, as plain functions "server__tool".
func (ts *Toolset) searchOutput(callID string, defs []toolDef, namespaces bool) responses.ResponseToolSearchOutputItemParam {
	tools := []responses.ResponseToolSearchOutputItemParamToolUnion{}
	index := map[string]int{}
	for _, d := range defs {
		if !namespaces || d.ns == "" {
			f := functionTool(ts.flatName(d.ns, d.fn), d.desc, d.params, true)
			tools = append(tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfFunction: f.OfFunction})
			continue
		}
		i, ok := index[d.ns]
		if !ok {
			i = len(tools)
			index[d.ns] = i
			tools = append(tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfNamespace: &responses.ToolSearchOutputNamespaceToolParam{Name: d.ns, Description: d.nsDesc}})
		}
		fn := &responses.ToolSearchOutputNamespaceToolToolFunctionParam{
			Name: d.fn,
			// Parameters is an `any`: the raw schema keeps its bytes and
			// key order.
			Parameters:   d.params,
			Strict:       param.NewOpt(false),
			DeferLoading: param.NewOpt(true),
		}
		if d.desc != "" {
			fn.Description = param.NewOpt(d.desc)
		}
		n := tools[i].OfNamespace
		n.Tools = append(n.Tools, responses.ToolSearchOutputNamespaceToolToolUnionParam{OfFunction: fn})
	}
	return responses.ResponseToolSearchOutputItemParam{
		Tools:     tools,
		CallID:    param.NewOpt(callID),
		Status:    responses.ResponseToolSearchOutputItemParamStatusCompleted,
		Execution: responses.ResponseToolSearchOutputItemParamExecutionClient,
	}
}

// AnswerSearches answers the searches of a response: each client
// tool_search_call (AnswerToolSearch) and each call of the search function
// (AnswerSearchCall). It returns the items to append to the conversation
// after OutputItems(resp), and the other function calls, for the host to
// run (Resolve leads each to its catalog tool). The error is non-nil only
// when ctx ends.
func (ts *Toolset) AnswerSearches(ctx context.Context, resp *responses.Response) ([]responses.ResponseInputItemUnionParam, []responses.ResponseFunctionToolCall, error) {
	var items []responses.ResponseInputItemUnionParam
	var calls []responses.ResponseFunctionToolCall
	for _, item := range resp.Output {
		switch item.Type {
		case "tool_search_call":
			call := item.AsToolSearchCall()
			if call.Execution != "client" {
				continue
			}
			args, err := json.Marshal(call.Arguments)
			if err != nil {
				args = []byte(`{}`)
			}
			ans, err := ts.AnswerToolSearch(ctx, call.CallID, args)
			if err != nil {
				return nil, nil, err
			}
			items = append(items, ans.Items...)
		case "function_call":
			call := item.AsFunctionCall()
			if call.Name != ts.searchName || call.Namespace != "" {
				calls = append(calls, call)
				continue
			}
			ans, err := ts.AnswerSearchCall(ctx, call.CallID, call.Arguments)
			if err != nil {
				return nil, nil, err
			}
			items = append(items, ans.Items...)
		}
	}
	return items, calls, nil
}
