package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// recorded is what a provider sent.
type recorded struct {
	path   string
	header http.Header
	body   map[string]any
}

// recorder answers every request with status and body and keeps what it
// was sent.
func recorder(t *testing.T, status int, header http.Header, body string) (*httptest.Server, *recorded) {
	t.Helper()
	rec := &recorded{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.path, rec.header = r.URL.Path, r.Header.Clone()
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &rec.body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

const (
	anthropicOK = `{"content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"he"},{"type":"text","text":"llo"}],"usage":{"input_tokens":12,"output_tokens":3}}`
	openAIOK    = `{"choices":[{"message":{"role":"assistant","content":"hello"}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`
)

// TestProvidersWire checks what each provider puts on the wire: the path
// under the base URL, the credentials header the configuration asks for,
// the token limit field, and that the answer's text and usage are read.
func TestProvidersWire(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		answer    string
		make      func(base string) Provider
		path      string
		header    map[string]string // want; "" means absent
		maxTokens string            // the request field that carries the limit
	}{
		{
			name: "anthropic key from the config", answer: anthropicOK,
			env:  map[string]string{"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_AUTH_TOKEN": ""},
			make: func(b string) Provider { return NewAnthropic(Config{BaseURL: b + "/", APIKey: "cfg-key", Model: "m"}) },
			path: "/v1/messages", maxTokens: "max_tokens",
			header: map[string]string{"X-Api-Key": "cfg-key", "Authorization": "", "Anthropic-Version": anthropicVersion},
		},
		{
			name: "anthropic key from the environment", answer: anthropicOK,
			env:  map[string]string{"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_AUTH_TOKEN": "tok"},
			make: func(b string) Provider { return NewAnthropic(Config{BaseURL: b}) },
			path: "/v1/messages", maxTokens: "max_tokens",
			header: map[string]string{"X-Api-Key": "env-key", "Authorization": ""},
		},
		{
			name: "anthropic bearer token and base URL from the environment", answer: anthropicOK,
			env:  map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": "{base}/proxy"},
			make: func(string) Provider { return NewAnthropic(Config{}) },
			path: "/proxy/v1/messages", maxTokens: "max_tokens",
			header: map[string]string{"X-Api-Key": "", "Authorization": "Bearer tok"},
		},
		{
			name: "openai-compatible server", answer: openAIOK,
			env:  map[string]string{"OPENAI_API_KEY": "env-key", "OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": ""},
			make: func(b string) Provider { return NewOpenAI(Config{BaseURL: b + "/v1/", APIKey: "cfg-key"}) },
			path: "/v1/chat/completions", maxTokens: "max_tokens",
			header: map[string]string{"Authorization": "Bearer cfg-key", "OpenAI-Organization": "org-1", "OpenAI-Project": ""},
		},
		{
			name: "openai key and base URL from the environment", answer: openAIOK,
			env:  map[string]string{"OPENAI_API_KEY": "env-key", "OPENAI_BASE_URL": "{base}/api", "OPENAI_ORG_ID": "", "OPENAI_PROJECT_ID": "p"},
			make: func(string) Provider { return NewOpenAI(Config{}) },
			path: "/api/chat/completions", maxTokens: "max_tokens",
			header: map[string]string{"Authorization": "Bearer env-key", "OpenAI-Project": "p"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, rec := recorder(t, http.StatusOK, nil, c.answer)
			for k, v := range c.env {
				t.Setenv(k, strings.ReplaceAll(v, "{base}", srv.URL))
			}
			reply, err := c.make(srv.URL).Complete(context.Background(), Request{System: "sys", Prompt: "user text", MaxTokens: 77})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "hello" || reply.InputTokens != 12 || reply.OutputTokens != 3 {
				t.Errorf("reply %+v, want text hello and usage 12/3", reply)
			}
			if rec.path != c.path {
				t.Errorf("path %q, want %q", rec.path, c.path)
			}
			for k, want := range c.header {
				if got := rec.header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if rec.header.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", rec.header.Get("Content-Type"))
			}
			if got, _ := rec.body[c.maxTokens].(float64); got != 77 {
				t.Errorf("%s = %v, want 77 (body %v)", c.maxTokens, rec.body[c.maxTokens], rec.body)
			}
			text, _ := json.Marshal(rec.body)
			if !strings.Contains(string(text), `"sys"`) || !strings.Contains(string(text), `"user text"`) {
				t.Errorf("the system prompt or the user text is missing: %s", text)
			}
		})
	}
}

// TestOpenAIOfficialTokenField checks that OpenAI's own API is sent
// max_completion_tokens, which it wants instead of max_tokens.
func TestOpenAIOfficialTokenField(t *testing.T) {
	o := NewOpenAI(Config{APIKey: "k"})
	if !o.official || o.url != "https://api.openai.com/v1/chat/completions" {
		t.Fatalf("default OpenAI: official %v, url %s", o.official, o.url)
	}
	if NewOpenAI(Config{BaseURL: "http://localhost:11434/v1"}).official {
		t.Error("a local server is taken for OpenAI's own API")
	}
	if a := NewAnthropic(Config{APIKey: "k"}); a.url != "https://api.anthropic.com/v1/messages" {
		t.Errorf("default Anthropic url %s", a.url)
	}
}

// TestProviderFailures checks what a failing answer becomes: the API's
// message and Retry-After in a *StatusError, a fatal status recognised,
// and an answer that is not JSON or far too large refused by name.
func TestProviderFailures(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k")
	cases := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		wantStatus int
		wantWait   time.Duration
		wantFatal  bool
		wantText   string
	}{
		{name: "rate limited", status: 429, header: http.Header{"Retry-After": {"7"}},
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"slow   down"}}`, wantStatus: 429, wantWait: 7 * time.Second, wantText: "slow down"},
		{name: "bad key", status: 401, body: `{"error":{"message":"invalid x-api-key"}}`, wantStatus: 401, wantFatal: true, wantText: "invalid x-api-key"},
		{name: "html error page", status: 502, body: "<html>bad gateway</html>", wantStatus: 502, wantText: "<html>bad gateway</html>"},
		{name: "not JSON", status: 200, body: "hello there", wantText: "not the API's JSON (hello there)"},
		{name: "answer too large", status: 200, body: `{"content":"` + strings.Repeat("x", maxAnswer) + `"}`, wantText: "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := recorder(t, c.status, c.header, c.body)
			_, err := NewAnthropic(Config{BaseURL: srv.URL}).Complete(context.Background(), Request{MaxTokens: 1})
			if err == nil {
				t.Fatal("no error")
			}
			var se *StatusError
			if got := errors.As(err, &se); got != (c.wantStatus != 0) {
				t.Fatalf("StatusError %v, want %v: %v", got, c.wantStatus != 0, err)
			}
			if se != nil && (se.StatusCode != c.wantStatus || se.RetryAfter != c.wantWait) {
				t.Errorf("status %d wait %v, want %d %v", se.StatusCode, se.RetryAfter, c.wantStatus, c.wantWait)
			}
			if errors.Is(err, ErrFatal) != c.wantFatal {
				t.Errorf("fatal %v, want %v", !c.wantFatal, c.wantFatal)
			}
			if !strings.Contains(err.Error(), c.wantText) || len(err.Error()) > 400 {
				t.Errorf("error %.500q, want it to contain %q and stay short", err, c.wantText)
			}
		})
	}
}

// TestProviderNetworkErrorIsRetryable checks that a refused connection
// reaches the retry loop as a transport error.
func TestProviderNetworkErrorIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	_, err := NewOpenAI(Config{BaseURL: base, APIKey: "k"}).Complete(context.Background(), Request{MaxTokens: 1})
	if err == nil || !transportError(err) {
		t.Fatalf("error %v, want a transport error", err)
	}
}
