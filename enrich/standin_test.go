package enrich

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

// The stand-ins below answer on loopback as the Anthropic Messages API
// (POST /v1/messages) and the OpenAI Chat Completions API
// (POST /v1/chat/completions) do, in their documented JSON, so that the
// official SDK clients talk to them unchanged. Each request is recorded,
// with the names of the tool definitions its prompt carries.

// wireKind says which API a stand-in speaks.
type wireKind int

const (
	wireAnthropic wireKind = iota
	wireOpenAI
)

func (k wireKind) String() string {
	if k == wireOpenAI {
		return "openai"
	}
	return "anthropic"
}

// answer is what a stand-in sends back for one request.
type answer struct {
	// status is the HTTP status; 0 means 200 with text as the reply.
	status int
	header map[string]string
	text   string
	// hold, when set, blocks the answer until it is closed or the
	// request ends.
	hold chan struct{}
}

// call is one recorded request.
type call struct {
	at     time.Time
	tools  []string // names of the definitions in the prompt
	system string
	prompt string
	body   map[string]json.RawMessage
	header http.Header
}

type standin struct {
	kind  wireKind
	srv   *httptest.Server
	delay time.Duration
	// script answers request n (0-based); nil means goodAnswer.
	script func(n int, tools []string) answer

	mu       sync.Mutex
	calls    []call
	inflight int
	maxIn    int
	answered []time.Time // when each non-200 answer was sent
}

func newStandin(t *testing.T, kind wireKind, script func(n int, tools []string) answer) *standin {
	t.Helper()
	s := &standin{kind: kind, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// provider returns an SDK-backed provider pointed at the stand-in.
func (s *standin) provider() Provider {
	switch s.kind {
	case wireOpenAI:
		return NewOpenAI(Config{BaseURL: s.srv.URL + "/v1/", APIKey: "test-key", Model: "test-model"})
	default:
		return NewAnthropic(Config{BaseURL: s.srv.URL, APIKey: "test-key", Model: "test-model"})
	}
}

func (s *standin) requests() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// answeredAt returns when each error answer was sent.
func (s *standin) answeredAt() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.answered...)
}

func (s *standin) maxInflight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

// goodAnswer gives every tool four hints that name it.
func goodAnswer(tools []string) answer {
	return answer{text: replyFor(tools, func(name string) []any {
		return []any{"kw " + name, "do " + name, "slang " + name, "goal " + name}
	})}
}

// replyFor writes the reply JSON asked for, with hints(name) per tool.
func replyFor(tools []string, hints func(string) []any) string {
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

func (s *standin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	c := call{at: time.Now(), body: top, header: r.Header.Clone()}
	var problem string
	switch s.kind {
	case wireAnthropic:
		problem = s.readAnthropic(r, top, &c)
	case wireOpenAI:
		problem = s.readOpenAI(r, top, &c)
	}
	c.tools = promptTools(c.prompt)
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
	a := goodAnswer(c.tools)
	if s.script != nil {
		a = s.script(n, c.tools)
	}
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if a.status != 0 && a.status != http.StatusOK {
		s.mu.Lock()
		s.answered = append(s.answered, time.Now())
		s.mu.Unlock()
		typ := "api_error"
		if a.status == http.StatusTooManyRequests {
			typ = "rate_limit_error"
		}
		s.fail(w, a.status, typ, fmt.Sprintf("scripted %d", a.status))
		return
	}
	s.reply(w, n, a.text, len(c.prompt))
}

// readAnthropic checks a Messages API request as the API would and takes
// its system prompt and user text.
func (s *standin) readAnthropic(r *http.Request, top map[string]json.RawMessage, c *call) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return "unexpected " + r.Method + " " + r.URL.Path
	}
	// The SDK sends the key as x-api-key or as a bearer token, by version.
	if (r.Header.Get("X-Api-Key") != "test-key" && r.Header.Get("Authorization") != "Bearer test-key") || r.Header.Get("Anthropic-Version") == "" {
		return "missing the API key or anthropic-version"
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
	c.system = system[0].Text
	var msgs []struct {
		Role    string `json:"role"`
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Content) != 1 {
		return "messages: want one user message with one text block"
	}
	c.prompt = msgs[0].Content[0].Text
	return ""
}

// readOpenAI checks a Chat Completions request and takes its messages.
func (s *standin) readOpenAI(r *http.Request, top map[string]json.RawMessage, c *call) string {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return "unexpected " + r.Method + " " + r.URL.Path
	}
	if r.Header.Get("Authorization") != "Bearer test-key" {
		return "missing bearer token"
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
	c.system, c.prompt = msgs[0].Content, msgs[1].Content
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

func (s *standin) reply(w http.ResponseWriter, n int, text string, promptLen int) {
	in, out := promptLen/4, len(text)/4
	var resp any
	switch s.kind {
	case wireAnthropic:
		resp = map[string]any{
			"id": fmt.Sprintf("msg_%04d", n), "type": "message", "role": "assistant", "model": "test-model",
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		}
	case wireOpenAI:
		resp = map[string]any{
			"id": fmt.Sprintf("chatcmpl-%04d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": "test-model",
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
func (s *standin) fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch s.kind {
	case wireAnthropic:
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case wireOpenAI:
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}})
	}
}
