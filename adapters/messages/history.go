package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/core/discovery"
)

// Content block types the package reads.
const (
	TypeText                 = "text"
	TypeToolUse              = "tool_use"
	TypeToolResult           = "tool_result"
	TypeToolReference        = "tool_reference"
	TypeServerToolUse        = "server_tool_use"
	TypeToolSearchToolResult = "tool_search_tool_result"
	TypeToolAddition         = "tool_addition"
	TypeToolRemoval          = "tool_removal"
	TypeToolDefinition       = "tool_definition"
	TypeCompaction           = "compaction"
)

// rawBlock is a content block, as far as discovery needs to read it.
type rawBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	// Tool is the tool of a tool_addition or tool_removal block.
	Tool json.RawMessage `json:"tool"`
	// ToolChanges are the tool_addition and tool_removal entries of a
	// compaction block.
	ToolChanges []json.RawMessage `json:"tool_changes"`
}

// changeTool is the tool of a tool_addition or tool_removal: a
// tool_reference (a name), a tool_definition (a whole tool), or an MCP
// tool or toolset reference.
type changeTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	ServerName string          `json:"server_name"`
	Definition json.RawMessage `json:"definition"`
}

// Change is a tool_addition or tool_removal read from the history: in a
// {"role":"system"} message, or in a compaction block's tool_changes.
type Change struct {
	// Remove is true for a tool_removal.
	Remove bool
	// Name is the tool's name (for an MCP toolset reference, "").
	Name string
	// Kind is the type of the change's tool: tool_reference,
	// tool_definition, mcp_tool_reference or mcp_toolset_reference.
	Kind string
	// Definition is the definition of a tool_definition, as sent.
	Definition json.RawMessage
	// Where locates the change, for people reading a report.
	Where string
	// Compacted is true for a change read from a compaction block's
	// tool_changes, which the endpoint wrote, rather than from a system
	// message, which the client wrote.
	Compacted bool
}

// rawMessage is a message of the messages array.
type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// searchResultContent is the content of a tool_search_tool_result block.
type searchResultContent struct {
	Type           string     `json:"type"`
	ErrorCode      string     `json:"error_code"`
	ToolReferences []rawBlock `json:"tool_references"`
}

// History is what a conversation says about tool search.
type History struct {
	// Events are the points where tools were loaded, in conversation order:
	// tool_reference blocks in tool_result content, tool_search_tool_result
	// blocks, LoadedText in answers of the client search tool, and
	// CarriedText left by Compact.
	Events []discovery.Event
	// Announced is what the announcement blocks of the conversation told
	// the model.
	Announced discovery.State
	// Announcements counts the announcement blocks read.
	Announcements int
	// Changes are the tool_addition and tool_removal blocks of system
	// messages and compaction blocks, in conversation order.
	Changes []Change
	// Referenced holds the tools a tool_reference block of the history
	// names (in a tool_result or a tool_search_tool_result): they must stay
	// in tools as long as the reference is in the conversation.
	Referenced discovery.Set
	// Definitions holds, per tool name, the last definition a
	// tool_definition of the history gave.
	Definitions map[string]json.RawMessage

	// order interleaves Events and Changes: the index in Events, or
	// -1-(index in Changes).
	order []int
}

// Active returns the tools in effect at the end of the conversation, in
// first-seen order: those loaded by search, carried across compaction or
// added by a tool_addition, less those a later tool_removal withdrew.
func (h *History) Active() *discovery.Set {
	var names []string
	on := map[string]bool{}
	for _, o := range h.order {
		if o >= 0 {
			for _, n := range h.Events[o].Names {
				if n != "" && !on[n] {
					on[n] = true
					names = append(names, n)
				}
			}
			continue
		}
		c := h.Changes[-1-o]
		if c.Name == "" {
			continue
		}
		switch {
		case c.Remove && on[c.Name]:
			delete(on, c.Name)
			names = slices.DeleteFunc(names, func(n string) bool { return n == c.Name })
		case !c.Remove && !on[c.Name]:
			on[c.Name] = true
			names = append(names, c.Name)
		}
	}
	s := &discovery.Set{}
	s.Add(names...)
	return s
}

// Added returns the tools a tool_addition of the history enabled and no
// later tool_removal withdrew.
func (h *History) Added() *discovery.Set {
	var names []string
	on := map[string]bool{}
	for _, c := range h.Changes {
		if c.Name == "" {
			continue
		}
		if c.Remove {
			if on[c.Name] {
				delete(on, c.Name)
				names = slices.DeleteFunc(names, func(n string) bool { return n == c.Name })
			}
			continue
		}
		if !on[c.Name] {
			on[c.Name] = true
			names = append(names, c.Name)
		}
	}
	s := &discovery.Set{}
	s.Add(names...)
	return s
}

func (h *History) addEvent(e discovery.Event) {
	h.order = append(h.order, len(h.Events))
	h.Events = append(h.Events, e)
}

func (h *History) addChange(c Change) {
	h.order = append(h.order, -1-len(h.Changes))
	h.Changes = append(h.Changes, c)
	if c.Kind == TypeToolDefinition && c.Name != "" && len(c.Definition) > 0 {
		if h.Definitions == nil {
			h.Definitions = map[string]json.RawMessage{}
		}
		h.Definitions[c.Name] = c.Definition
	}
}

// readChange reads a tool_addition or tool_removal block.
func readChange(b rawBlock, where string) (Change, bool) {
	var t changeTool
	if json.Unmarshal(b.Tool, &t) != nil {
		return Change{}, false
	}
	c := Change{Remove: b.Type == TypeToolRemoval, Kind: t.Type, Name: t.Name, Where: where}
	if t.Type == TypeToolDefinition {
		c.Definition = t.Definition
		var d struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t.Definition, &d) != nil {
			return Change{}, false
		}
		c.Name = d.Name
	}
	return c, true
}

// ClientDefinitions returns, per tool name, the last definition a
// tool_definition of a system message gave: the definitions the client
// wrote, without those of compaction blocks, which the endpoint wrote.
func (h *History) ClientDefinitions() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, c := range h.Changes {
		if c.Kind == TypeToolDefinition && !c.Compacted && c.Name != "" && len(c.Definition) > 0 {
			out[c.Name] = c.Definition
		}
	}
	return out
}

// Loaded returns the loaded tools in first-seen order.
func (h *History) Loaded() *discovery.Set { return discovery.Loaded(h.Events) }

// Carried returns the tools carried across a compaction boundary.
func (h *History) Carried() *discovery.Set {
	s := &discovery.Set{}
	for _, e := range h.Events {
		if e.Kind == discovery.Carried {
			s.Add(e.Names...)
		}
	}
	return s
}

// ReadHistory reads the messages of a conversation, each the JSON of one
// element of the Messages API's messages array. searchTool is the name of
// the client-side search tool ("" for none): LoadedText is honoured only in
// the results of its calls, so that a tool's own output cannot load tools.
// Messages that are not valid JSON are skipped.
func ReadHistory(messages []json.RawMessage, searchTool string) *History {
	h := &History{}
	searchCalls := map[string]bool{}
	for i, raw := range messages {
		var m rawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		blocks := contentBlocks(m.Content)
		for j, b := range blocks {
			where := fmt.Sprintf("message %d, block %d", i, j)
			switch b.Type {
			case TypeToolUse:
				if searchTool != "" && b.Name == searchTool {
					searchCalls[b.ID] = true
				}
			case TypeToolResult:
				var names []string
				for _, c := range contentBlocks(b.Content) {
					switch {
					case c.Type == TypeToolReference:
						names = append(names, c.ToolName)
						h.Referenced.Add(c.ToolName)
					case c.Type == TypeText && searchCalls[b.ToolUseID]:
						names = append(names, discovery.ParseLoadedText(c.Text)...)
					}
				}
				if len(names) > 0 {
					h.addEvent(discovery.Event{Kind: discovery.Found, Names: names, Where: where + ", tool_result " + b.ToolUseID})
				}
			case TypeToolSearchToolResult:
				var c searchResultContent
				if json.Unmarshal(b.Content, &c) != nil {
					continue
				}
				var names []string
				for _, r := range c.ToolReferences {
					names = append(names, r.ToolName)
				}
				h.Referenced.Add(names...)
				if len(names) > 0 {
					h.addEvent(discovery.Event{Kind: discovery.Found, Names: names, Where: where + ", tool_search_tool_result " + b.ToolUseID})
				}
			case TypeToolAddition, TypeToolRemoval:
				if m.Role != "system" {
					continue // the API takes them in system messages only
				}
				if c, ok := readChange(b, where); ok {
					h.addChange(c)
				}
			case TypeCompaction:
				for k, tc := range b.ToolChanges {
					var cb rawBlock
					if json.Unmarshal(tc, &cb) != nil || (cb.Type != TypeToolAddition && cb.Type != TypeToolRemoval) {
						continue
					}
					if c, ok := readChange(cb, fmt.Sprintf("%s, tool_changes %d", where, k)); ok {
						c.Compacted = true
						h.addChange(c)
					}
				}
			case TypeText:
				if m.Role == "assistant" {
					continue
				}
				if discovery.IsAnnouncement(b.Text) {
					if a, ok := discovery.ParseAnnouncement(b.Text); ok {
						h.Announced.Apply(a)
						h.Announcements++
					}
					continue
				}
				if names := discovery.ParseCarriedText(b.Text); len(names) > 0 {
					h.addEvent(discovery.Event{Kind: discovery.Carried, Names: names, Where: where})
				}
			}
		}
	}
	return h
}

// contentBlocks reads a content value: an array of blocks, or a string
// (one text block).
func contentBlocks(raw json.RawMessage) []rawBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []rawBlock{{Type: TypeText, Text: s}}
	}
	elems, ok := splitArray(raw)
	if !ok {
		return nil
	}
	out := make([]rawBlock, 0, len(elems))
	for _, e := range elems {
		var b rawBlock
		if json.Unmarshal(e, &b) != nil {
			b = rawBlock{}
		}
		out = append(out, b)
	}
	return out
}

// rewrite says how references in a conversation are rewritten.
type rewrite struct {
	// expand writes every reference as text (an endpoint that takes no
	// references); otherwise only references to tools not sent are.
	expand bool
	// sent reports whether a tool of that name is in the request's tools.
	sent func(name string) bool
}

// Texts written in place of references.
const (
	unavailablePrefix = "Tool no longer available: "
	searchedPrefix    = "Searched the deferred tools: "
)

// message rewrites one message. It returns the new JSON, the number of
// references rewritten or dropped, and whether anything changed.
func (rw rewrite) message(raw json.RawMessage) (json.RawMessage, int, bool) {
	if !bytes.Contains(raw, []byte(TypeToolReference)) && !bytes.Contains(raw, []byte(TypeServerToolUse)) {
		return raw, 0, false
	}
	msg, err := parseObject(raw)
	if err != nil {
		return raw, 0, false
	}
	elems, ok := splitArray(msg.Get("content"))
	if !ok {
		return raw, 0, false
	}
	total := 0
	changed := false
	for i, e := range elems {
		var b rawBlock
		if json.Unmarshal(e, &b) != nil {
			continue
		}
		var out json.RawMessage
		n := 0
		switch b.Type {
		case TypeToolResult:
			out, n = rw.toolResult(e)
		case TypeToolSearchToolResult:
			out, n = rw.searchResult(e, b)
		case TypeServerToolUse:
			if rw.expand && isSearchToolName(b.Name) {
				out = textBlock(searchedPrefix + string(compactJSON(b.Input)))
			}
		}
		if out != nil {
			elems[i] = out
			total += n
			changed = true
		}
	}
	if !changed {
		return raw, 0, false
	}
	msg.Set("content", joinArray(elems))
	return msg.Marshal(), total, true
}

// toolResult rewrites the references in a tool_result block; nil when none
// needs it.
func (rw rewrite) toolResult(raw json.RawMessage) (json.RawMessage, int) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, 0
	}
	inner, ok := splitArray(obj.Get("content"))
	if !ok {
		return nil, 0
	}
	var out []json.RawMessage
	var loaded []string
	n := 0
	flush := func() {
		if len(loaded) > 0 {
			out = append(out, textBlock(discovery.LoadedText(loaded)))
			loaded = nil
		}
	}
	for _, e := range inner {
		var c rawBlock
		if json.Unmarshal(e, &c) != nil || c.Type != TypeToolReference {
			flush()
			out = append(out, e)
			continue
		}
		switch {
		case !rw.sent(c.ToolName):
			flush()
			out = append(out, textBlock(unavailablePrefix+c.ToolName))
			n++
		case rw.expand:
			loaded = append(loaded, c.ToolName)
			n++
		default:
			out = append(out, e)
		}
	}
	flush()
	if n == 0 {
		return nil, 0
	}
	obj.Set("content", joinArray(out))
	return obj.Marshal(), n
}

// searchResult rewrites a tool_search_tool_result block: as text when
// expanding, else without the references to tools not sent.
func (rw rewrite) searchResult(raw json.RawMessage, b rawBlock) (json.RawMessage, int) {
	var c searchResultContent
	if json.Unmarshal(b.Content, &c) != nil {
		return nil, 0
	}
	if rw.expand {
		var lines []string
		var loaded []string
		for _, r := range c.ToolReferences {
			if rw.sent(r.ToolName) {
				loaded = append(loaded, r.ToolName)
			} else {
				lines = append(lines, unavailablePrefix+r.ToolName)
			}
		}
		if c.ErrorCode != "" {
			lines = append(lines, "Tool search failed: "+c.ErrorCode)
		}
		if t := discovery.LoadedText(loaded); t != "" {
			lines = append([]string{t}, lines...)
		}
		if len(lines) == 0 {
			lines = []string{"Tool search found nothing."}
		}
		return textBlock(strings.Join(lines, "\n")), len(c.ToolReferences)
	}
	obj, err := parseObject(raw)
	if err != nil {
		return nil, 0
	}
	content, err := parseObject(b.Content)
	if err != nil {
		return nil, 0
	}
	refs, ok := splitArray(content.Get("tool_references"))
	if !ok {
		return nil, 0
	}
	kept := make([]json.RawMessage, 0, len(refs))
	n := 0
	for _, e := range refs {
		var r rawBlock
		if json.Unmarshal(e, &r) == nil && !rw.sent(r.ToolName) {
			n++
			continue
		}
		kept = append(kept, e)
	}
	if n == 0 {
		return nil, 0
	}
	content.Set("tool_references", joinArray(kept))
	obj.Set("content", content.Marshal())
	return obj.Marshal(), n
}

// Names of the API's server search tools, as clients name them.
const (
	nameBM25Tool  = "tool_search_tool_bm25"
	nameRegexTool = "tool_search_tool_regex"
)

func isSearchToolName(name string) bool {
	return name == nameRegexTool || name == nameBM25Tool
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// Reconcile rewrites a conversation (each element of the messages array as
// JSON) so that no tool reference names a tool for which sent returns
// false — the API answers such a request with a 400 "Tool reference 'X'
// not found in available tools". A reference in a tool_result becomes the
// text "Tool no longer available: X"; one in a tool_search_tool_result is
// dropped. Messages that need no change are returned as they are, so the
// rest of the conversation keeps its bytes. It returns the messages and the
// number of references rewritten. Package anthropic does this for every request
// it builds; a proxy calls it on the bodies it forwards.
func Reconcile(messages []json.RawMessage, sent func(name string) bool) ([]json.RawMessage, int) {
	return rewriteAll(messages, rewrite{sent: sent})
}

// ExpandReferences rewrites every tool reference of a conversation as text,
// for an endpoint that refuses tool_reference blocks: references in a
// tool_result become LoadedText (those to tools for which sent returns
// false, "Tool no longer available: X"), and server_tool_use and
// tool_search_tool_result blocks of the API's own search become text too.
// The tools loaded must then be sent as ordinary tools.
func ExpandReferences(messages []json.RawMessage, sent func(name string) bool) ([]json.RawMessage, int) {
	return rewriteAll(messages, rewrite{expand: true, sent: sent})
}

// RewriteReferences rewrites the references of one message (the JSON of
// one element of messages) as Reconcile does, or, with expand, as
// ExpandReferences does. It returns the message, the number of references
// rewritten or dropped, and whether anything changed (an unchanged message
// is returned as it is).
func RewriteReferences(message json.RawMessage, expand bool, sent func(name string) bool) (json.RawMessage, int, bool) {
	return rewrite{expand: expand, sent: sent}.message(message)
}

func rewriteAll(messages []json.RawMessage, rw rewrite) ([]json.RawMessage, int) {
	out := make([]json.RawMessage, len(messages))
	total := 0
	for i, m := range messages {
		r, n, _ := rw.message(m)
		out[i] = r
		total += n
	}
	return out, total
}
