// Package openaitest runs a local stand-in for the OpenAI Responses API
// (POST /v1/responses) and Chat Completions API (POST /v1/chat/completions),
// non-streaming, speaking the documented JSON and refusing with a 400 the
// requests the real APIs refuse, for the parts tool search touches:
//
// Responses:
//   - a function with defer_loading: true (top level or in a namespace)
//     without a tool_search tool, and a request whose every tool is
//     deferred;
//   - a namespace without name or functions, a function without a valid
//     name, a tool_search with an execution other than server or client;
//   - a client tool_search_call without its tool_search_output, a
//     tool_search_output answering no call, a function_call without its
//     function_call_output, an output answering no call ("No tool output
//     found for function call ...");
//   - a function_call naming a function that is neither in tools nor
//     loaded by an earlier tool_search_output (with its namespace).
//
// Chat Completions:
//   - tool calls not followed by a tool message for each id, and tool
//     messages that answer no call (the real API's messages);
//   - invalid function names and parameters that are not an object schema.
//
// Messages other than the two Chat Completions ones quoted are paraphrases.
// Behind the validation sits a scripted model (see Options.Model) that
// searches, calls what it found and ends its turn.
package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/internal/wirerecord"
)

// Options configure a Server.
type Options struct {
	// SearchToolName is the Chat Completions search function the scripted
	// model calls; "tool_search" when empty.
	SearchToolName string
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give the SDK: option.WithBaseURL(URL + "/v1").
	URL string

	// Recorder keeps every request body (Requests) and the message of
	// every 400 (Rejections).
	wirerecord.Recorder

	opts Options
	srv  *httptest.Server
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
	s := &Server{opts: opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the stand-in.
func (s *Server) Close() { s.srv.Close() }

type apiError struct{ msg string }

func bad(format string, args ...any) *apiError { return &apiError{fmt.Sprintf(format, args...)} }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := s.Record(body)
	var out any
	var err *apiError
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		out, err = s.responses(body, n)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		out, err = s.chat(body, n)
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "not found", "type": "invalid_request_error"}})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		s.Reject(err.msg)
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": err.msg, "type": "invalid_request_error", "param": nil, "code": nil}})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// fn is a function the model can call.
type fn struct {
	Namespace   string
	Name        string
	Description string
}

// checkParams checks a parameters schema: an object schema.
func checkParams(raw json.RawMessage, where string) *apiError {
	if len(raw) == 0 {
		return nil
	}
	var s struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Type != "object" {
		return bad("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", where)
	}
	return nil
}

type rawTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Parameters   json.RawMessage `json:"parameters"`
	DeferLoading bool            `json:"defer_loading"`
	Execution    string          `json:"execution"`
	Tools        []rawTool       `json:"tools"`
}

// responses validates a Responses request and answers it.
func (s *Server) responses(body []byte, n int) (any, *apiError) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
		Tools []rawTool       `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, bad("We could not parse the JSON body of your request.")
	}
	if req.Model == "" {
		return nil, bad("Missing required parameter: 'model'.")
	}
	visible := map[string]fn{} // key namespace + "\x00" + name
	hasSearch, client := false, false
	deferred, total := 0, 0
	for i, t := range req.Tools {
		total++
		switch t.Type {
		case "function":
			if !nameRE.MatchString(t.Name) {
				return nil, bad("Invalid 'tools[%d].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
			}
			if err := checkParams(t.Parameters, t.Name); err != nil {
				return nil, err
			}
			if t.DeferLoading {
				deferred++
			} else {
				visible["\x00"+t.Name] = fn{Name: t.Name, Description: t.Description}
			}
		case "namespace":
			if !nameRE.MatchString(t.Name) || len(t.Tools) == 0 {
				return nil, bad("Invalid 'tools[%d]': a namespace needs a name and at least one tool.", i)
			}
			for _, m := range t.Tools {
				if m.Type != "function" || !nameRE.MatchString(m.Name) {
					return nil, bad("Invalid 'tools[%d].tools': namespace members must be functions with valid names.", i)
				}
				if err := checkParams(m.Parameters, m.Name); err != nil {
					return nil, err
				}
				if m.DeferLoading {
					deferred++
					continue
				}
				visible[t.Name+"\x00"+m.Name] = fn{Namespace: t.Name, Name: m.Name, Description: m.Description}
			}
		case "tool_search":
			if t.Execution != "" && t.Execution != "server" && t.Execution != "client" {
				return nil, bad("Invalid 'tools[%d].execution': expected 'server' or 'client'.", i)
			}
			hasSearch = true
			client = t.Execution == "client"
		default:
			return nil, bad("Invalid value for 'tools[%d].type': '%s' is not supported by this stand-in.", i, t.Type)
		}
	}
	if deferred > 0 && !hasSearch {
		return nil, bad("Tools with defer_loading require a tool_search tool.")
	}
	if total > 0 && len(visible) == 0 && !hasSearch {
		return nil, bad("All tools are deferred; at least one tool must be loaded.")
	}

	// Input items.
	var items []map[string]json.RawMessage
	in := bytes.TrimSpace(req.Input)
	if len(in) > 0 && in[0] == '"' {
		var text string
		_ = json.Unmarshal(in, &text)
		items = []map[string]json.RawMessage{{"role": json.RawMessage(`"user"`), "content": mustJSON(text)}}
	} else if err := json.Unmarshal(in, &items); err != nil || len(items) == 0 {
		return nil, bad("Missing required parameter: 'input'.")
	}
	type call struct {
		kind, ns, name string
		answered       bool
	}
	calls := map[string]*call{}
	var order []string
	var lastLoaded []fn
	var lastKind string
	task := ""
	for i, it := range items {
		typ := str(it["type"])
		if typ == "" && it["role"] != nil {
			typ = "message"
		}
		lastKind = typ
		switch typ {
		case "message":
			role := str(it["role"])
			if role != "user" && role != "assistant" && role != "system" && role != "developer" {
				return nil, bad("Invalid value for 'input[%d].role'.", i)
			}
			if role == "user" {
				for _, t := range texts(it["content"]) {
					task = t
				}
			}
		case "function_call":
			id := str(it["call_id"])
			name, ns := str(it["name"]), str(it["namespace"])
			if _, ok := visible[ns+"\x00"+name]; !ok {
				return nil, bad("Invalid 'input[%d]': function_call to '%s' (namespace '%s'), which is neither in tools nor loaded by tool_search.", i, name, ns)
			}
			calls[id] = &call{kind: "function", ns: ns, name: name}
			order = append(order, id)
		case "function_call_output":
			c := calls[str(it["call_id"])]
			if c == nil || c.kind != "function" {
				return nil, bad("No tool call found for function call output with call_id %s.", str(it["call_id"]))
			}
			c.answered = true
		case "tool_search_call":
			if str(it["execution"]) == "client" {
				calls[str(it["call_id"])] = &call{kind: "tool_search"}
				order = append(order, str(it["call_id"]))
			}
		case "tool_search_output":
			id := str(it["call_id"])
			if str(it["execution"]) == "client" || id != "" {
				c := calls[id]
				if c == nil || c.kind != "tool_search" {
					return nil, bad("No tool search call found for tool_search_output with call_id %s.", id)
				}
				c.answered = true
			}
			var tools []rawTool
			if err := json.Unmarshal(it["tools"], &tools); err != nil {
				return nil, bad("Invalid 'input[%d].tools'.", i)
			}
			lastLoaded = nil
			for _, t := range tools {
				switch t.Type {
				case "namespace":
					if !nameRE.MatchString(t.Name) || len(t.Tools) == 0 {
						return nil, bad("Invalid 'input[%d].tools': a namespace needs a name and at least one tool.", i)
					}
					for _, m := range t.Tools {
						if m.Type != "function" || !nameRE.MatchString(m.Name) {
							return nil, bad("Invalid 'input[%d].tools': namespace members must be functions.", i)
						}
						if err := checkParams(m.Parameters, m.Name); err != nil {
							return nil, err
						}
						f := fn{Namespace: t.Name, Name: m.Name, Description: m.Description}
						visible[t.Name+"\x00"+m.Name] = f
						lastLoaded = append(lastLoaded, f)
					}
				case "function":
					f := fn{Name: t.Name, Description: t.Description}
					visible["\x00"+t.Name] = f
					lastLoaded = append(lastLoaded, f)
				default:
					return nil, bad("Invalid 'input[%d].tools': type '%s' is not supported by this stand-in.", i, t.Type)
				}
			}
		case "reasoning":
		default:
			return nil, bad("Invalid value for 'input[%d].type': '%s'.", i, typ)
		}
	}
	for _, id := range order {
		if c := calls[id]; !c.answered {
			if c.kind == "tool_search" {
				return nil, bad("No tool search output found for tool search call %s.", id)
			}
			return nil, bad("No tool output found for function call %s.", id)
		}
	}

	// The scripted model.
	var output []any
	switch {
	case lastKind == "function_call_output":
		last := items[len(items)-1]
		output = append(output, message(n, "Done: "+str(last["output"])))
	case lastKind == "tool_search_output" && len(lastLoaded) > 0:
		output = append(output, functionCall(n, lastLoaded[0]))
	case lastKind == "tool_search_output":
		output = append(output, message(n, "I found no tool for this."))
	default:
		if f, ok := nameMatch(visible, task); ok {
			output = append(output, functionCall(n, f))
		} else if hasSearch && client {
			output = append(output, map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("tsc_%04d", n),
				"call_id": fmt.Sprintf("call_search_%04d", n), "execution": "client", "status": "completed",
				"arguments": map[string]any{"query": task}})
		} else {
			output = append(output, message(n, "I have no tool for this."))
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("resp_%04d", n), "object": "response", "created_at": 1700000000 + n,
		"status": "completed", "model": req.Model, "output": output,
		"error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{},
		"parallel_tool_calls": true, "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": len(body) / 4, "output_tokens": 20, "total_tokens": len(body)/4 + 20,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	}, nil
}

func message(n int, text string) map[string]any {
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_%04d", n), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func functionCall(n int, f fn) map[string]any {
	m := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", n), "call_id": fmt.Sprintf("call_%04d", n),
		"name": f.Name, "arguments": "{}", "status": "completed"}
	if f.Namespace != "" {
		m["namespace"] = f.Namespace
	}
	return m
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// texts returns the texts of a content value: a string or parts.
func texts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return []string{str(raw)}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

var wordRE = regexp.MustCompile(`[a-zA-Z0-9]+`)

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "about": true, "with": true, "from": true,
	"into": true, "this": true, "that": true, "now": true, "all": true, "our": true, "new": true, "another": true}

func words(s string) []string {
	var out []string
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		if len(w) >= 3 && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// nameMatch returns the callable function (not the search) whose
// namespace and name hold the most task words, at least two.
func nameMatch(visible map[string]fn, task string, exclude ...string) (fn, bool) {
	ws := words(task)
	keys := make([]string, 0, len(visible))
	for k := range visible {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var best fn
	bestN := 1
	for _, k := range keys {
		f := visible[k]
		if slices.Contains(exclude, f.Name) {
			continue
		}
		name := strings.ToLower(f.Namespace + "_" + f.Name)
		c := 0
		for _, w := range ws {
			if strings.Contains(name, w) {
				c++
			}
		}
		if c > bestN {
			best, bestN = f, c
		}
	}
	return best, bestN > 1
}

// chat validates a Chat Completions request and answers it.
func (s *Server) chat(body []byte, n int) (any, *apiError) {
	var req struct {
		Model string `json:"model"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, bad("We could not parse the JSON body of your request.")
	}
	if req.Model == "" || len(req.Messages) == 0 {
		return nil, bad("Missing required parameter: 'messages'.")
	}
	visible := map[string]fn{}
	for i, t := range req.Tools {
		if t.Type != "function" || !nameRE.MatchString(t.Function.Name) {
			return nil, bad("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if err := checkParams(t.Function.Parameters, t.Function.Name); err != nil {
			return nil, err
		}
		if _, dup := visible["\x00"+t.Function.Name]; dup {
			return nil, bad("Invalid 'tools': duplicate function name '%s'.", t.Function.Name)
		}
		visible["\x00"+t.Function.Name] = fn{Name: t.Function.Name, Description: t.Function.Description}
	}
	pending := map[string]string{} // tool call id → function name
	searchCalls := map[string]bool{}
	task := ""
	for i, m := range req.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			var ids []string
			for id := range pending {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			return nil, bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
		}
		switch m.Role {
		case "system", "developer":
		case "user":
			for _, t := range texts(m.Content) {
				task = t
			}
		case "assistant":
			for _, c := range m.ToolCalls {
				pending[c.ID] = c.Function.Name
				if c.Function.Name == s.opts.SearchToolName {
					searchCalls[c.ID] = true
				}
			}
		case "tool":
			if _, ok := pending[m.ToolCallID]; !ok {
				return nil, bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(pending, m.ToolCallID)
		default:
			return nil, bad("Invalid value for 'messages[%d].role'.", i)
		}
	}
	if len(pending) > 0 {
		var ids []string
		for id := range pending {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return nil, bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
	}
	last := req.Messages[len(req.Messages)-1]
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	callFn := func(name, args string) {
		finish = "tool_calls"
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%04d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
	}
	switch {
	case last.Role == "tool" && !searchCalls[last.ToolCallID]:
		msg["content"] = "Done: " + strings.Join(texts(last.Content), " ")
	case last.Role == "tool":
		// The search answered: call the first tool it loaded, if sent.
		loaded := ""
		for _, t := range texts(last.Content) {
			if rest, ok := strings.CutPrefix(t, "Loaded tools: "); ok {
				first, _, _ := strings.Cut(strings.SplitN(rest, "\n", 2)[0], ",")
				loaded = strings.TrimSpace(first)
			}
		}
		if _, ok := visible["\x00"+loaded]; ok && loaded != "" {
			callFn(loaded, "{}")
		} else {
			msg["content"] = "I found no tool for this."
		}
	default:
		if f, ok := nameMatch(visible, task, s.opts.SearchToolName); ok {
			callFn(f.Name, "{}")
		} else if _, ok := visible["\x00"+s.opts.SearchToolName]; ok {
			args, _ := json.Marshal(map[string]any{"query": task})
			callFn(s.opts.SearchToolName, string(args))
		} else {
			msg["content"] = "I have no tool for this."
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%04d", n), "object": "chat.completion", "created": 1700000000 + n, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": 20, "total_tokens": len(body)/4 + 20},
	}, nil
}
