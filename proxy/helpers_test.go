package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// testLogger logs warnings and errors, and everything with -v.
func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// startProxy runs a proxy in front of upstream on a loopback port.
func startProxy(t testing.TB, cfg proxy.Config) (*proxy.Proxy, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// brokenUpstream is a stand-in that refuses tool search like the endpoints
// that break it; searchTool is the name its scripted model calls.
func brokenUpstream(t testing.TB, searchTool string) *proxytest.Upstream {
	return proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true, SearchToolName: searchTool}})
}

// testCtx bounds every wait of a test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func goClient(url string) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test-secret"), option.WithMaxRetries(0))
}

// deferredTools are MCP tools as a client sends them with defer_loading.
var deferredTools = []string{
	`{"name":"mcp__slack__post_message","description":"Post a message to a Slack channel","input_schema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}}},"defer_loading":true}`,
	`{"name":"mcp__slack__list_channels","description":"List the channels of the Slack workspace","input_schema":{"type":"object","properties":{}},"defer_loading":true}`,
	`{"name":"mcp__github__create_pull_request","description":"Open a pull request on a GitHub repository","input_schema":{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"}}},"defer_loading":true}`,
	`{"name":"mcp__github__list_issues","description":"List the issues of a GitHub repository","input_schema":{"type":"object","properties":{"repo":{"type":"string"}}},"defer_loading":true}`,
	`{"name":"mcp__jira__create_ticket","description":"Create a Jira ticket in a project","input_schema":{"type":"object","properties":{"project":{"type":"string"}}},"defer_loading":true}`,
}

const bashTool = `{"name":"Bash","description":"Run a shell command","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}`

// rawTools turns JSON tool definitions into SDK params.
func rawTools(defs ...string) []sdk.ToolUnionParam {
	out := make([]sdk.ToolUnionParam, len(defs))
	for i, d := range defs {
		out[i] = param.Override[sdk.ToolUnionParam](json.RawMessage(d))
	}
	return out
}

// serverSearchTools is a server-side tool search request's tools.
func serverSearchTools(typ string) []sdk.ToolUnionParam {
	name := strings.TrimSuffix(typ, "_20251119")
	defs := append([]string{bashTool, `{"type":"` + typ + `","name":"` + name + `"}`}, deferredTools...)
	return rawTools(defs...)
}

// blockTypes lists the types of a message's content blocks.
func blockTypes(m *sdk.Message) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b.Type)
	}
	return out
}

// postJSON posts a body and returns status and body.
func postJSON(ctx context.Context, t testing.TB, url string, header http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, b
}

// mustMarshal marshals test values.
func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRawUpstream starts a loopback server with a handler of the test's.
func newRawUpstream(t testing.TB, h http.HandlerFunc) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newRawUpstreamServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	return srv
}

func asError(err error, target **sdk.Error) bool { return errors.As(err, target) }

// quietLogger drops everything below errors (benchmarks).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// refusingFront serves, on loopback, an endpoint in front of backend that
// records every request body and answers with the 400 refuse gives (a
// message, ok) or else passes the request on. seen returns the bodies so
// far.
func refusingFront(t testing.TB, backend string, refuse func(body []byte) (string, bool)) (url string, seen func() [][]byte) {
	var mu sync.Mutex
	var bodies [][]byte
	url = newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		if msg, ok := refuse(b); ok {
			proxytest.WriteError(w, http.StatusBadRequest, "invalid_request_error", msg)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.Path, bytes.NewReader(b))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			proxytest.WriteError(w, http.StatusBadGateway, "api_error", err.Error())
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
	return url, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}
