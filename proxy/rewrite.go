package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/core/discovery"
)

// Types of the API's server-side search tools.
const (
	typeSearchBM25  = "tool_search_tool_bm25_20251119"
	typeSearchRegex = "tool_search_tool_regex_20251119"
)

// toolInfo is what the proxy reads of one element of tools.
type toolInfo struct {
	Type         string `json:"type"`
	Name         string `json:"name"`
	DeferLoading bool   `json:"defer_loading"`
}

// isServerSearch reports whether a tool type is one of the API's search
// tools (the dated types, and the undated aliases some clients send).
func isServerSearch(typ string) bool {
	switch typ {
	case typeSearchBM25, typeSearchRegex, "tool_search_tool_bm25", "tool_search_tool_regex":
		return true
	}
	return strings.HasPrefix(typ, "tool_search_tool_bm25_") || strings.HasPrefix(typ, "tool_search_tool_regex_")
}

// request is a Messages API request body, split as far as the proxy needs.
// Every member it does not rewrite keeps its bytes.
type request struct {
	top      object
	tools    []json.RawMessage
	info     []toolInfo
	messages []json.RawMessage
	stream   bool
	// model is the request's model as modelKey bounds it, for the
	// proxy's memory and logs; the body keeps the name as sent.
	model string
	// search is the index in tools of the server search tool, or -1.
	search int
	// edited is set once a rewrite changed top (applyToolChanges,
	// inlineByReference): the client's bytes no longer say what to send.
	edited bool
}

// parseRequest reads a request body. It fails on a body that is not a JSON
// object or whose tools or messages are not arrays.
func parseRequest(body []byte) (*request, error) {
	top, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	req := &request{top: top, search: -1}
	if raw := top.Get("tools"); raw != nil && string(raw) != "null" {
		tools, ok := splitArray(raw)
		if !ok {
			return nil, fmt.Errorf("tools: not an array")
		}
		req.tools = tools
		req.info = make([]toolInfo, len(tools))
		for i, t := range tools {
			// A tool that is not an object is left for the upstream to refuse.
			_ = json.Unmarshal(t, &req.info[i])
			if req.search < 0 && isServerSearch(req.info[i].Type) {
				req.search = i
			}
		}
	}
	if raw := top.Get("messages"); raw != nil && string(raw) != "null" {
		msgs, ok := splitArray(raw)
		if !ok {
			return nil, fmt.Errorf("messages: not an array")
		}
		req.messages = msgs
	}
	_ = json.Unmarshal(top.Get("stream"), &req.stream)
	var model string
	_ = json.Unmarshal(top.Get("model"), &model)
	// The name keys the proxy's memory and goes in its logs: bounded.
	req.model = modelKey(model)
	return req, nil
}

// needsEmulation reports whether anything in the request is what
// tool-search-unaware endpoints refuse: defer_loading, a server search
// tool, tool references or server search blocks in the history, or
// (foldSystem) system-role messages.
func (req *request) needsEmulation(foldSystem bool) bool {
	if req.search >= 0 {
		return true
	}
	for i, t := range req.info {
		if t.DeferLoading || (t.Type == typeMCPToolset && strings.Contains(string(req.tools[i]), `"defer_loading"`)) {
			return true
		}
	}
	for _, m := range req.messages {
		s := string(m)
		if strings.Contains(s, `"tool_reference"`) || strings.Contains(s, `"tool_search_tool_result"`) || strings.Contains(s, `"server_tool_use"`) {
			return true
		}
		if foldSystem && isSystemMessage(m) {
			return true
		}
	}
	return false
}

// rewriteStats says what a rewrite did.
type rewriteStats struct {
	// Dropped counts deferred tools left out (not discovered yet).
	Dropped int
	// Undeferred counts discovered tools sent as ordinary tools.
	Undeferred int
	// References counts references rewritten as text.
	References int
	// SystemFolded counts system-role messages folded into user text.
	SystemFolded int
	// Toolsets counts the MCP toolsets (mcp_toolset tools) whose
	// defer_loading was rewritten.
	Toolsets int
}

// typeMCPToolset is the tool type of an MCP connector toolset.
const typeMCPToolset = "mcp_toolset"

// stripToolsetDefer returns an mcp_toolset without defer_loading in its
// default_config and in each of its configs (and in its pinned tools
// listing), and whether anything changed: an upstream without tool search
// then loads the toolset's tools in full, which the MCP connector lists
// itself.
func stripToolsetDefer(raw json.RawMessage) (json.RawMessage, bool) {
	obj, err := parseObject(raw)
	if err != nil {
		return raw, false
	}
	changed := false
	strip := func(v json.RawMessage) (json.RawMessage, bool) {
		o, err := parseObject(v)
		if err != nil || !o.Del("defer_loading") {
			return v, false
		}
		return o.Marshal(), true
	}
	if dc := obj.Get("default_config"); dc != nil {
		if out, ok := strip(dc); ok {
			obj.Set("default_config", out)
			changed = true
		}
	}
	if cf := obj.Get("configs"); cf != nil {
		if configs, err := parseObject(cf); err == nil {
			hit := false
			for i := range configs {
				if out, ok := strip(configs[i].Val); ok {
					configs[i].Val = out
					hit = true
				}
			}
			if hit {
				obj.Set("configs", configs.Marshal())
				changed = true
			}
		}
	}
	if tl := obj.Get("tools"); tl != nil {
		if elems, ok := splitArray(tl); ok {
			hit := false
			for i, e := range elems {
				if out, ok := strip(e); ok {
					elems[i] = out
					hit = true
				}
			}
			if hit {
				obj.Set("tools", joinArray(elems))
				changed = true
			}
		}
	}
	if !changed {
		return raw, false
	}
	return obj.Marshal(), true
}

// stripDefer returns a tool's JSON without defer_loading.
func stripDefer(raw json.RawMessage) json.RawMessage {
	obj, err := parseObject(raw)
	if err != nil || !obj.Del("defer_loading") {
		return raw
	}
	return obj.Marshal()
}

// emulatedTools returns the tools an upstream without tool search gets:
// every tool not deferred as it is (the server search tool, if any, replaced
// by searchTool), and the deferred tools that loaded reports as discovered,
// without defer_loading. It returns the tools and a set of their names.
func (req *request) emulatedTools(loaded func(string) bool, searchTool json.RawMessage, st *rewriteStats) ([]json.RawMessage, map[string]bool) {
	out := make([]json.RawMessage, 0, len(req.tools))
	sent := make(map[string]bool, len(req.tools))
	for i, t := range req.tools {
		info := req.info[i]
		switch {
		case i == req.search:
			if searchTool != nil {
				out = append(out, searchTool)
				sent[info.Name] = true
			}
			continue
		case isServerSearch(info.Type):
			continue // a second search tool: one is emulated
		case info.Type == typeMCPToolset:
			if out, ok := stripToolsetDefer(t); ok {
				t = out
				st.Toolsets++
			}
		case info.DeferLoading && !loaded(info.Name):
			st.Dropped++
			continue
		case info.DeferLoading:
			st.Undeferred++
			t = stripDefer(t)
		}
		out = append(out, t)
		sent[info.Name] = true
	}
	return out, sent
}

// emulatedMessages returns the messages with every reference written as
// text (messages.ExpandReferences) and, with foldSystem, system-role
// messages folded into user messages.
func emulatedMessages(msgs []json.RawMessage, sent map[string]bool, foldSystem bool, st *rewriteStats) []json.RawMessage {
	out, n := messages.ExpandReferences(msgs, func(name string) bool { return sent[name] })
	st.References += n
	if foldSystem {
		out, st.SystemFolded = foldSystemMessages(out)
	}
	return out
}

// loadedSet reads the tools the conversation loaded: references in
// tool_result content and in tool_search_tool_result blocks, tools
// carried across compaction, and tools a tool_addition enabled.
func loadedSet(msgs []json.RawMessage) *discovery.Set {
	h := messages.ReadHistory(msgs, "")
	s := h.Loaded()
	// And those a tool_addition enabled (by reference, after
	// inlineByReference): they are sent as ordinary tools too.
	s.Add(h.Added().Names()...)
	return s
}

// applyToolChanges makes the tools array say what the tool_addition blocks
// of the request's system messages said, for an upstream that gets no
// system messages (they are folded into text, which keeps no tool change):
// a tool in effect that tools declares with defer_loading loses it, and one
// defined inline (tool_definition) is appended to tools. It returns the
// number of tools changed. A tool withdrawn by tool_removal is left as it
// is: dropping it could leave a tool_reference of the history dangling.
func (req *request) applyToolChanges() int {
	has := false
	for _, m := range req.messages {
		if isSystemMessage(m) && (bytes.Contains(m, []byte(`"tool_addition"`))) {
			has = true
			break
		}
	}
	if !has {
		return 0
	}
	h := messages.ReadHistory(req.messages, "")
	defs := h.ClientDefinitions()
	idx := make(map[string]int, len(req.info))
	for i, t := range req.info {
		if t.Name != "" {
			idx[t.Name] = i
		}
	}
	n := 0
	for _, name := range h.Active().Names() {
		if i, ok := idx[name]; ok {
			if req.info[i].DeferLoading {
				req.tools[i] = stripDefer(req.tools[i])
				req.info[i].DeferLoading = false
				n++
			}
			continue
		}
		def, ok := defs[name]
		if !ok {
			continue // none, or only the endpoint's (a compaction block)
		}
		obj, err := parseObject(def)
		if err != nil {
			continue
		}
		obj.Del("cache_control")
		obj.Del("defer_loading")
		var info toolInfo
		_ = json.Unmarshal(def, &info)
		info.DeferLoading = false
		idx[name] = len(req.tools)
		req.tools = append(req.tools, obj.Marshal())
		req.info = append(req.info, info)
		n++
	}
	if n > 0 {
		req.top.Set("tools", joinArray(req.tools))
		req.edited = true
	}
	return n
}

// inlineByReference rewrites the request for an upstream that takes
// tool_addition blocks but not whole definitions in them (the ReferenceAdd
// strategy): each tool a tool_definition of a system message defined, and
// tools does not declare, is appended to tools with defer_loading (its
// last definition in the history, without cache_control), and every
// tool_definition names its tool by reference instead
// (messages.RenderHistory). It returns the number of definitions appended
// to tools, and whether anything changed.
func (req *request) inlineByReference() (int, bool) {
	if req.messages == nil || !bytes.Contains(req.top.Get("messages"), []byte(`"tool_definition"`)) {
		return 0, false
	}
	h := messages.ReadHistory(req.messages, "")
	sent := make(map[string]bool, len(req.info))
	for _, t := range req.info {
		if t.Name != "" {
			sent[t.Name] = true
		}
	}
	// Only the client's definitions (system messages) go in tools: a
	// compaction block comes from the endpoint, and what it defines the
	// proxy does not offer.
	defs := h.ClientDefinitions()
	n := 0
	for _, c := range h.Changes {
		def, ok := defs[c.Name]
		if c.Kind != messages.TypeToolDefinition || c.Compacted || !ok || sent[c.Name] {
			continue
		}
		obj, err := parseObject(def)
		if err != nil {
			continue
		}
		obj.Del("cache_control")
		obj.Set("defer_loading", json.RawMessage("true"))
		var info toolInfo
		_ = json.Unmarshal(def, &info)
		info.DeferLoading = true
		req.tools = append(req.tools, obj.Marshal())
		req.info = append(req.info, info)
		sent[c.Name] = true
		n++
	}
	msgs, changed := messages.RenderHistory(req.messages, messages.ReferenceAdd, func(name string) bool { return sent[name] }, func(string) bool { return false })
	if n > 0 {
		req.top.Set("tools", joinArray(req.tools))
	}
	if changed {
		req.messages = msgs
		req.top.Set("messages", joinArray(msgs))
	}
	req.edited = req.edited || n > 0 || changed
	return n, n > 0 || changed
}

// withSystemFolded is the request with its system-role messages folded
// into user text, and the number folded.
func (req *request) withSystemFolded() ([]byte, int) {
	if req.messages == nil {
		return req.top.Marshal(), 0
	}
	out, n := foldSystemMessages(req.messages)
	if n == 0 {
		return req.top.Marshal(), 0
	}
	top := req.top.Clone()
	top.Set("messages", joinArray(out))
	return top.Marshal(), n
}

// rewriteClientSide rewrites a request that uses client-side tool search
// (or none) for an upstream without tool search.
func (req *request) rewriteClientSide(foldSystem bool) ([]byte, rewriteStats) {
	var st rewriteStats
	loaded := loadedSet(req.messages)
	top := req.top.Clone()
	sent := map[string]bool{}
	if req.tools != nil {
		var tools []json.RawMessage
		tools, sent = req.emulatedTools(loaded.Has, nil, &st)
		top.Set("tools", joinArray(tools))
	}
	if req.messages != nil {
		top.Set("messages", joinArray(emulatedMessages(req.messages, sent, foldSystem, &st)))
	}
	return top.Marshal(), st
}

// isSystemMessage reports whether a message has the role "system".
func isSystemMessage(raw json.RawMessage) bool { return messages.IsSystemMessage(raw) }

// SystemReminderTag wraps the text of a folded system-role message.
const SystemReminderTag = messages.SystemReminderTag

func foldSystemMessages(msgs []json.RawMessage) ([]json.RawMessage, int) {
	return messages.FoldSystemMessages(msgs)
}

// Betas the proxy removes from anthropic-beta when it emulates tool search:
// the upstream gets a request without the feature, and may not know the
// name.
var (
	toolSearchBetas = []string{messages.BetaAdvancedToolUse, messages.BetaToolSearchTool}
	systemBetas     = []string{messages.BetaSystemMessages}
	// inlineBetas go when inline definitions are named by reference.
	inlineBetas = []string{messages.BetaInlineTools}
	// foldBetas go when system messages are folded: no system message and
	// no tool change is left.
	foldBetas = []string{messages.BetaSystemMessages, messages.BetaToolChanges, messages.BetaInlineTools}
)

// filterBetas returns the anthropic-beta header values without the named
// betas ("" when none is left).
func filterBetas(values []string, drop []string) string {
	var kept []string
	for _, v := range values {
		for _, b := range strings.Split(v, ",") {
			b = strings.TrimSpace(b)
			if b == "" {
				continue
			}
			skip := false
			for _, d := range drop {
				if b == d {
					skip = true
					break
				}
			}
			if !skip {
				kept = append(kept, b)
			}
		}
	}
	return strings.Join(kept, ",")
}

// newMessage is the JSON of a message, role first.
func newMessage(role string, content []json.RawMessage) json.RawMessage {
	return object{{Key: "role", Val: mustJSON(role)}, {Key: "content", Val: joinArray(content)}}.Marshal()
}
