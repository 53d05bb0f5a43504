// Package enrichtest runs loopback stand-ins for the two model APIs that
// toolsearch enrich talks to, the Anthropic Messages API
// (POST /v1/messages) and the OpenAI Chat Completions API
// (POST /v1/chat/completions). They read requests and write answers in the
// APIs' documented JSON, so that the official SDK clients talk to them
// unchanged, and they record every request with the names of the tool
// definitions its prompt carries (one JSON definition a line). A script
// decides each Answer: hints, an error status with its headers, or a
// reply held back until the test lets it go.
package enrichtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kind says which API a stand-in speaks.
type Kind int

// The APIs.
const (
	// Anthropic is the Messages API, POST /v1/messages.
	Anthropic Kind = iota
	// OpenAI is the Chat Completions API, POST /v1/chat/completions.
	OpenAI
)

func (k Kind) String() string {
	if k == OpenAI {
		return "openai"
	}
	return "anthropic"
}

// Answer is what a stand-in sends back for one request.
type Answer struct {
	// Status is the HTTP status; 0 means 200 with Text as the reply.
	Status int
	// Header is set on the response (Retry-After, say).
	Header map[string]string
	// Text is the model's reply.
	Text string
	// Hold, when set, holds the answer back until it is closed or the
	// request ends.
	Hold chan struct{}
}

// Call is one recorded request.
type Call struct {
	// At is when the request arrived.
	At time.Time
	// Tools are the names of the definitions in the prompt, in order.
	Tools []string
	// System and Prompt are the system prompt and the user message.
	System, Prompt string
	// Body is the request's JSON, by member.
	Body map[string]json.RawMessage
	// Header is the request's header.
	Header http.Header
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the server's address: the base URL for the Anthropic SDK;
	// the OpenAI SDK's is URL + "/v1/".
	URL string
	// APIKey is the key the stand-in wants.
	APIKey string

	kind  Kind
	srv   *httptest.Server
	delay time.Duration
	// script answers request n (0-based); nil means GoodAnswer.
	script func(n int, tools []string) Answer

	mu       sync.Mutex
	calls    []Call
	inflight int
	maxIn    int
	answered []time.Time // when each error answer was sent
}

// New starts a stand-in that speaks kind's API, answering request n
// (counted from 0) with script(n, the tools in its prompt); a nil script
// answers every request with GoodAnswer. It stops when the test ends.
func New(t testing.TB, kind Kind, script func(n int, tools []string) Answer) *Server {
	t.Helper()
	s := &Server{kind: kind, script: script, APIKey: "test-key"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Kind is the API the stand-in speaks.
func (s *Server) Kind() Kind { return s.kind }

// SetDelay makes every answer wait d (set it before the first request).
func (s *Server) SetDelay(d time.Duration) { s.delay = d }

// Close stops the stand-in now.
func (s *Server) Close() { s.srv.Close() }

// Requests returns every request received, in order.
func (s *Server) Requests() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ToolCounts counts, by tool name, the requests whose prompt carried the
// tool (a request refused before it was read carries none).
func (s *Server) ToolCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]int{}
	for _, c := range s.calls {
		for _, n := range c.Tools {
			counts[n]++
		}
	}
	return counts
}

// AnsweredAt returns when each error answer was sent.
func (s *Server) AnsweredAt() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.answered...)
}

// MaxInflight is the most requests that were in progress at once.
func (s *Server) MaxInflight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

// GoodAnswer gives every tool four hints that name it.
func GoodAnswer(tools []string) Answer {
	return Answer{Text: ReplyFor(tools, func(name string) []any {
		return []any{"kw " + name, "do " + name, "slang " + name, "goal " + name}
	})}
}

// ReplyFor writes the reply JSON asked for, with hints(name) per tool.
func ReplyFor(tools []string, hints func(name string) []any) string {
	type item struct {
		Name  string `json:"name"`
		Hints []any  `json:"hints"`
	}
	var out struct {
		Tools []item `json:"tools"`
	}
	for _, n := range tools {
		out.Tools = append(out.Tools, item{Name: n, Hints: hints(n)})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	c := Call{At: time.Now(), Body: top, Header: r.Header.Clone()}
	// The Anthropic SDK sends the key as x-api-key or as a bearer token,
	// by version; the OpenAI SDK as a bearer token. The APIs answer a
	// wrong key with a 401.
	if r.Header.Get("X-Api-Key") != s.APIKey && r.Header.Get("Authorization") != "Bearer "+s.APIKey {
		s.record(c)
		s.fail(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	var problem string
	switch s.kind {
	case Anthropic:
		problem = s.readAnthropic(r, top, &c)
	case OpenAI:
		problem = s.readOpenAI(r, top, &c)
	}
	c.Tools = promptTools(c.Prompt)
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, c)
	s.inflight++
	s.maxIn = max(s.maxIn, s.inflight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if problem != "" {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", problem)
		return
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	a := GoodAnswer(c.Tools)
	if s.script != nil {
		a = s.script(n, c.Tools)
	}
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		s.mu.Lock()
		s.answered = append(s.answered, time.Now())
		s.mu.Unlock()
		typ := "api_error"
		if a.Status == http.StatusTooManyRequests {
			typ = "rate_limit_error"
		}
		s.fail(w, a.Status, typ, fmt.Sprintf("scripted %d", a.Status))
		return
	}
	var model string
	_ = json.Unmarshal(c.Body["model"], &model)
	s.reply(w, n, model, a.Text, len(c.Prompt))
}

// record notes a request refused before it was read.
func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// readAnthropic checks a Messages API request as the API would and takes
// its system prompt and user text.
func (s *Server) readAnthropic(r *http.Request, top map[string]json.RawMessage, c *Call) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return "unexpected " + r.Method + " " + r.URL.Path
	}
	if r.Header.Get("Anthropic-Version") == "" {
		return "missing the anthropic-version header"
	}
	var model string
	var maxTokens int
	if json.Unmarshal(top["model"], &model) != nil || model == "" || json.Unmarshal(top["max_tokens"], &maxTokens) != nil || maxTokens < 1 {
		return "model and max_tokens are required"
	}
	var system []struct{ Type, Text string }
	if err := json.Unmarshal(top["system"], &system); err != nil || len(system) != 1 || system[0].Type != "text" {
		return "system: want one text block"
	}
	c.System = system[0].Text
	var msgs []struct {
		Role    string `json:"role"`
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Content) != 1 {
		return "messages: want one user message with one text block"
	}
	c.Prompt = msgs[0].Content[0].Text
	return ""
}

// readOpenAI checks a Chat Completions request and takes its messages.
func (s *Server) readOpenAI(r *http.Request, top map[string]json.RawMessage, c *Call) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return "unexpected " + r.Method + " " + r.URL.Path
	}
	var model string
	if json.Unmarshal(top["model"], &model) != nil || model == "" {
		return "model is required"
	}
	if _, ok := top["max_tokens"]; !ok {
		return "a compatible server reads max_tokens"
	}
	var msgs []struct{ Role, Content string }
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		return "messages: want a system and a user message"
	}
	c.System, c.Prompt = msgs[0].Content, msgs[1].Content
	return ""
}

// promptTools lists the names of the definitions in a prompt, one a line.
func promptTools(prompt string) []string {
	var names []string
	for _, l := range strings.Split(prompt, "\n") {
		if !strings.HasPrefix(l, `{"name":`) {
			continue
		}
		var d struct{ Name string }
		if json.Unmarshal([]byte(l), &d) == nil {
			names = append(names, d.Name)
		}
	}
	return names
}

// reply sends a 200 with the model's text, and usage counted as a
// quarter of the bytes.
func (s *Server) reply(w http.ResponseWriter, n int, model, text string, promptLen int) {
	in, out := promptLen/4, len(text)/4
	var resp any
	switch s.kind {
	case Anthropic:
		resp = map[string]any{
			"id": fmt.Sprintf("msg_%04d", n), "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		}
	case OpenAI:
		resp = map[string]any{
			"id": fmt.Sprintf("chatcmpl-%04d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		}
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write(b.Bytes())
}

// fail answers with the API's error JSON.
func (s *Server) fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch s.kind {
	case Anthropic:
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case OpenAI:
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}})
	}
}
