package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// forwarderServer is a Go SDK server that uses everything a server may
// say to a client: it asks for sampling, elicitation and roots, pings the
// client, logs, reports progress, notices cancellation, has a resource
// clients subscribe to and a prompt and a template with completions. Its
// counters are read back through tools.
func forwarderServer() *mcp.Server {
	var (
		mu           sync.Mutex
		subs         = map[string]int{}
		rootsChanged atomic.Int32
		cancelled    atomic.Int32
	)
	s := mcp.NewServer(&mcp.Implementation{Name: "forwarder", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var all []string
			switch {
			case req.Params.Ref.Type == "ref/prompt" && req.Params.Ref.Name == "greet":
				all = []string{"alice", "albert", "bob"}
			case req.Params.Ref.Type == "ref/resource" && req.Params.Ref.URI == "watch://items/{id}":
				all = []string{"item-1", "item-2"}
			default:
				return nil, fmt.Errorf("no completions for %s %s%s", req.Params.Ref.Type, req.Params.Ref.Name, req.Params.Ref.URI)
			}
			var out []string
			for _, v := range all {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					out = append(out, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out, Total: len(out)}}, nil
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			mu.Lock()
			subs[req.Params.URI]++
			mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			mu.Lock()
			subs[req.Params.URI]--
			mu.Unlock()
			return nil
		},
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { rootsChanged.Add(1) },
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	type noArgs struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "ask_sample", Description: "Ask the client's model for a word."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say a word"}}}})
			if err != nil {
				return nil, nil, err
			}
			tc, _ := res.Content.(*mcp.TextContent)
			if tc == nil {
				return nil, nil, errors.New("no text in the sampling result")
			}
			return text("sampled " + tc.Text + " from " + res.Model), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_elicit", Description: "Ask the user for a name."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text("roots: " + strings.Join(uris, " ")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ping_client", Description: "Ping the client."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, nil, err
			}
			return text("pong"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log_info", Description: "Log a line at info level."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "fw", Data: "a line from the server"})
			return text("logged"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress3", Description: "Report progress three times."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: "step " + strconv.Itoa(i)})
				}
			}
			return text("done"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait_cancel", Description: "Wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return nil, nil, ctx.Err()
			case <-time.After(30 * time.Second):
				return text("not cancelled"), nil, nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Change the watched resource."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			_ = s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "watch://r"})
			return text("touched"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "meta_echo", Description: "Return the request's _meta trace."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint("trace=", req.Params.Meta["trace"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Exit the process (as the stdio role only)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			if os.Getenv(roleEnv) != "forwarder" {
				return nil, nil, errors.New("not a process of its own")
			}
			go func() {
				time.Sleep(50 * time.Millisecond)
				os.Exit(3)
			}()
			return text("exiting"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "counters", Description: "What the server saw."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			n := subs["watch://r"]
			mu.Unlock()
			return text(fmt.Sprintf("subs=%d roots_changed=%d cancelled=%d", n, rootsChanged.Load(), cancelled.Load())), nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "watch://r", Name: "watched", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "watched"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "watch://items/{id}", Name: "item"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "an item"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	return s
}

// serveForwarder runs forwarderServer over stdio (role "forwarder").
func serveForwarder(ctx context.Context) int {
	if err := forwarderServer().Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "forwarder:", err)
		return 1
	}
	return 0
}

// fwdClient is a client that answers what a server may ask, and records
// what it is told.
type fwdClient struct {
	cl *mcp.Client
	cs *mcp.ClientSession
	mu sync.Mutex
	//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
	logs     []*mcp.LoggingMessageParams
	progress []string
	updated  []string
}

//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
func (c *fwdClient) seen() (logs []*mcp.LoggingMessageParams, progress, updated []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.logs), slices.Clone(c.progress), slices.Clone(c.updated)
}

// connectFwdClient connects a client to url; capable clients answer
// sampling, elicitation and roots, the others declare none of them.
func connectFwdClient(t *testing.T, url string, capable bool) *fwdClient {
	t.Helper()
	c := &fwdClient{}
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, r.Params)
			c.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params.Message)
			c.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated = append(c.updated, r.Params.URI)
			c.mu.Unlock()
		},
	}
	if capable {
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		opts.Capabilities = &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		opts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "banana"}}, nil
		}
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
	}
	c.cl = mcp.NewClient(&mcp.Implementation{Name: "fwd-client", Version: "1"}, opts)
	if capable {
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		c.cl.AddRoots(&mcp.Root{URI: "file:///work/a", Name: "a"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, legacySession)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	c.cs = cs
	t.Cleanup(func() { closeSession(t, cs) })
	return c
}

func (c *fwdClient) call(t *testing.T, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestForwardingBothWays: through the gateway, a client and a server say
// to each other everything they could say directly — sampling,
// elicitation, roots (and their changes), pings, a call's _meta, logs,
// progress, cancellation, resource subscriptions and their updates,
// completions —
// with the server behind stdio and behind streamable HTTP. The server is
// the only one, so its names are bare, as if it were connected directly.
// The server asks with requests of its own, as servers of 2025-11-25 do,
// which 2026-07-28 forbids: over stdio it is pinned to 2025-11-25; over
// HTTP its handler is stateful, so it offers no 2026-07-28 and the gateway
// falls back to 2025-11-25 by itself.
func TestForwardingBothWays(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			up := roleServer(t, "forwarder")
			up["protocolVersion"] = upstream.LegacyProtocol
			if transport == "http" {
				s := forwarderServer()
				srv := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
				up = map[string]any{"type": "http", "url": srv.URL}
			}
			g := startGateway(t, writeConfig(t, map[string]any{"fw": up}, nil))
			waitState(t, g, "fw", 20*time.Second, StateReady)
			gw := serveHTTP(t, g.Handler("full"))
			c := connectFwdClient(t, gw.URL+"/mcp", true)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			for tool, want := range map[string]string{
				"ask_sample":  "sampled banana from test-model",
				"ask_elicit":  "accept Ada",
				"ask_roots":   "roots: file:///work/a",
				"ping_client": "pong",
			} {
				if got, isErr := c.call(t, tool); isErr || got != want {
					t.Errorf("%s = %q (error %v), want %q", tool, got, isErr, want)
				}
			}
			if err := c.cs.Ping(ctx, nil); err != nil {
				t.Errorf("ping the gateway: %v", err)
			}
			mp := &mcp.CallToolParams{Name: "meta_echo", Arguments: map[string]any{}, Meta: mcp.Meta{"trace": "t-42"}}
			if res, err := c.cs.CallTool(ctx, mp); err != nil || res.Content[0].(*mcp.TextContent).Text != "trace=t-42" {
				t.Errorf("the call's _meta did not reach the server: %v %v", res, err)
			}

			// Roots changed: the server hears of it.
			//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
			c.cl.AddRoots(&mcp.Root{URI: "file:///work/b", Name: "b"})
			waitFor(t, "the roots change to reach the server", 10*time.Second, func() bool {
				got, _ := c.call(t, "counters")
				return !strings.Contains(got, "roots_changed=0")
			})
			if got, _ := c.call(t, "ask_roots"); got != "roots: file:///work/a file:///work/b" {
				t.Errorf("roots after the change = %q", got)
			}

			// Logging: the level goes up, the server's lines come down, with
			// the server's own logger name (bare naming).
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a log line from the server", 10*time.Second, func() bool {
				c.call(t, "log_info")
				logs, _, _ := c.seen()
				//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
				return slices.ContainsFunc(logs, func(l *mcp.LoggingMessageParams) bool {
					return l.Data == "a line from the server" && l.Logger == "fw"
				})
			})

			// Progress reaches the client (that it comes before the result
			// is TestProgressOverHTTPUpstream's).
			params := &mcp.CallToolParams{Name: "progress3", Arguments: map[string]any{}}
			params.SetProgressToken("p-1")
			if res, err := c.cs.CallTool(ctx, params); err != nil || res.IsError {
				t.Fatalf("progress3: %v %v", err, res)
			}
			waitFor(t, "three progress messages", 5*time.Second, func() bool {
				_, progress, _ := c.seen()
				return slices.Equal(progress, []string{"step 1", "step 2", "step 3"})
			})

			// Cancellation reaches the server.
			cctx, ccancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := c.cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait_cancel", Arguments: map[string]any{}})
				errc <- err
			}()
			time.Sleep(300 * time.Millisecond)
			ccancel()
			if err := <-errc; err == nil {
				t.Error("a cancelled call returned no error")
			}
			waitFor(t, "the server to see the cancellation", 10*time.Second, func() bool {
				got, _ := c.call(t, "counters")
				return strings.Contains(got, "cancelled=1")
			})

			// Subscriptions: subscribe, an update comes, unsubscribe, none.
			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://r"}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			if got, _ := c.call(t, "counters"); !strings.Contains(got, "subs=1") {
				t.Errorf("after subscribing, the server has %q", got)
			}
			c.call(t, "touch")
			waitFor(t, "notifications/resources/updated", 10*time.Second, func() bool {
				_, _, updated := c.seen()
				return slices.Contains(updated, "watch://r")
			})
			if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "watch://r"}); err != nil {
				t.Fatalf("unsubscribe: %v", err)
			}
			if got, _ := c.call(t, "counters"); !strings.Contains(got, "subs=0") {
				t.Errorf("after unsubscribing, the server has %q", got)
			}
			_, _, before := c.seen()
			c.call(t, "touch")
			time.Sleep(300 * time.Millisecond)
			if _, _, after := c.seen(); len(after) != len(before) {
				t.Errorf("an update after unsubscribing: %v", after)
			}

			// Completions, for a prompt argument and a template variable.
			for _, tc := range []struct {
				ref        *mcp.CompleteReference
				arg, value string
				want       []string
			}{
				{&mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "who", "al", []string{"alice", "albert"}},
				{&mcp.CompleteReference{Type: "ref/resource", URI: "watch://items/{id}"}, "id", "item-", []string{"item-1", "item-2"}},
			} {
				res, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: tc.ref, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value}})
				if err != nil || !slices.Equal(res.Completion.Values, tc.want) {
					t.Errorf("complete %+v %s=%q: %v %v", tc.ref, tc.arg, tc.value, res, err)
				}
			}
			if _, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"},
				Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
				t.Errorf("completing an unknown prompt: %v", err)
			}

			// A client that declared none of sampling, elicitation and
			// roots, while a capable client is connected too: the server
			// is told that the client it serves cannot answer, and its
			// request never goes to the other client.
			plain := connectFwdClient(t, gw.URL+"/mcp", false)
			for tool, want := range map[string]string{"ask_sample": "does not support sampling", "ask_elicit": "does not support elicitation"} {
				if got, isErr := plain.call(t, tool); !isErr || !strings.Contains(got, want) {
					t.Errorf("%s from a client without the capability = %q (error %v), want it to say %q", tool, got, isErr, want)
				}
			}
			if got, isErr := plain.call(t, "ask_roots"); isErr || got != "roots: " {
				t.Errorf("ask_roots from a client without roots = %q (error %v), want none", got, isErr)
			}

			// A subscription outlives a restart of the server: the gateway
			// subscribes again.
			if transport == "stdio" {
				if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://r"}); err != nil {
					t.Fatal(err)
				}
				restarts := g.ups()["fw"].Status().Restarts
				c.call(t, "exit")
				waitFor(t, "the server to be restarted", 20*time.Second, func() bool {
					st := g.ups()["fw"].Status()
					return st.Restarts > restarts && st.State == StateReady
				})
				if got, _ := c.call(t, "counters"); !strings.Contains(got, "subs=1") {
					t.Errorf("after a restart, the server has %q", got)
				}
				_, _, before := c.seen()
				c.call(t, "touch")
				waitFor(t, "an update after the restart", 10*time.Second, func() bool {
					_, _, updated := c.seen()
					return len(updated) > len(before)
				})
				if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "watch://r"}); err != nil {
					t.Fatal(err)
				}
			}

			// A closed session's subscriptions end upstream.
			other := connectFwdClient(t, gw.URL+"/mcp", true)
			if err := other.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://r"}); err != nil {
				t.Fatal(err)
			}
			closeSession(t, other.cs)
			waitFor(t, "the closed session's subscription to end upstream", 10*time.Second, func() bool {
				got, _ := c.call(t, "counters")
				return strings.Contains(got, "subs=0")
			})
		})
	}
}

// TestForwardingWithoutCapableClient: a server's sampling or elicitation
// fails with a clear message when no connected client supports it.
func TestForwardingWithoutCapableClient(t *testing.T) {
	t.Parallel()
	up := roleServer(t, "forwarder")
	up["protocolVersion"] = upstream.LegacyProtocol // it asks as a 2025-11-25 server does
	g := startGateway(t, writeConfig(t, map[string]any{"fw": up}, nil))
	waitState(t, g, "fw", 20*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	c := connectFwdClient(t, gw.URL+"/mcp", false)
	for tool, want := range map[string]string{
		"ask_sample": "does not support sampling",
		"ask_elicit": "does not support elicitation",
	} {
		if got, isErr := c.call(t, tool); !isErr || !strings.Contains(got, want) {
			t.Errorf("%s without a capable client = %q (error %v), want it to say %q", tool, got, isErr, want)
		}
	}
	if got, isErr := c.call(t, "ask_roots"); isErr || got != "roots: " {
		t.Errorf("ask_roots without a client with roots = %q (error %v), want no roots", got, isErr)
	}
}
