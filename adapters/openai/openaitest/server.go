// Package openaitest runs a local stand-in for the OpenAI Responses API
// (POST /v1/responses) and Chat Completions API (POST /v1/chat/completions),
// non-streaming, speaking the documented JSON and refusing with a 400 the
// requests the real APIs refuse, for the parts tool search touches:
//
// Responses:
//   - a function with defer_loading: true (top level, in a namespace, in a
//     tool_search_output or in an additional_tools item) in a request
//     without a tool_search tool, and a request whose every tool is
//     deferred;
//   - an additional_tools item whose role is not "developer" or that has
//     no tools;
//   - a namespace without name or functions, a function without a valid
//     name, a tool_search with an execution other than server or client;
//   - a client tool_search_call without its tool_search_output, a
//     tool_search_output answering no call, a function_call without its
//     function_call_output, an output answering no call ("No tool output
//     found for function call ...");
//   - a function_call naming a function that is neither in tools nor
//     loaded by an earlier tool_search_output or additional_tools item
//     (with its namespace).
//
// Options.RefuseNamespaces, RefuseAdditionalTools and RefuseToolSearch
// turn it into a Responses-compatible server that lacks one feature each.
//
// Chat Completions:
//   - tool calls not followed by a tool message for each id, and tool
//     messages that answer no call (the real API's messages);
//   - invalid function names and parameters that are not an object schema.
//
// Messages other than the two Chat Completions ones quoted are paraphrases.
// Behind the validation sits a scripted model that searches (with the
// client tool_search when the request has one, else with the search
// function Options.SearchToolName), calls what it found and ends its turn.
package openaitest

import (
	"bytes"
	"cmp"
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
	// SearchToolName is the search function the scripted model calls
	// (Chat Completions, and the Responses API when the request has no
	// tool_search tool); "tool_search" when empty.
	SearchToolName string
	// RefuseNamespaces, RefuseAdditionalTools and RefuseToolSearch make
	// the Responses API behave like a compatible server that lacks the
	// feature: a request using it is a 400 that names it, shaped like the
	// API's refusal of an unsupported value ("Invalid value: 'namespace'.
	// Supported values are: ...") or of an unknown parameter ("Unknown
	// parameter: 'input[3].namespace'."). RefuseToolSearch refuses the
	// tool_search tool, its items and defer_loading.
	RefuseNamespaces      bool
	RefuseAdditionalTools bool
	RefuseToolSearch      bool
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

type apiError struct{ msg, param, code string }

func bad(format string, args ...any) *apiError { return &apiError{msg: fmt.Sprintf(format, args...)} }

// badAt is a refusal that names the parameter at fault and an error code,
// as the API's own refusals do.
func badAt(param, code, format string, args ...any) *apiError {
	return &apiError{msg: fmt.Sprintf(format, args...), param: param, code: code}
}

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
		e := map[string]any{"message": err.msg, "type": "invalid_request_error", "param": nil, "code": nil}
		if err.param != "" {
			e["param"], e["code"] = err.param, err.code
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
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
	// Arguments are the arguments of a call the model makes; "{}" when
	// empty.
	Arguments string
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

// toolTypes and itemTypes are what the refusals list as supported.
const (
	toolTypes = "'function', 'file_search', 'web_search', 'mcp', 'code_interpreter', 'image_generation'"
	itemTypes = "'message', 'function_call', 'function_call_output', 'reasoning'"
)

// tools checks a list of tools (the request's, or those of a
// tool_search_output or additional_tools item at where) and returns the
// functions they make callable now and how many are deferred. hasSearch
// says whether the request's tools hold a tool_search.
func (s *Server) tools(list []rawTool, where string, hasSearch bool) (callable []fn, deferred int, err *apiError) {
	for i, t := range list {
		at := fmt.Sprintf("%s[%d]", where, i)
		switch t.Type {
		case "function":
			if !nameRE.MatchString(t.Name) {
				return nil, 0, badAt(at+".name", "invalid_value", "Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", at)
			}
			if err := checkParams(t.Parameters, t.Name); err != nil {
				return nil, 0, err
			}
			if t.DeferLoading {
				if s.opts.RefuseToolSearch {
					return nil, 0, badAt(at+".defer_loading", "unknown_parameter", "Unknown parameter: '%s.defer_loading'.", at)
				}
				if !hasSearch {
					return nil, 0, badAt(at+".defer_loading", "invalid_value", "Invalid '%s.defer_loading': tools with defer_loading require a tool_search tool in the same request.", at)
				}
				deferred++
				continue
			}
			callable = append(callable, fn{Name: t.Name, Description: t.Description})
		case "namespace":
			if s.opts.RefuseNamespaces {
				return nil, 0, badAt(at+".type", "invalid_value", "Invalid value: 'namespace'. Supported values are: %s.", toolTypes)
			}
			if !nameRE.MatchString(t.Name) || len(t.Tools) == 0 {
				return nil, 0, badAt(at, "invalid_value", "Invalid '%s': a namespace needs a name and at least one tool.", at)
			}
			for j, m := range t.Tools {
				if m.Type != "function" || !nameRE.MatchString(m.Name) {
					return nil, 0, badAt(fmt.Sprintf("%s.tools[%d]", at, j), "invalid_value", "Invalid '%s.tools[%d]': namespace members must be functions with valid names.", at, j)
				}
				if err := checkParams(m.Parameters, m.Name); err != nil {
					return nil, 0, err
				}
				if m.DeferLoading {
					if s.opts.RefuseToolSearch {
						return nil, 0, badAt(fmt.Sprintf("%s.tools[%d].defer_loading", at, j), "unknown_parameter", "Unknown parameter: '%s.tools[%d].defer_loading'.", at, j)
					}
					if !hasSearch {
						return nil, 0, badAt(fmt.Sprintf("%s.tools[%d].defer_loading", at, j), "invalid_value", "Invalid '%s.tools[%d].defer_loading': tools with defer_loading require a tool_search tool in the same request.", at, j)
					}
					deferred++
					continue
				}
				callable = append(callable, fn{Namespace: t.Name, Name: m.Name, Description: m.Description})
			}
		case "tool_search":
			if s.opts.RefuseToolSearch {
				return nil, 0, badAt(at+".type", "invalid_value", "Invalid value: 'tool_search'. Supported values are: %s.", toolTypes)
			}
			if where != "tools" {
				return nil, 0, badAt(at+".type", "invalid_value", "Invalid '%s': a tool_search tool belongs in the request's tools.", at)
			}
			if t.Execution != "" && t.Execution != "server" && t.Execution != "client" {
				return nil, 0, badAt(at+".execution", "invalid_value", "Invalid '%s.execution': expected 'server' or 'client'.", at)
			}
		default:
			return nil, 0, badAt(at+".type", "invalid_value", "Invalid value for '%s.type': '%s' is not supported by this stand-in.", at, t.Type)
		}
	}
	return callable, deferred, nil
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
	hasSearch, client := false, false
	for _, t := range req.Tools {
		if t.Type == "tool_search" {
			hasSearch = true
			client = client || t.Execution == "client"
		}
	}
	visible := map[string]fn{} // key namespace + "\x00" + name
	show := func(list []fn) {
		for _, f := range list {
			visible[f.Namespace+"\x00"+f.Name] = f
		}
	}
	callable, deferred, err := s.tools(req.Tools, "tools", hasSearch)
	if err != nil {
		return nil, err
	}
	show(callable)
	if len(req.Tools) > 0 && len(callable) == 0 && deferred > 0 && !hasSearch {
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
	var lastKind, lastCall string
	task := ""
	for i, it := range items {
		typ := str(it["type"])
		if typ == "" && it["role"] != nil {
			typ = "message"
		}
		lastKind = typ
		refusedItem := func() *apiError {
			return badAt(fmt.Sprintf("input[%d].type", i), "invalid_value", "Invalid value: '%s'. Supported values are: %s.", typ, itemTypes)
		}
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
			if _, ok := it["namespace"]; ok && s.opts.RefuseNamespaces {
				return nil, badAt(fmt.Sprintf("input[%d].namespace", i), "unknown_parameter", "Unknown parameter: 'input[%d].namespace'.", i)
			}
			if _, ok := visible[ns+"\x00"+name]; !ok {
				return nil, bad("Invalid 'input[%d]': function_call to '%s' (namespace '%s'), which is neither in tools nor loaded by tool_search or additional_tools.", i, name, ns)
			}
			calls[id] = &call{kind: "function", ns: ns, name: name}
			order = append(order, id)
		case "function_call_output":
			id := str(it["call_id"])
			c := calls[id]
			if c == nil || c.kind != "function" {
				return nil, bad("No tool call found for function call output with call_id %s.", id)
			}
			c.answered = true
			lastCall = c.name
		case "tool_search_call":
			if s.opts.RefuseToolSearch {
				return nil, refusedItem()
			}
			if str(it["execution"]) == "client" {
				calls[str(it["call_id"])] = &call{kind: "tool_search"}
				order = append(order, str(it["call_id"]))
			}
		case "tool_search_output":
			if s.opts.RefuseToolSearch {
				return nil, refusedItem()
			}
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
				return nil, badAt(fmt.Sprintf("input[%d].tools", i), "invalid_type", "Invalid 'input[%d].tools': expected an array of tools.", i)
			}
			if err := s.deferOK(tools, i, hasSearch); err != nil {
				return nil, err
			}
			// A tool_search_output loads what it holds: deferred members
			// become callable.
			lastLoaded = nil
			for _, t := range tools {
				if t.Type == "function" {
					t.DeferLoading = false
				}
				for j := range t.Tools {
					t.Tools[j].DeferLoading = false
				}
				loaded, _, err := s.tools([]rawTool{t}, fmt.Sprintf("input[%d].tools", i), hasSearch)
				if err != nil {
					return nil, err
				}
				lastLoaded = append(lastLoaded, loaded...)
			}
			show(lastLoaded)
		case "additional_tools":
			if s.opts.RefuseAdditionalTools {
				return nil, refusedItem()
			}
			if role := str(it["role"]); role != "developer" {
				return nil, badAt(fmt.Sprintf("input[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'developer'.", role)
			}
			var tools []rawTool
			if raw, ok := it["tools"]; !ok || json.Unmarshal(raw, &tools) != nil || len(tools) == 0 {
				return nil, badAt(fmt.Sprintf("input[%d].tools", i), "missing_required_parameter", "Missing required parameter: 'input[%d].tools'.", i)
			}
			added, _, err := s.tools(tools, fmt.Sprintf("input[%d].tools", i), hasSearch)
			if err != nil {
				return nil, err
			}
			lastLoaded = added
			show(added)
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
	last := items[len(items)-1]
	switch {
	case lastKind == "function_call_output" && lastCall == s.opts.SearchToolName:
		// The search function answered: call the first tool it names,
		// once it is callable.
		if f, ok := firstLoaded(visible, texts(last["output"])); ok {
			output = append(output, functionCall(n, f))
		} else {
			output = append(output, message(n, "I found no tool for this."))
		}
	case lastKind == "function_call_output":
		output = append(output, message(n, "Done: "+str(last["output"])))
	case (lastKind == "tool_search_output" || lastKind == "additional_tools") && len(lastLoaded) > 0:
		output = append(output, functionCall(n, lastLoaded[0]))
	case lastKind == "tool_search_output":
		output = append(output, message(n, "I found no tool for this."))
	default:
		_, searchFn := visible["\x00"+s.opts.SearchToolName]
		if f, ok := nameMatch(visible, task, s.opts.SearchToolName); ok {
			output = append(output, functionCall(n, f))
		} else if hasSearch && client {
			output = append(output, map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("tsc_%04d", n),
				"call_id": fmt.Sprintf("call_search_%04d", n), "execution": "client", "status": "completed",
				"arguments": map[string]any{"query": task}})
		} else if searchFn {
			args, _ := json.Marshal(map[string]any{"query": task})
			output = append(output, functionCall(n, fn{Name: s.opts.SearchToolName, Arguments: string(args)}))
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

// deferOK refuses defer_loading in a tool_search_output of a request
// without a tool_search tool.
func (s *Server) deferOK(tools []rawTool, i int, hasSearch bool) *apiError {
	if hasSearch {
		return nil
	}
	for _, t := range tools {
		deferred := t.DeferLoading
		for _, m := range t.Tools {
			deferred = deferred || m.DeferLoading
		}
		if deferred {
			return badAt(fmt.Sprintf("input[%d].tools", i), "invalid_value", "Invalid 'input[%d].tools': tools with defer_loading require a tool_search tool in the same request.", i)
		}
	}
	return nil
}

// firstLoaded returns the first tool a search function's answer names
// ("Loaded tools: a, b") that the model can call.
func firstLoaded(visible map[string]fn, outputs []string) (fn, bool) {
	for _, t := range outputs {
		for _, line := range strings.Split(t, "\n") {
			rest, ok := strings.CutPrefix(line, "Loaded tools: ")
			if !ok {
				continue
			}
			for _, name := range strings.Split(rest, ",") {
				name = strings.TrimSpace(name)
				if f, ok := visible["\x00"+name]; ok {
					return f, true
				}
				// An added namespace: its functions are named within it.
				for _, f := range visible {
					if f.Namespace != "" && flat(f) == name {
						return f, true
					}
				}
			}
		}
	}
	return fn{}, false
}

// flat is the plain function name of a namespace's function as toolsearch
// writes it: the namespace's server part, "__", the function.
func flat(f fn) string {
	server, _, _ := strings.Cut(f.Namespace, "__")
	return server + "__" + f.Name
}

func message(n int, text string) map[string]any {
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_%04d", n), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func functionCall(n int, f fn) map[string]any {
	m := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", n), "call_id": fmt.Sprintf("call_%04d", n),
		"name": f.Name, "arguments": cmp.Or(f.Arguments, "{}"), "status": "completed"}
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
