package clients

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// responsesStandin is a local stand-in for the OpenAI Responses API:
// POST /v1/responses, answered as the API answers it, as one JSON response
// object or, for "stream": true, as the server-sent events the API
// streams (response.created, response.in_progress, then per output item
// response.output_item.added, its content or argument deltas and their
// done events, response.output_item.done, and response.completed with the
// whole response). The events' shapes are those of openai-go v3.98.0's
// types, which TestResponsesStandinSpeaksTheSDKsTypes decodes them with.
//
// It refuses with a 400, in the API's error shape, a request that is not
// JSON, has no model or input, or whose input holds a
// function_call_output answering no function_call before it. A scripted
// model (respModel) writes the output items; every request is recorded.
type responsesStandin struct {
	URL string

	srv   *httptest.Server
	model respModel

	mu   sync.Mutex
	reqs []respRecorded
	n    int
}

// respRecorded is one request the stand-in received.
type respRecorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// respRequest is the part of a Responses request the model reads.
type respRequest struct {
	Model string `json:"model"`
	// Input holds the input items; an input given as a string is one
	// user message.
	Input []json.RawMessage `json:"-"`
	Tools []respTool        `json:"tools"`
}

// respTool is a tool of a request: a function, or another type.
type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Tools are a namespace's members.
	Tools []respTool `json:"tools"`
}

// respItem is an input item of a request (the fields the model reads).
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// items decodes the request's input items.
func (r *respRequest) items() []respItem {
	out := make([]respItem, 0, len(r.Input))
	for _, raw := range r.Input {
		var it respItem
		_ = json.Unmarshal(raw, &it)
		out = append(out, it)
	}
	return out
}

// respModel answers a request with output items: respText or respCall
// values.
type respModel func(*respRequest) []any

// respText is an assistant message of output text.
type respText string

// respCall is a function call.
type respCall struct {
	Name, Namespace, Arguments string
}

// newResponsesStandin starts a stand-in that stops when the test ends.
func newResponsesStandin(t testing.TB, model respModel) *responsesStandin {
	s := &responsesStandin{model: model}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// all returns every request received.
func (s *responsesStandin) all() []respRecorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]respRecorded(nil), s.reqs...)
}

// requests returns the bodies of the POST /v1/responses requests.
func (s *responsesStandin) requests() []respRecorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []respRecorded
	for _, r := range s.reqs {
		if strings.HasSuffix(r.Path, "/responses") {
			out = append(out, r)
		}
	}
	return out
}

func respError(w http.ResponseWriter, status int, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": param, "code": nil}})
}

func (s *responsesStandin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, respRecorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.n++
	n := s.n
	s.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		respError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "")
		return
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		respError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "")
		return
	}
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		respError(w, http.StatusBadRequest, "Invalid request: "+err.Error(), "")
		return
	}
	if req.Model == "" {
		respError(w, http.StatusBadRequest, "Missing required parameter: 'model'.", "model")
		return
	}
	var text string
	switch in := top["input"]; {
	case len(in) == 0:
		respError(w, http.StatusBadRequest, "Missing required parameter: 'input'.", "input")
		return
	case json.Unmarshal(in, &text) == nil:
		msg, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": text})
		req.Input = []json.RawMessage{msg}
	case json.Unmarshal(in, &req.Input) != nil:
		respError(w, http.StatusBadRequest, "Invalid type for 'input': expected a string or an array of input items.", "input")
		return
	}
	calls := map[string]bool{}
	for i, it := range req.items() {
		switch it.Type {
		case "function_call", "custom_tool_call":
			calls[it.CallID] = true
		case "function_call_output", "custom_tool_call_output":
			if !calls[it.CallID] {
				respError(w, http.StatusBadRequest, "No tool call found for function call output with call_id "+it.CallID+".", fmt.Sprintf("input[%d]", i))
				return
			}
		}
	}
	id := fmt.Sprintf("resp_standin_%04d", n)
	var output []map[string]any
	for i, o := range s.model(&req) {
		switch o := o.(type) {
		case respText:
			output = append(output, map[string]any{"id": fmt.Sprintf("msg_%04d_%d", n, i), "type": "message", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": string(o), "annotations": []any{}, "logprobs": []any{}}}})
		case respCall:
			item := map[string]any{"id": fmt.Sprintf("fc_%04d_%d", n, i), "type": "function_call", "status": "completed",
				"call_id": fmt.Sprintf("call_%04d_%d", n, i), "name": o.Name, "arguments": o.Arguments}
			if o.Namespace != "" {
				item["namespace"] = o.Namespace
			}
			output = append(output, item)
		}
	}
	resp := func(status string, out []map[string]any) map[string]any {
		if out == nil {
			out = []map[string]any{}
		}
		m := map[string]any{"id": id, "object": "response", "created_at": 1764547200, "status": status, "model": req.Model,
			"output": out, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "temperature": 1.0, "top_p": 1.0,
			"error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{}, "text": map[string]any{"format": map[string]any{"type": "text"}},
			"truncation": "disabled", "background": false, "store": false, "access_programs": map[string]any{"cyber": "standard"}}
		if status == "completed" {
			m["usage"] = map[string]any{"input_tokens": (len(body) + 3) / 4,
				"input_tokens_details": map[string]any{"cached_tokens": 0, "cache_write_tokens": 0,
					"cache_write_tokens_details": map[string]any{"ttl_30m_tokens": 0, "ttl_12h_tokens": 0}},
				"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": (len(body)+3)/4 + 20}
		} else {
			m["usage"] = nil
		}
		return m
	}
	if string(top["stream"]) != "true" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp("completed", output))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, ev := range streamEvents(resp("in_progress", nil), resp("completed", output), output) {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// streamEvents returns the events the API streams for a response whose
// output is output: created and in_progress with the response so far,
// each item's events, then completed.
func streamEvents(started, done map[string]any, output []map[string]any) []map[string]any {
	var evs []map[string]any
	seq := 0
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		evs = append(evs, fields)
	}
	add("response.created", map[string]any{"response": started})
	add("response.in_progress", map[string]any{"response": started})
	for i, item := range output {
		switch item["type"] {
		case "message":
			part := item["content"].([]any)[0].(map[string]any)
			text := part["text"].(string)
			empty := map[string]any{}
			for k, v := range item {
				empty[k] = v
			}
			empty["status"], empty["content"] = "in_progress", []any{}
			add("response.output_item.added", map[string]any{"output_index": i, "item": empty})
			add("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}})
			add("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": text, "logprobs": []any{}})
			add("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			add("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			empty := map[string]any{}
			for k, v := range item {
				empty[k] = v
			}
			empty["status"], empty["arguments"] = "in_progress", ""
			add("response.output_item.added", map[string]any{"output_index": i, "item": empty})
			add("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": item["arguments"]})
			add("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": i, "arguments": item["arguments"]})
		}
		add("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	add("response.completed", map[string]any{"response": done})
	return evs
}
