package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

// ChatConversation is a Chat Completions conversation: the messages, where
// search answers and announcements live, and the tools array last sent.
type ChatConversation struct {
	// Messages are the messages so far; ChatTurn appends delta
	// announcements.
	Messages []oai.ChatCompletionMessageParamUnion
	// Tools is the tools array of the last request ChatTurn built.
	Tools []oai.ChatCompletionToolUnionParam
}

// ChatTurn is one Chat Completions request and what went into it.
type ChatTurn struct {
	// Params is the request: the base given to ChatTurn with Tools and
	// Messages set.
	Params oai.ChatCompletionNewParams
	// Decision is the deferral decision (search emulated).
	Decision deferral.Decision
	// Loaded are the tools loaded by the search function or carried
	// across compaction, in first-seen order.
	Loaded []string
	// Announcement is what this turn announced.
	Announcement discovery.Announcement
	// ToolsSent counts the functions sent.
	ToolsSent int
}

// ChatTurn assembles the next Chat Completions request of conv. Chat
// Completions has no tool search: the search is a plain function
// (SearchToolName), its answers name the tools they load
// (discovery.LoadedText), and every tool loaded so far is sent as a plain
// function, appended in the order found. A tool that has since left the
// catalog keeps the definition from conv.Tools, so the array only grows.
// Delta announcements are appended to conv.Messages as system messages.
func (ts *Toolset) ChatTurn(conv *ChatConversation, base oai.ChatCompletionNewParams) (*ChatTurn, error) {
	raws := make([]json.RawMessage, len(conv.Messages))
	for i, m := range conv.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i, err)
		}
		raws[i] = b
	}
	d := ts.chatDecision
	h := ReadChat(raws, ts.searchName)
	loaded := discovery.Loaded(h.Events)
	turn := &ChatTurn{Decision: d, Loaded: loaded.Names()}

	prev := map[string]oai.ChatCompletionToolUnionParam{}
	for _, t := range conv.Tools {
		prev[chatToolName(t)] = t
	}
	var tools []oai.ChatCompletionToolUnionParam
	in := map[string]bool{}
	put := func(name string, t oai.ChatCompletionToolUnionParam) {
		if !in[name] {
			in[name] = true
			tools = append(tools, t)
		}
	}
	for _, b := range ts.cfg.Builtins {
		put(b.Name, chatFunction(b.Name, b.Description, b.Parameters))
	}
	for _, t := range ts.mcp {
		w := ts.names.Wire(t)
		if !d.IsDeferred(w) {
			put(w, chatFunction(w, t.Description, schema(t.InputSchema)))
		}
	}
	var snapshotText string
	if d.SearchOn {
		st, ok := prev[ts.searchName]
		if !ok {
			st = chatFunction(ts.searchName, ts.description(d), json.RawMessage(searchParameters))
		}
		put(ts.searchName, st)
		for _, n := range loaded.Names() {
			if t, ok := ts.byWire[n]; ok {
				if d.IsDeferred(n) {
					put(n, chatFunction(n, t.Description, schema(t.InputSchema)))
				}
				continue
			}
			if _, hidden := ts.names.Tool(n); hidden {
				continue // hidden by policy
			}
			if t, ok := prev[n]; ok {
				put(n, t) // gone from the catalog: keep what the model saw
			}
		}
		view := ts.deferredView(d)
		if ts.cfg.Announce == discovery.Snapshot {
			turn.Announcement = discovery.SnapshotOf(view, ts.cfg.Budget)
			snapshotText = turn.Announcement.Text()
		} else if a := h.Announced.Delta(view, ts.cfg.Budget); !a.Empty() {
			turn.Announcement = a
			conv.Messages = append(conv.Messages, oai.SystemMessage(a.Text()))
		}
	}
	conv.Tools = tools
	turn.ToolsSent = len(tools)
	msgs := slices.Clone(conv.Messages)
	if snapshotText != "" {
		// After the leading system messages (the host's prompt).
		i := 0
		for i < len(msgs) && (msgs[i].OfSystem != nil || msgs[i].OfDeveloper != nil) {
			i++
		}
		msgs = slices.Insert(msgs, i, oai.SystemMessage(snapshotText))
	}
	p := base
	p.Tools = tools
	p.Messages = msgs
	turn.Params = p
	return turn, nil
}

// chatFunction is a function tool. The definition goes through
// param.Override (the SDK's escape hatch) as raw JSON: FunctionParameters
// is a map, which would reorder the schema's keys.
func chatFunction(name, desc string, params json.RawMessage) oai.ChatCompletionToolUnionParam {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	v := struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{name, desc, params}
	b, _ := json.Marshal(v)
	return oai.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](json.RawMessage(b)))
}

func chatToolName(t oai.ChatCompletionToolUnionParam) string {
	b, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	var v struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Function.Name
}

// ChatHistory is what a Chat Completions conversation says about tool
// search.
type ChatHistory struct {
	// Events are the answers of the search function (LoadedText) and the
	// compaction carries (CarriedText), in order.
	Events []discovery.Event
	// Announced is what the announcements told the model.
	Announced discovery.State
}

// ReadChat reads a Chat Completions conversation (each message as JSON).
// LoadedText counts only in tool messages that answer a call of the search
// function searchTool.
func ReadChat(messages []json.RawMessage, searchTool string) *ChatHistory {
	h := &ChatHistory{}
	calls := map[string]bool{}
	for i, raw := range messages {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		switch m.Role {
		case "assistant":
			for _, c := range m.ToolCalls {
				if c.Function.Name == searchTool {
					calls[c.ID] = true
				}
			}
		case "tool":
			if !calls[m.ToolCallID] {
				continue
			}
			for _, text := range messageTexts(m.Content) {
				if names := discovery.ParseLoadedText(text); len(names) > 0 {
					h.Events = append(h.Events, discovery.Event{Kind: discovery.Found, Names: names, Where: fmt.Sprintf("message %d, tool %s", i, m.ToolCallID)})
				}
			}
		default:
			for _, text := range messageTexts(m.Content) {
				if discovery.IsAnnouncement(text) {
					if a, ok := discovery.ParseAnnouncement(text); ok {
						h.Announced.Apply(a)
					}
					continue
				}
				if names := discovery.ParseCarriedText(text); len(names) > 0 {
					h.Events = append(h.Events, discovery.Event{Kind: discovery.Carried, Names: names, Where: fmt.Sprintf("message %d", i)})
				}
			}
		}
	}
	return h
}

// SearchToolName is the name of the Chat Completions search function.
func (ts *Toolset) SearchToolName() string { return ts.searchName }

// ChatSearchAnswer is the answer to one call of the Chat Completions search
// function.
type ChatSearchAnswer struct {
	// Message is the tool message to append.
	Message oai.ChatCompletionMessageParamUnion
	// Loaded are the wire names of the tools loaded.
	Loaded []string
	// Result is what the engine found.
	Result search.Result
}

// AnswerChatSearch answers a call of the search function (its tool call id
// and arguments string) with a tool message: LoadedText naming the tools
// found, which the next ChatTurn sends as functions, or a plain text saying
// that nothing matched and naming the nearest servers. The error is non-nil
// only when ctx ends.
func (ts *Toolset) AnswerChatSearch(ctx context.Context, toolCallID, arguments string) (ChatSearchAnswer, error) {
	args, note := parseArgs(json.RawMessage(arguments))
	var res search.Result
	if note == "" {
		var err error
		res, err = ts.run(ctx, ts.chatDecision, args)
		switch {
		case errors.Is(err, search.ErrBadQuery):
			note = "Error: " + err.Error()
		case err != nil:
			return ChatSearchAnswer{}, fmt.Errorf("openai: tool search %q: %w", args.asked(), err)
		}
	} else {
		note = "Error: " + note
	}
	ans := ChatSearchAnswer{Result: res}
	for _, h := range res.Hits {
		ans.Loaded = append(ans.Loaded, ts.names.Wire(h.Tool))
	}
	text := note
	if text == "" {
		if len(ans.Loaded) == 0 {
			text = noMatchText(args.asked(), res)
		} else {
			text = discovery.LoadedText(ans.Loaded) + "\nThey can be called as functions from your next step."
			if len(res.Unknown) > 0 {
				text += "\nUnknown names: " + strings.Join(res.Unknown, ", ")
			}
		}
	}
	ans.Message = oai.ToolMessage(text, toolCallID)
	return ans, nil
}

// ChatCompact replaces conv.Messages[:keep] (after the leading system
// messages, which stay) by a user message holding summary and the
// CarriedText of every tool loaded so far, so that the same tools stay
// loaded.
func (ts *Toolset) ChatCompact(conv *ChatConversation, keep int, summary string) (discovery.Event, error) {
	if keep < 0 || keep > len(conv.Messages) {
		return discovery.Event{}, fmt.Errorf("openai: compact: keep %d of %d messages", keep, len(conv.Messages))
	}
	if keep < len(conv.Messages) && conv.Messages[keep].OfTool != nil {
		return discovery.Event{}, fmt.Errorf("openai: compact: message %d answers a tool call that compaction would remove", keep)
	}
	raws := make([]json.RawMessage, len(conv.Messages))
	for i, m := range conv.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			return discovery.Event{}, fmt.Errorf("openai: compact: message %d: %w", i, err)
		}
		raws[i] = b
	}
	carry := discovery.Carry(ReadChat(raws, ts.searchName).Events)
	lead := 0
	for lead < keep && (conv.Messages[lead].OfSystem != nil || conv.Messages[lead].OfDeveloper != nil) {
		lead++
	}
	text := summary
	if t := discovery.CarriedText(carry.Names); t != "" {
		text += "\n" + t
	}
	out := slices.Clone(conv.Messages[:lead])
	out = append(out, oai.UserMessage(text))
	conv.Messages = append(out, conv.Messages[keep:]...)
	return carry, nil
}
