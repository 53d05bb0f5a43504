// Package anthropictest runs a local stand-in for the Anthropic Messages API
// (POST /v1/messages, non-streaming) that speaks the documented JSON and
// refuses a request where the real API refuses it with a 400, for the parts
// of the protocol tool search touches:
//
//   - a request whose every tool has defer_loading: true;
//   - a tool_reference to a tool missing from tools (the message is the
//     real one: "Tool reference 'X' not found in available tools");
//   - cache_control on a tool with defer_loading: true;
//   - more than 10,000 deferred tools;
//   - a custom tool without input_schema.type "object", or with an invalid
//     or duplicate name;
//   - tool_use blocks not answered by tool_result blocks in the next user
//     message, tool_result blocks answering no tool_use, and tool_result
//     blocks that do not come first in their message;
//   - a server_tool_use without its result, or naming a search tool that
//     is not in tools.
//
// It takes {"role":"system"} messages inside messages, with text,
// tool_addition and tool_removal blocks (see ToolChanges for their rules),
// and compaction blocks whose tool_changes carry the tools in effect.
//
// Strict modes, one per feature, make it refuse what an endpoint without
// the feature refuses, each with a 400 that names it:
//
//   - NoReferences: an Anthropic-compatible proxy that knows nothing of
//     tool search: any defer_loading, tool_reference or server search tool;
//   - NoSystemMessages: a system-role message inside messages;
//   - NoToolChanges: tool_addition and tool_removal blocks;
//   - NoInlineTools: a tool_addition holding a tool_definition;
//   - RefuseBetas: the named anthropic-beta values.
//
// The error messages other than the tool-reference one are paraphrases, not
// the API's exact words. Behind the validation sits a scripted model
// (ScriptedModel) that searches for a tool, calls what it found and ends
// the turn, so that agent loops can run end to end offline.
package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/internal/wirerecord"
)

// Limits the stand-in enforces.
const (
	MaxDeferredTools = 10000
	MaxRegexLen      = 200
)

// Server types the stand-in knows.
const (
	TypeBM25  = "tool_search_tool_bm25_20251119"
	TypeRegex = "tool_search_tool_regex_20251119"
)

// Options configure a Server.
type Options struct {
	// NoReferences makes the server refuse tool search entirely, like a
	// proxy that does not know it.
	NoReferences bool
	// NoSystemMessages refuses {"role":"system"} messages inside messages.
	NoSystemMessages bool
	// NoToolChanges refuses tool_addition and tool_removal blocks, as an
	// endpoint or model without mid-conversation tool changes does.
	NoToolChanges bool
	// NoInlineTools refuses tool_definition in a tool_addition, as an
	// endpoint or model without inline tools does.
	NoInlineTools bool
	// RefuseBetas are anthropic-beta values the server refuses as unknown.
	RefuseBetas []string
	// SearchToolName is the name of the client-side search tool the
	// scripted model calls; "tool_search" when empty.
	SearchToolName string
	// Model answers each valid request; nil means ScriptedModel.
	Model func(*Request) Reply
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the SDK (option.WithBaseURL).
	URL string

	// Recorder keeps every request body (Requests) and the message of
	// every 400 (Rejections).
	wirerecord.Recorder

	opts Options
	srv  *httptest.Server

	mu         sync.Mutex
	prevPrefix []byte
}

// New starts a stand-in that stops when the test ends.
func New(t testing.TB, opts Options) *Server {
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a stand-in outside a test (an example run offline, say);
// Close stops it.
func Start(opts Options) *Server {
	if opts.SearchToolName == "" {
		opts.SearchToolName = "tool_search"
	}
	if opts.Model == nil {
		opts.Model = ScriptedModel
	}
	s := &Server{opts: opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the stand-in.
func (s *Server) Close() { s.srv.Close() }

// Tool is a tool of a request.
type Tool struct {
	// Type is "" or "custom" for a client tool, else a server tool's type.
	Type string
	// Name, Description and InputSchema are the tool's fields.
	Name        string
	Description string
	InputSchema json.RawMessage
	// Deferred is defer_loading; Cached says whether cache_control is set.
	Deferred bool
	Cached   bool
}

// Block is a content block of a request.
type Block struct {
	// Type and the fields below are the block's JSON fields (those the
	// stand-in reads).
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
	// ToolChanges are the entries of a compaction block's tool_changes.
	ToolChanges []json.RawMessage `json:"tool_changes"`
	// Inner holds a tool_result's content blocks.
	Inner []Block `json:"-"`
	// Refs holds the tool names of a tool_search_tool_result.
	Refs []string `json:"-"`
}

// Message is a message of a request.
type Message struct {
	// Role is "user", "assistant" or "system".
	Role string
	// Blocks are the content blocks ("content" as a string is one text
	// block).
	Blocks []Block
}

// Request is a request that passed validation.
type Request struct {
	// Model is the model asked for.
	Model string
	// Tools are the request's tools, in order.
	Tools []Tool
	// Messages are the messages, consecutive ones of the same role joined
	// as the API joins them.
	Messages []Message
	// Visible holds the tools the model can see: every tool without
	// defer_loading, and every tool a reference in the conversation loaded.
	Visible map[string]bool
	// ClientSearch is the client-side search tool's name, if it is in tools.
	ClientSearch string
	// ServerSearch is the server search tool's type, if one is in tools.
	ServerSearch string
	// ServerSearchName is its name.
	ServerSearchName string
	// Betas are the anthropic-beta values of the request.
	Betas []string
	// Inline holds the tools defined by tool_addition blocks, by name.
	Inline map[string]Tool
}

// Reply is what the model answers.
type Reply struct {
	// Content holds the response's content blocks as JSON objects.
	Content []any
	// StopReason is "end_turn" or "tool_use".
	StopReason string
}

type apiError struct {
	status int
	msg    string
}

// Error returns the message sent back.
func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := s.Record(body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		writeError(w, &apiError{status: http.StatusNotFound, msg: "not found: " + r.Method + " " + r.URL.Path}, "not_found_error")
		return
	}
	req, prefix, err := s.parse(body, betasOf(r.Header))
	if err != nil {
		s.Reject(err.msg)
		writeError(w, err, "invalid_request_error")
		return
	}
	reply := s.opts.Model(req)
	s.mu.Lock()
	cached := commonPrefix(prefix, s.prevPrefix)
	s.prevPrefix = prefix
	s.mu.Unlock()
	resp := map[string]any{
		"id":            fmt.Sprintf("msg_standin_%04d", n),
		"type":          "message",
		"role":          "assistant",
		"model":         req.Model,
		"content":       reply.Content,
		"stop_reason":   reply.StopReason,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                (len(prefix) - cached + 3) / 4,
			"cache_read_input_tokens":     cached / 4,
			"cache_creation_input_tokens": 0,
			"output_tokens":               20,
		},
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", fmt.Sprintf("req_standin_%04d", n))
	_ = json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, e *apiError, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": e.msg},
	})
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// betasOf reads the anthropic-beta header values (comma-separated, or
// repeated).
func betasOf(h http.Header) []string {
	var out []string
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// parse validates a request body. prefix is what the model reads, in the
// order prompt caching keys on it: loaded tools, system, messages.
func (s *Server) parse(body []byte, betas []string) (*Request, []byte, *apiError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, nil, badRequest("request body is not valid JSON: %v", err)
	}
	for _, b := range betas {
		if slices.Contains(s.opts.RefuseBetas, b) {
			return nil, nil, badRequest("Unexpected value(s) `%s` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.", b)
		}
	}
	req := &Request{Visible: map[string]bool{}, Betas: betas, Inline: map[string]Tool{}}
	if err := json.Unmarshal(top["model"], &req.Model); err != nil || req.Model == "" {
		return nil, nil, badRequest("model: Field required")
	}
	var maxTokens int
	if err := json.Unmarshal(top["max_tokens"], &maxTokens); err != nil || maxTokens < 1 {
		return nil, nil, badRequest("max_tokens: Field required")
	}
	var prefix bytes.Buffer

	// Tools.
	var rawTools []map[string]json.RawMessage
	if t, ok := top["tools"]; ok {
		if err := json.Unmarshal(t, &rawTools); err != nil {
			return nil, nil, badRequest("tools: Input should be a valid list")
		}
	}
	names := map[string]bool{}
	deferred := 0
	for i, rt := range rawTools {
		t, err := s.readTool(rt, fmt.Sprintf("tools.%d", i), req)
		if err != nil {
			return nil, nil, err
		}
		if names[t.Name] {
			return nil, nil, badRequest("tools: Tool names must be unique (%q)", t.Name)
		}
		names[t.Name] = true
		if t.Deferred {
			deferred++
			if t.Cached {
				return nil, nil, badRequest("tools.%d: cache_control cannot be set on a tool with defer_loading: true", i)
			}
		} else {
			req.Visible[t.Name] = true
			prefix.Write(compact(mustMarshal(rt)))
		}
		req.Tools = append(req.Tools, t)
	}
	if len(req.Tools) > 0 && deferred == len(req.Tools) {
		return nil, nil, badRequest("All tools have defer_loading set to true. At least one tool must not be deferred.")
	}
	if deferred > MaxDeferredTools {
		return nil, nil, badRequest("Too many deferred tools: %d (the limit is %d)", deferred, MaxDeferredTools)
	}
	prefix.Write(compact(top["system"]))

	// Messages.
	var rawMsgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(top["messages"], &rawMsgs); err != nil || len(rawMsgs) == 0 {
		return nil, nil, badRequest("messages: Field required")
	}
	prefix.Write(compact(top["messages"]))
	for i, rm := range rawMsgs {
		switch {
		case rm.Role == "system" && !s.opts.NoSystemMessages:
			blocks, err := s.systemBlocks(rm.Content, fmt.Sprintf("messages.%d.content", i))
			if err != nil {
				return nil, nil, err
			}
			req.Messages = append(req.Messages, Message{Role: rm.Role, Blocks: blocks})
			continue
		case rm.Role != "user" && rm.Role != "assistant":
			return nil, nil, badRequest("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		blocks, err := parseBlocks(rm.Content, fmt.Sprintf("messages.%d.content", i), s.opts.NoReferences)
		if err != nil {
			return nil, nil, err
		}
		if rm.Role == "assistant" {
			for j := range blocks {
				if blocks[j].Type == "compaction" {
					if err := s.compactionChanges(&blocks[j], fmt.Sprintf("messages.%d.content.%d", i, j)); err != nil {
						return nil, nil, err
					}
				}
			}
		}
		// The API joins consecutive messages of the same role.
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == rm.Role {
			req.Messages[n-1].Blocks = append(req.Messages[n-1].Blocks, blocks...)
			continue
		}
		req.Messages = append(req.Messages, Message{Role: rm.Role, Blocks: blocks})
	}
	if err := checkPairs(req, names); err != nil {
		return nil, nil, err
	}
	if err := s.applyToolChanges(req, names); err != nil {
		return nil, nil, err
	}
	return req, prefix.Bytes(), nil
}

// readTool reads and checks one tool definition (an element of tools, or
// the definition of a tool_definition).
func (s *Server) readTool(rt map[string]json.RawMessage, where string, req *Request) (Tool, *apiError) {
	var t Tool
	_ = json.Unmarshal(rt["type"], &t.Type)
	_ = json.Unmarshal(rt["name"], &t.Name)
	_ = json.Unmarshal(rt["description"], &t.Description)
	_ = json.Unmarshal(rt["defer_loading"], &t.Deferred)
	t.InputSchema = rt["input_schema"]
	_, t.Cached = rt["cache_control"]
	if _, ok := rt["defer_loading"]; ok && s.opts.NoReferences {
		return t, badRequest("%s.defer_loading: Extra inputs are not permitted", where)
	}
	switch t.Type {
	case "", "custom":
		if !nameRE.MatchString(t.Name) {
			return t, badRequest("%s.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", where)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if len(t.InputSchema) == 0 || json.Unmarshal(t.InputSchema, &schema) != nil {
			return t, badRequest("%s.custom.input_schema: Field required", where)
		}
		if schema.Type != "object" {
			return t, badRequest("%s.custom.input_schema.type: Input should be 'object'", where)
		}
		if t.Name == s.opts.SearchToolName {
			req.ClientSearch = t.Name
		}
	case TypeBM25, TypeRegex, "tool_search_tool_bm25", "tool_search_tool_regex":
		if s.opts.NoReferences {
			return t, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags", where, t.Type)
		}
		req.ServerSearch = t.Type
		req.ServerSearchName = t.Name
	default:
		return t, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags", where, t.Type)
	}
	return t, nil
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// parseBlocks reads a content value, refusing tool_reference blocks when
// noRefs.
func parseBlocks(raw json.RawMessage, where string, noRefs bool) ([]Block, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return []Block{{Type: "text", Text: s}}, nil
	}
	var blocks []Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badRequest("%s: Input should be a valid list", where)
	}
	for j := range blocks {
		b := &blocks[j]
		w := fmt.Sprintf("%s.%d", where, j)
		switch b.Type {
		case "text", "tool_use", "image", "document", "thinking", "redacted_thinking", "compaction":
		case "tool_result":
			if len(b.Content) > 0 {
				inner, err := parseBlocks(b.Content, w+".content", noRefs)
				if err != nil {
					return nil, err
				}
				for _, c := range inner {
					if c.Type != "text" && c.Type != "tool_reference" && c.Type != "image" && c.Type != "document" && c.Type != "search_result" {
						return nil, badRequest("%s.content: Input tag '%s' found using 'type' does not match any of the expected tags", w, c.Type)
					}
				}
				b.Inner = inner
			}
		case "tool_reference":
			if noRefs {
				return nil, badRequest("%s: Input tag 'tool_reference' found using 'type' does not match any of the expected tags", w)
			}
			if !strings.Contains(where, ".content.") {
				return nil, badRequest("%s: tool_reference blocks are only allowed in tool_result content", w)
			}
		case "server_tool_use", "tool_search_tool_result":
			if noRefs {
				return nil, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags", w, b.Type)
			}
			if b.Type == "tool_search_tool_result" {
				var c struct {
					Type           string  `json:"type"`
					ToolReferences []Block `json:"tool_references"`
				}
				if err := json.Unmarshal(b.Content, &c); err != nil {
					return nil, badRequest("%s.content: invalid", w)
				}
				for _, r := range c.ToolReferences {
					b.Refs = append(b.Refs, r.ToolName)
				}
			}
		default:
			return nil, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags", w, b.Type)
		}
	}
	return blocks, nil
}

// checkPairs checks tool_use/tool_result pairing and references, and fills
// req.Visible with the referenced tools.
func checkPairs(req *Request, names map[string]bool) *apiError {
	ref := func(name, where string) *apiError {
		if !names[name] {
			return badRequest("%s: Tool reference '%s' not found in available tools", where, name)
		}
		req.Visible[name] = true
		return nil
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "assistant":
			var uses []string
			serverUses := map[string]bool{}
			for _, b := range m.Blocks {
				switch b.Type {
				case "tool_use":
					uses = append(uses, b.ID)
				case "server_tool_use":
					if b.Name != req.ServerSearchName || req.ServerSearchName == "" {
						return badRequest("messages.%d: server_tool_use %q names %q, which is not a server tool in tools", i, b.ID, b.Name)
					}
					serverUses[b.ID] = true
				case "tool_search_tool_result":
					if !serverUses[b.ToolUseID] {
						return badRequest("messages.%d: tool_search_tool_result %q follows no server_tool_use", i, b.ToolUseID)
					}
					delete(serverUses, b.ToolUseID)
					for _, r := range b.Refs {
						if err := ref(r, fmt.Sprintf("messages.%d", i)); err != nil {
							return err
						}
					}
				}
			}
			if len(serverUses) > 0 {
				return badRequest("messages.%d: server_tool_use without a tool_search_tool_result", i)
			}
			if len(uses) == 0 {
				continue
			}
			if i+1 >= len(req.Messages) {
				return badRequest("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, strings.Join(uses, ", "))
			}
			answered := map[string]bool{}
			for _, b := range req.Messages[i+1].Blocks {
				if b.Type == "tool_result" {
					answered[b.ToolUseID] = true
				}
			}
			for _, id := range uses {
				if !answered[id] {
					return badRequest("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
				}
			}
		case "system":
			if i > 0 && req.Messages[i-1].Role == "assistant" && hasToolUse(req.Messages[i-1]) {
				return badRequest("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: a system message cannot come between a tool_use and its tool_result", i)
			}
		case "user":
			var prevUses map[string]bool
			if i > 0 {
				prevUses = map[string]bool{}
				for _, b := range req.Messages[i-1].Blocks {
					if b.Type == "tool_use" {
						prevUses[b.ID] = true
					}
				}
			}
			seenOther := false
			for _, b := range m.Blocks {
				if b.Type != "tool_result" {
					seenOther = true
					continue
				}
				if seenOther {
					return badRequest("messages.%d: tool_result blocks must come before any other content in the message", i)
				}
				if !prevUses[b.ToolUseID] {
					return badRequest("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, b.ToolUseID)
				}
				for _, c := range b.Inner {
					if c.Type == "tool_reference" {
						if err := ref(c.ToolName, fmt.Sprintf("messages.%d", i)); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// ScriptedModel is a deterministic stand-in for the model. It reads the
// task from the first user text that is not an announcement, then:
//
//  1. after the result of a tool other than the search tool: ends the
//     turn with "Done: <result>";
//  2. when the latest search loaded a tool the model can see: calls it with
//     empty input;
//  3. with a client-side search tool: calls it with the task as query;
//  4. with a server search tool: runs the search itself (words of the task
//     against names and descriptions of deferred tools; a regex pattern of
//     those words for the regex tool), answers with server_tool_use and
//     tool_search_tool_result, and calls the best tool found in the same
//     response;
//  5. without search: calls the visible tool that best matches the task.
//
// Before 3 and 4, a visible tool whose name holds two words of the task is
// called directly, as a model does with a tool it already has.
func ScriptedModel(req *Request) Reply {
	task := taskText(req)
	last := lastTurn(req)
	searchUses := map[string]bool{}
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			if b.Type == "tool_use" && b.Name == req.ClientSearch && b.Name != "" {
				searchUses[b.ID] = true
			}
		}
	}
	if last.Role == "user" {
		for _, b := range last.Blocks {
			if b.Type == "tool_result" && !searchUses[b.ToolUseID] {
				return Reply{Content: []any{textOut("Done: " + resultText(b))}, StopReason: "end_turn"}
			}
		}
		if found := latestFound(last, searchUses); found != "" && req.Visible[found] {
			return callTool(found)
		}
		for _, b := range last.Blocks {
			if b.Type == "tool_result" && searchUses[b.ToolUseID] {
				// The search loaded nothing the model can see.
				return Reply{Content: []any{textOut("I found no tool for this: " + resultText(b))}, StopReason: "end_turn"}
			}
		}
	}
	// A loaded tool whose name holds two words of the task or more is
	// called without searching.
	if loaded := nameMatch(req, task); loaded != "" {
		return callTool(loaded)
	}
	switch {
	case req.ClientSearch != "":
		return Reply{Content: []any{map[string]any{
			"type": "tool_use", "id": "toolu_search_" + shortID(task, len(req.Messages)), "name": req.ClientSearch,
			"input": map[string]any{"query": task},
		}}, StopReason: "tool_use"}
	case req.ServerSearch != "":
		return serverSearch(req, task)
	}
	best := bestTool(req, task, func(t Tool) bool { return req.Visible[t.Name] })
	if best == "" {
		return Reply{Content: []any{textOut("I have no tool for this.")}, StopReason: "end_turn"}
	}
	return callTool(best)
}

// taskText returns the latest user text that is neither an announcement
// nor the "Tool loaded." note.
func taskText(req *Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			b := m.Blocks[j]
			t := strings.TrimSpace(b.Text)
			if b.Type == "text" && t != "" && t != "Tool loaded." && !strings.HasPrefix(t, "<deferred-tools") {
				return b.Text
			}
		}
	}
	return ""
}

// latestFound returns the first tool loaded by a search answer in msg:
// a tool_reference, or the first name of a "Loaded tools: " line.
func latestFound(msg Message, searchUses map[string]bool) string {
	for _, b := range msg.Blocks {
		if b.Type != "tool_result" || !searchUses[b.ToolUseID] {
			continue
		}
		for _, c := range b.Inner {
			if c.Type == "tool_reference" {
				return c.ToolName
			}
			if rest, ok := strings.CutPrefix(c.Text, "Loaded tools: "); ok {
				first, _, _ := strings.Cut(rest, ",")
				return strings.TrimSpace(strings.SplitN(first, "\n", 2)[0])
			}
		}
	}
	return ""
}

func resultText(b Block) string {
	var parts []string
	for _, c := range b.Inner {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	if len(parts) == 0 {
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s
		}
	}
	return strings.Join(parts, " ")
}

func textOut(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func callTool(name string) Reply {
	return Reply{Content: []any{
		textOut("Calling " + name + "."),
		map[string]any{"type": "tool_use", "id": "toolu_call_" + shortID(name, 0), "name": name, "input": map[string]any{}},
	}, StopReason: "tool_use"}
}

func shortID(s string, n int) string {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return fmt.Sprintf("%08x%02d", h, n%100)
}

var wordRE = regexp.MustCompile(`[a-zA-Z0-9]+`)

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "about": true, "with": true, "from": true,
	"into": true, "this": true, "that": true, "now": true, "all": true, "our": true, "new": true, "another": true}

// words returns the task's words of three letters or more, lower-cased,
// without the commonest English words.
func words(s string) []string {
	var out []string
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		if len(w) >= 3 && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// nameMatch returns the visible tool (not a search tool) whose name holds
// the most words of the task, at least two; the first of equals.
func nameMatch(req *Request, task string) string {
	ws := words(task)
	best, bestN := "", 1
	for _, t := range req.allTools() {
		if !req.Visible[t.Name] || t.Name == req.ClientSearch || (t.Type != "" && t.Type != "custom") {
			continue
		}
		n, name := 0, strings.ToLower(t.Name)
		for _, w := range ws {
			if strings.Contains(name, w) {
				n++
			}
		}
		if n > bestN {
			best, bestN = t.Name, n
		}
	}
	return best
}

// allTools are the tools of tools, then those defined inline, by name.
func (req *Request) allTools() []Tool {
	out := slices.Clone(req.Tools)
	names := make([]string, 0, len(req.Inline))
	for n := range req.Inline {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, req.Inline[n])
	}
	return out
}

// bestTool scores tools by how many task words their name and description
// contain, name words counting double.
func bestTool(req *Request, task string, ok func(Tool) bool) string {
	ranked := rank(req, task, ok)
	if len(ranked) == 0 {
		return ""
	}
	return ranked[0]
}

func rank(req *Request, task string, ok func(Tool) bool) []string {
	ws := words(task)
	type scored struct {
		name  string
		score int
	}
	var list []scored
	for _, t := range req.Tools {
		if !ok(t) || t.Name == req.ClientSearch || t.Type != "" && t.Type != "custom" {
			continue
		}
		name := strings.ToLower(t.Name)
		desc := strings.ToLower(t.Description)
		score := 0
		for _, w := range ws {
			if strings.Contains(name, w) {
				score += 2
			}
			if strings.Contains(desc, w) {
				score++
			}
		}
		if score > 0 {
			list = append(list, scored{t.Name, score})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].score > list[j].score })
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.name
	}
	return out
}

// serverSearch plays the API's server-side search over deferred tools.
func serverSearch(req *Request, task string) Reply {
	id := "srvtoolu_" + shortID(task, len(req.Messages))
	use := map[string]any{"type": "server_tool_use", "id": id, "name": req.ServerSearchName}
	var found []string
	var errCode string
	if strings.Contains(req.ServerSearch, "regex") {
		pattern := "(?i)" + strings.Join(words(task), "|")
		use["input"] = map[string]any{"pattern": pattern}
		if len(pattern) > MaxRegexLen {
			errCode = "invalid_tool_input"
		} else if re, err := regexp.Compile(pattern); err != nil {
			errCode = "invalid_tool_input"
		} else {
			// Rank the regex's matches by the same word score.
			for _, n := range rank(req, task, func(t Tool) bool { return t.Deferred }) {
				for _, t := range req.Tools {
					if t.Name == n && (re.MatchString(t.Name) || re.MatchString(t.Description)) {
						found = append(found, n)
					}
				}
			}
		}
	} else {
		use["input"] = map[string]any{"query": task}
		found = rank(req, task, func(t Tool) bool { return t.Deferred })
	}
	if len(found) > 5 {
		found = found[:5]
	}
	var result map[string]any
	if errCode != "" {
		result = map[string]any{"type": "tool_search_tool_result", "tool_use_id": id,
			"content": map[string]any{"type": "tool_search_tool_result_error", "error_code": errCode, "error_message": "pattern too long"}}
	} else {
		refs := []any{}
		for _, n := range found {
			refs = append(refs, map[string]any{"type": "tool_reference", "tool_name": n})
		}
		result = map[string]any{"type": "tool_search_tool_result", "tool_use_id": id,
			"content": map[string]any{"type": "tool_search_tool_search_result", "tool_references": refs}}
	}
	content := []any{use, result}
	if len(found) == 0 {
		content = append(content, textOut("I found no tool for this."))
		return Reply{Content: content, StopReason: "end_turn"}
	}
	call := callTool(found[0])
	return Reply{Content: append(content, call.Content...), StopReason: "tool_use"}
}
