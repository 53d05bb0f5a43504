package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/internal/refusaltest"
)

// TestReadRefusalTable reads the error texts real endpoints give (the
// table package messages and the proxy are tested with) through the SDK:
// each is the answer of a loopback endpoint to the table's request, sent
// with its betas, and ReadRefusal reads the SDK's error against the
// request it carries.
func TestReadRefusalTable(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, tc.Body)
			}))
			t.Cleanup(srv.Close)
			c := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
			opts := []option.RequestOption{option.WithRequestBody("application/json", []byte(table.Request))}
			for _, b := range table.Betas {
				opts = append(opts, option.WithHeaderAdd("anthropic-beta", b))
			}
			_, err := c.Messages.New(context.Background(), sdk.MessageNewParams{}, opts...)
			if err == nil {
				t.Fatal("no error")
			}
			r, ok := anthropic.ReadRefusal(err)
			want := map[string]messages.Strategy{"inline": messages.ReferenceAdd, "fold": messages.Classic, "emulate": messages.Plain}[tc.Want]
			if ok != (want != messages.StrategyAuto) || r.Below != want {
				t.Fatalf("ReadRefusal = %+v, %v; want below %s (%s)", r, ok, want, tc.Want)
			}
			// The same through RefusalTo, for a caller without the SDK.
			r2, ok2 := anthropic.RefusalTo(err, []byte(table.Request), table.Betas)
			if ok2 != ok || r2 != r {
				t.Fatalf("RefusalTo = %+v, %v; ReadRefusal = %+v, %v", r2, ok2, r, ok)
			}
		})
	}
}

// refusingFront serves, on loopback, an endpoint in front of backend that
// answers a POST with refuse's 400 body when it gives one, and passes the
// request on otherwise. It returns the URL and the number of refusals.
func refusingFront(t *testing.T, backend string, refuse func(body []byte) (string, bool)) (string, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if msg, ok := refuse(b); ok {
			mu.Lock()
			n++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, msg)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.RequestURI(), bytes.NewReader(b))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// hasSystemMessage reports whether a request body holds a system-role
// message inside messages.
func hasSystemMessage(body []byte) bool {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	for _, m := range req.Messages {
		if m.Role == "system" {
			return true
		}
	}
	return false
}

// TestDowngradeInEndpointsWords: an endpoint refusing system messages in
// any of the words of the table (Anthropic's, a Rust router's, FastAPI's,
// vLLM's...) makes the library fall back to Classic, which sends none, and
// the task completes.
func TestDowngradeInEndpointsWords(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range table.Cases {
		if tc.Want != "fold" || strings.Contains(tc.Body, "anthropic-beta") {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			backend := anthropictest.New(t, anthropictest.Options{})
			url, refusals := refusingFront(t, backend.URL, func(b []byte) (string, bool) { return tc.Body, hasSystemMessage(b) })
			caps := &anthropic.Capabilities{}
			cfg := anthropic.Config{Strategy: anthropic.ReferenceAdd, Endpoint: url, Capabilities: caps}
			c := sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
			conv := &anthropic.Conversation{}
			run(ctx, t, toolset(t, demoSnap(), cfg), c, conv, "Create an issue on the code host about the login bug")
			if got := lastText(conv); !strings.Contains(got, "Done: ok: ran") {
				t.Fatalf("the model ended with %q", got)
			}
			if refusals() == 0 {
				t.Fatal("the endpoint refused nothing: the test sent no system message")
			}
			got, why, ok := caps.Get(url, "claude-test")
			if !ok || got != anthropic.Classic || !strings.Contains(why, "system message") {
				t.Fatalf("remembered %s (%s, %v), want classic after a refused system message", got, why, ok)
			}
		})
	}
}

// TestNoDowngradeForWhatWasNotSent: a 400 naming a feature of tool search
// the request did not carry (an endpoint's error about something else, or
// an attacker's endpoint) lowers nothing: the strategy stays, nothing is
// remembered for later conversations, and the error reaches the caller
// after one request.
func TestNoDowngradeForWhatWasNotSent(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"type":"error","error":{"type":"invalid_request_error","message":"tool_reference blocks are not supported by this endpoint"}}`,
		`{"type":"error","error":{"type":"invalid_request_error","message":"defer_loading: Extra inputs are not permitted"}}`,
		`{"error":{"message":"Unexpected value(s) ` + "`advanced-tool-use-2025-11-20`" + ` for the anthropic-beta header"}}`,
	}
	for _, body := range bodies {
		t.Run(body[:40], func(t *testing.T) {
			t.Parallel()
			backend := anthropictest.New(t, anthropictest.Options{})
			url, refusals := refusingFront(t, backend.URL, func([]byte) (string, bool) { return body, true })
			caps := &anthropic.Capabilities{}
			ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Inline, Endpoint: url, Capabilities: caps})
			conv := &anthropic.Conversation{Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}}
			c := sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
			_, turn, err := ts.Send(context.Background(), &c.Messages, conv, sdk.MessageNewParams{Model: "claude-test", MaxTokens: 10})
			if err == nil {
				t.Fatal("no error")
			}
			sent, _ := json.Marshal(turn.Params)
			for _, name := range []string{"tool_reference", "defer_loading", "advanced-tool-use"} {
				if strings.Contains(body, name) && (bytes.Contains(sent, []byte(name)) || strings.Contains(strings.Join(turn.Betas, ","), name)) {
					t.Fatalf("the request carried %s after all: %s", name, sent)
				}
			}
			if turn.Strategy != anthropic.Inline || refusals() != 1 {
				t.Fatalf("strategy %s after %d requests", turn.Strategy, refusals())
			}
			if s, why, ok := caps.Get(url, "claude-test"); ok {
				t.Fatalf("remembered %s (%s)", s, why)
			}
		})
	}
}
