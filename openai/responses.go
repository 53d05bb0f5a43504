package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/deferral"
	"github.com/toolsearch/toolsearch/discovery"
	"github.com/toolsearch/toolsearch/search"
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
	// Decision is the deferral decision.
	Decision deferral.Decision
	// Loaded are the tools loaded by tool_search so far (wire names), in
	// first-seen order.
	Loaded []string
	// Announcement is what this turn announced.
	Announcement discovery.Announcement
	// ToolsSent counts the tools array's entries; LoadedFunctions the
	// functions loaded through tool_search_output items in the history.
	ToolsSent, LoadedFunctions int
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

// Turn assembles the next request of conv. With search on, the tools array
// holds the host's built-ins, the always-load tools and a client-executed
// tool_search, and never changes while the conversation goes on (the
// tool_search description is kept from conv.Tools); delta announcements
// are appended to conv.Input as developer messages.
func (ts *Toolset) Turn(conv *Conversation, base responses.ResponseNewParams) (*Turn, error) {
	raws := make([]json.RawMessage, len(conv.Input))
	for i, it := range conv.Input {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("openai: input item %d: %w", i, err)
		}
		raws[i] = b
	}
	h := ts.readResponses(raws)
	d := ts.decision
	turn := &Turn{Decision: d, Loaded: h.loaded.Names(), LoadedFunctions: h.functions}

	prev := map[string]responses.ToolUnionParam{}
	for _, t := range conv.Tools {
		if t.OfToolSearch != nil {
			prev["tool_search"] = t
		}
	}
	var tools []responses.ToolUnionParam
	for _, b := range ts.cfg.Builtins {
		tools = append(tools, functionTool(b.Name, b.Description, b.Parameters, false))
	}
	for _, t := range ts.mcp {
		w := ts.names.Wire(t)
		if !d.IsDeferred(w) {
			tools = append(tools, functionTool(w, t.Description, schema(t.InputSchema), false))
		}
	}
	var snapshotText string
	if d.SearchOn {
		st, ok := prev["tool_search"]
		if !ok {
			st = responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{
				Execution:   responses.ToolSearchToolExecutionClient,
				Description: param.NewOpt(ts.description(d)),
				Parameters:  json.RawMessage(searchParameters),
			}}
		}
		tools = append(tools, st)
		view := ts.deferredView(d)
		if ts.cfg.Announce == discovery.Snapshot {
			turn.Announcement = discovery.SnapshotOf(view, ts.cfg.Budget)
			snapshotText = turn.Announcement.Text()
		} else if a := h.announced.Delta(view, ts.cfg.Budget); !a.Empty() {
			turn.Announcement = a
			conv.Input = append(conv.Input, developerMessage(a.Text()))
		}
	}
	conv.Tools = tools
	turn.ToolsSent = len(tools)
	input := append([]responses.ResponseInputItemUnionParam(nil), conv.Input...)
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
	return turn, nil
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

// responsesHistory is what a Responses conversation says.
type responsesHistory struct {
	events    []discovery.Event
	loaded    *discovery.Set
	announced discovery.State
	functions int
}

// ReadResponses returns the tools loaded by the tool_search_output items of
// a conversation (each input item as JSON), as wire names in first-seen
// order, with Carried events for the pair Compact writes.
func (ts *Toolset) ReadResponses(items []json.RawMessage) []discovery.Event {
	return ts.readResponses(items).events
}

func (ts *Toolset) readResponses(items []json.RawMessage) *responsesHistory {
	h := &responsesHistory{}
	for i, raw := range items {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			CallID  string          `json:"call_id"`
			Content json.RawMessage `json:"content"`
			Tools   []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Tools []struct {
					Type string `json:"type"`
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"tools"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case it.Type == "tool_search_output":
			var names []string
			for _, t := range it.Tools {
				switch t.Type {
				case "namespace":
					for _, m := range t.Tools {
						h.functions++
						if tool, ok := ts.ns.route(t.Name, m.Name); ok {
							names = append(names, ts.names.Wire(tool))
						}
					}
				case "function":
					h.functions++
					if tool, ok := ts.byWire[t.Name]; ok {
						names = append(names, ts.names.Wire(tool))
					}
				}
			}
			kind := discovery.Found
			if strings.HasPrefix(it.CallID, carryPrefix) {
				kind = discovery.Carried
			}
			if len(names) > 0 {
				h.events = append(h.events, discovery.Event{Kind: kind, Names: names, Where: fmt.Sprintf("input item %d, tool_search_output %s", i, it.CallID)})
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

// ToolSearchAnswer is the answer to one tool_search_call.
type ToolSearchAnswer struct {
	// Items go into the conversation: the tool_search_output, then, when
	// nothing matched, a developer message saying so.
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
	args, note := parseArgs(arguments)
	var res search.Result
	if note == "" {
		var err error
		res, err = ts.run(ctx, ts.decision, args)
		switch {
		case errors.Is(err, search.ErrBadQuery):
			note = err.Error()
		case err != nil:
			return ToolSearchAnswer{}, fmt.Errorf("openai: tool search %q: %w", args.asked(), err)
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
	out := ts.output(callID, found)
	ans.Items = append(ans.Items, responses.ResponseInputItemUnionParam{OfToolSearchOutput: &out})
	if len(ans.Loaded) == 0 {
		if note == "" {
			note = noMatchText(args.asked(), res)
		}
		ans.Items = append(ans.Items, developerMessage("tool_search: "+note))
	}
	ts.log.Debug("toolsearch: tool_search answered", "query", args.Query, "queries", args.Queries, "loaded", ans.Loaded)
	return ans, nil
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

// Compact replaces conv.Input[:keep] by a user message holding summary,
// followed by a tool_search_call and tool_search_output pair that loads
// again every tool loaded so far (those still in the catalog), so the same
// tools stay loaded. Reading the compacted conversation yields the same
// loaded set in the same order (less tools that left the catalog). The
// kept items must not begin with the output of a call that compaction
// would remove.
func (ts *Toolset) Compact(conv *Conversation, keep int, summary string) (discovery.Event, error) {
	if keep < 0 || keep > len(conv.Input) {
		return discovery.Event{}, fmt.Errorf("openai: compact: keep %d of %d items", keep, len(conv.Input))
	}
	raws := make([]json.RawMessage, len(conv.Input))
	for i, it := range conv.Input {
		b, err := json.Marshal(it)
		if err != nil {
			return discovery.Event{}, fmt.Errorf("openai: compact: item %d: %w", i, err)
		}
		raws[i] = b
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
	carry := discovery.Carry(ts.readResponses(raws).events)
	items := []responses.ResponseInputItemUnionParam{UserMessage(summary)}
	if len(carry.Names) > 0 {
		id := carryPrefix + fmt.Sprintf("%08x", fnv32(strings.Join(carry.Names, ",")))
		query := "select:" + strings.Join(carry.Names, ",")
		call := responses.ResponseInputItemToolSearchCallParam{
			Arguments: map[string]any{"query": query},
			CallID:    param.NewOpt(id),
			Status:    "completed",
			Execution: "client",
		}
		items = append(items, responses.ResponseInputItemUnionParam{OfToolSearchCall: &call})
		ans, err := ts.answerNames(id, carry.Names)
		if err != nil {
			return discovery.Event{}, err
		}
		items = append(items, ans)
	}
	conv.Input = append(items, conv.Input[keep:]...)
	return carry, nil
}

// answerNames is the tool_search_output that loads the named tools (those
// still in the catalog).
func (ts *Toolset) answerNames(callID string, names []string) (responses.ResponseInputItemUnionParam, error) {
	var tools []*catalog.Tool
	for _, n := range names {
		if t, ok := ts.byWire[n]; ok {
			tools = append(tools, t)
		}
	}
	out := ts.output(callID, tools)
	return responses.ResponseInputItemUnionParam{OfToolSearchOutput: &out}, nil
}

// output is a client tool_search_output loading tools, grouped into their
// namespaces in order of first appearance, each function with
// defer_loading: true.
func (ts *Toolset) output(callID string, found []*catalog.Tool) responses.ResponseToolSearchOutputItemParam {
	var order []*Namespace
	members := map[*Namespace][]*catalog.Tool{}
	for _, t := range found {
		n, ok := ts.ns.byTool[t]
		if !ok {
			continue
		}
		if _, seen := members[n]; !seen {
			order = append(order, n)
		}
		members[n] = append(members[n], t)
	}
	tools := []responses.ResponseToolSearchOutputItemParamToolUnion{}
	for _, n := range order {
		nsp := &responses.ToolSearchOutputNamespaceToolParam{Name: n.Name, Description: n.Description}
		for _, t := range members[n] {
			fn := &responses.ToolSearchOutputNamespaceToolToolFunctionParam{
				Name: ts.ns.fn[t],
				// Parameters is an `any`: the raw schema keeps its bytes
				// and key order.
				Parameters:   schema(t.InputSchema),
				Strict:       param.NewOpt(false),
				DeferLoading: param.NewOpt(true),
			}
			if t.Description != "" {
				fn.Description = param.NewOpt(t.Description)
			}
			nsp.Tools = append(nsp.Tools, responses.ToolSearchOutputNamespaceToolToolUnionParam{OfFunction: fn})
		}
		tools = append(tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfNamespace: nsp})
	}
	return responses.ResponseToolSearchOutputItemParam{
		Tools:     tools,
		CallID:    param.NewOpt(callID),
		Status:    responses.ResponseToolSearchOutputItemParamStatusCompleted,
		Execution: responses.ResponseToolSearchOutputItemParamExecutionClient,
	}
}
