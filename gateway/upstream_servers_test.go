package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// modernServer is a Go SDK server written for 2026-07-28: it asks for
// elicitation, sampling and roots with input_required results (the SDK
// asks a 2025 client with requests instead, so it serves both eras); it
// says how long its lists may be cached; it grows a tool at run time; it
// has a resource that changes, a tool with an x-mcp-header parameter, an
// MCP Apps tool with its ui:// resource, and a tool that reports the
// client capabilities of the request.
func modernServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			switch req.(type) {
			case *mcp.ListPromptsRequest:
				c.TTLMs, c.CacheScope = 120_000, "private"
			case *mcp.ReadResourceRequest:
				// The SDK's client caches reads by URI for their TTL, an
				// input_required one too, and would answer the retry
				// from its cache: reads say nothing.
			default:
				c.TTLMs = 30_000
			}
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Tools:      &mcp.ToolCapabilities{ListChanged: true},
			Resources:  &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:    &mcp.PromptCapabilities{ListChanged: true},
			Extensions: map[string]any{"io.modelcontextprotocol/ui": map[string]any{}},
		},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	newState := func(prefix string) string {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return prefix + "-" + hex.EncodeToString(b)
	}
	type noArgs struct{}
	for _, name := range []string{"ask", "ask_again"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Ask the user for a name (" + name + ")."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
				if len(req.Params.InputResponses) == 0 {
					return &mcp.CallToolResult{
						InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
							RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}},
						RequestState: newState(name),
					}, nil, nil
				}
				er, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
				if !ok {
					return nil, nil, fmt.Errorf("no answer to name: %v", req.Params.InputResponses)
				}
				return text(fmt.Sprintf("%s %v state=%s", er.Action, er.Content["name"], req.Params.RequestState)), nil, nil
			})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask_sample", Description: "Ask the client's model for a word."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"word": &mcp.CreateMessageParams{MaxTokens: 10,
					//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say a word"}}}}},
					RequestState: newState("sample")}, nil, nil
			}
			switch r := req.Params.InputResponses["word"].(type) {
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			case *mcp.CreateMessageWithToolsResult:
				if len(r.Content) == 1 {
					if tc, ok := r.Content[0].(*mcp.TextContent); ok {
						return text("sampled " + tc.Text + " from " + r.Model), nil, nil
					}
				}
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			case *mcp.CreateMessageResult:
				if tc, ok := r.Content.(*mcp.TextContent); ok {
					return text("sampled " + tc.Text + " from " + r.Model), nil, nil
				}
			}
			return nil, nil, fmt.Errorf("no sampled text: %#v", req.Params.InputResponses["word"])
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}, RequestState: newState("roots")}, nil, nil
			}
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
			if !ok {
				return nil, nil, errors.New("no roots answer")
			}
			var uris []string
			for _, x := range r.Roots {
				uris = append(uris, x.URI)
			}
			return text("roots: " + strings.Join(uris, " ")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a tool at run time."},
		func(ctx context.Context, req *mcp.CallToolRequest, a growArgs) (*mcp.CallToolResult, any, error) {
			s.AddTool(&mcp.Tool{Name: a.Name, Description: "A tool added at run time: " + a.Name + " frobnicates widgets.",
				InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("frobnicated"), nil
				})
			return text("added " + a.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Change the watched resource."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "watch://r"})
			return text("touched"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Exit the process (as the stdio role only)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if os.Getenv(roleEnv) != "modern" {
				return nil, nil, errors.New("not a process of its own")
			}
			go func() {
				time.Sleep(50 * time.Millisecond)
				os.Exit(3)
			}()
			return text("exiting"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "caps", Description: "Report the request's client capabilities and log level."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			b, _ := json.Marshal(req.Params.Meta[mcp.MetaKeyClientCapabilities])
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			return text(fmt.Sprintf("caps=%s level=%v", b, req.Params.Meta[mcp.MetaKeyLogLevel])), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "regional", Description: "Look up a record in one region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"id":{"type":"string"}},"required":["region"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Region, ID string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("record " + a.ID + " in " + a.Region), nil
		})
	s.AddTool(&mcp.Tool{Name: "show_chart", Description: "Show a chart in the client's app view.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Meta:        mcp.Meta{"ui": map[string]any{"resourceUri": "ui://charts/view.html", "visibility": []any{"model", "app"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chart shown"}},
				Meta: mcp.Meta{"ui": map[string]any{"state": "drawn"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "ui://charts/view.html", Name: "chart view", MIMEType: "text/html;profile=mcp-app",
		Meta: mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []any{"https://charts.example"}}, "prefersBorder": true}}},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app",
				Text: "<html><body>chart</body></html>", Meta: mcp.Meta{"ui": map[string]any{"prefersBorder": true}}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "watch://r", Name: "watched", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "watched"}}}, nil
		})
	nameAsk := mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}
	answered := func(r mcp.InputResponseMap) string {
		if er, ok := r["name"].(*mcp.ElicitResult); ok {
			return fmt.Sprint(er.Content["name"])
		}
		return "?"
	}
	for _, name := range []string{"ask_prompt", "ask_prompt_too"} {
		s.AddPrompt(&mcp.Prompt{Name: name}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.GetPromptResult{InputRequests: nameAsk, RequestState: newState(name)}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "hello " + answered(req.Params.InputResponses) + " state=" + req.Params.RequestState}}}}, nil
		})
	}
	s.AddResource(&mcp.Resource{URI: "ask://secret", Name: "asked", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.ReadResourceResult{InputRequests: nameAsk, RequestState: newState("read")}, nil
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI,
				Text: "for " + answered(req.Params.InputResponses) + " state=" + req.Params.RequestState}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	return s
}

// serveModern runs modernServer over stdio (role "modern").
func serveModern(ctx context.Context) int {
	if err := modernServer().Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "modern:", err)
		return 1
	}
	return 0
}

// serveModernSlowListen serves modernServer over stdio, taking its time
// over each subscriptions/listen request: a subscription holds only once
// the server has taken it.
func serveModernSlowListen(ctx context.Context) int {
	s := modernServer()
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "subscriptions/listen" {
				time.Sleep(400 * time.Millisecond)
			}
			return next(ctx, method, req)
		}
	})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "modern-slow-listen:", err)
		return 1
	}
	return 0
}

// headerLog records the MCP headers of the requests an HTTP server got.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kept := http.Header{}
		for k, v := range r.Header {
			if strings.HasPrefix(k, "Mcp-") {
				kept[k] = v
			}
		}
		l.mu.Lock()
		l.seen = append(l.seen, kept)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// find returns the headers of the requests whose Mcp-Method is method.
func (l *headerLog) find(method string) []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []http.Header
	for _, h := range l.seen {
		if h.Get("Mcp-Method") == method {
			out = append(out, h)
		}
	}
	return out
}

// modernHTTP serves modernServer over stateless streamable HTTP (how the Go
// SDK serves 2026-07-28) on loopback, recording the requests' headers.
func modernHTTP(t testing.TB) (string, *headerLog) {
	t.Helper()
	s := modernServer()
	log := &headerLog{}
	srv := serveHTTP(t, log.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true})))
	return srv.URL, log
}

// modernFront serves the gateway's tools to clients of 2026-07-28, as the
// gateway's own endpoints do to clients of 2025: every visible tool under
// its exposed name, and call_tool, on the gateway's own handlers. The
// gateway's endpoints negotiate 2025-11-25 (downstreamVersions), so the
// tests of the 2026 client side go through this server, over the
// in-memory transport (connectModern) or stateless HTTP (modernFrontHTTP).
func modernFront(t testing.TB, g *Gateway) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolsearch", Version: "test"}, nil)
	s := &session{g: g}
	v := g.cur.Load()
	tools := v.snap.Tools()
	sort.Slice(tools, func(i, j int) bool { return tools[i].ID() < tools[j].ID() })
	for _, ct := range tools {
		if !g.Visible(ct) {
			continue
		}
		mt, err := mcpTool(ct, v.names.toolName(ct))
		if err != nil {
			t.Fatal(err)
		}
		srv.AddTool(mt, s.nativeHandler)
	}
	srv.AddTool(&mcp.Tool{Name: callToolName, Description: callDescription, InputSchema: callInputSchema}, s.handleCall)
	return srv
}

// connectModern connects a 2026-07-28 client (opts) to modernFront over the
// in-memory transport.
func connectModern(t testing.TB, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := modernFront(t, g).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "modern-client", Version: "1"}, opts)
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	cl.AddRoots(&mcp.Root{URI: "file:///work/a", Name: "a"})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	if v := cs.InitializeResult().ProtocolVersion; v != upstream.LatestProtocol {
		t.Fatalf("the test client negotiated %s, want %s", v, upstream.LatestProtocol)
	}
	return cs
}

// modernFrontHTTP serves modernFront over stateless streamable HTTP.
func modernFrontHTTP(t testing.TB, g *Gateway) string {
	t.Helper()
	srv := modernFront(t, g)
	return serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true})).URL
}

// npmPresent reports whether node_modules/.bin/name is installed.
func npmPresent(t testing.TB, name string) bool {
	_, err := os.Stat(filepath.Join(repoRoot(t), "node_modules", ".bin", name))
	return err == nil
}

// resultText is the text of a result's content.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// answering are client options that answer elicitation (name Ada),
// sampling (banana from test-model) and roots (file:///work/a).
func answering(mrtr bool) *mcp.ClientOptions {
	opts := &mcp.ClientOptions{
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "banana"}}, nil
		},
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return opts
}

// serveDeafToDiscover is a server of 2025 that never answers a method it
// does not know (server/discover among them): it answers initialize,
// tools/list and tools/call, and reads everything else in silence.
func serveDeafToDiscover() int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"1"}}`, req.Params.ProtocolVersion)
		case "tools/list":
			result = `{"tools":[{"name":"hello","description":"Say hello.","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"hello"}]}`
		default:
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
	}
	return 0
}
