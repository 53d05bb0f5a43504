package proxy_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// In auto mode the proxy passes bytes through to Anthropic's own API and
// emulates tool search for any other endpoint, and says why.
func ExampleNew() {
	for _, cfg := range []proxy.Config{
		{Upstream: "https://api.anthropic.com"},
		{Upstream: "https://llm-gateway.example.com"},
		{Upstream: "https://llm-gateway.example.com", ToolSearch: proxy.Supported},
	} {
		cfg.Logger = quiet
		p, err := proxy.New(cfg)
		if err != nil {
			panic(err)
		}
		mode, why := p.Mode()
		fmt.Printf("%s: %s (%s)\n", cfg.Upstream, mode, why)
	}
	// Output:
	// https://api.anthropic.com: passthrough (auto: the upstream is Anthropic's API, which supports tool search)
	// https://llm-gateway.example.com: emulate (auto: the upstream is not Anthropic's API and is not configured as supporting tool search)
	// https://llm-gateway.example.com: passthrough (auto: the upstream is configured as supporting tool search)
}

// An endpoint that refuses tool search: the client sends Claude Code's
// request (a search tool, deferred tools); the upstream refuses
// defer_loading, and the proxy sends it again without deferred tools
// before the client sees anything.
func ExampleProxy_ServeHTTP() {
	upstream := proxytest.Start(proxytest.Options{Options: anthropictest.Options{NoReferences: true}})
	defer upstream.Close()
	p, err := proxy.New(proxy.Config{Upstream: upstream.URL, Mode: proxy.ModeEmulate, Logger: quiet})
	if err != nil {
		panic(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()

	body := `{"model": "claude-sonnet-4-5", "max_tokens": 256,
	  "messages": [{"role": "user", "content": "Open an issue about the login bug"}],
	  "tools": [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
	            {"name": "tracker__create_issue", "description": "Open an issue in the bug tracker.",
	             "input_schema": {"type": "object"}, "defer_loading": true}]}`
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "stand-in")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println("client got:", resp.Status, strings.Contains(string(out), `"type":"message"`))
	for i, m := range upstream.Messages() {
		fmt.Printf("upstream request %d: defer_loading %v\n", i+1, strings.Contains(string(m), "defer_loading"))
	}
	// Output:
	// client got: 200 OK true
	// upstream request 1: defer_loading true
	// upstream request 2: defer_loading false
}

// The front door refuses what a web page could send before anything goes
// upstream: a DNS-rebound Host, a foreign Origin, and a form POST (which
// needs no CORS preflight), however its path is spelt.
func ExampleProxy_ServeHTTP_frontDoor() {
	p, err := proxy.New(proxy.Config{Upstream: "https://llm-gateway.example.com", Logger: quiet})
	if err != nil {
		panic(err)
	}
	front := httptest.NewServer(p) // a loopback listener
	defer front.Close()
	for _, c := range []struct{ what, host, origin, path, contentType string }{
		{"a rebound Host", "attacker.example", "", "/v1/messages", "application/json"},
		{"a page's Origin", "", "https://evil.example", "/v1/messages", "application/json"},
		{"a form POST", "", "", "/V1/messages", "application/x-www-form-urlencoded"},
	} {
		req, _ := http.NewRequest("POST", front.URL+c.path, strings.NewReader(`{}`))
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		req.Header.Set("Content-Type", c.contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(c.what, "→", resp.StatusCode)
	}
	// Output:
	// a rebound Host → 403
	// a page's Origin → 403
	// a form POST → 415
}
