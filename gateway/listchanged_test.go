package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// announcingUpstream is a Go SDK server over streamable HTTP on loopback
// with one tool and one prompt, which it can register again unchanged: the
// server then sends list_changed although its lists are the same. Each
// list_changed it sends goes out burst times on the wire (a storm), and
// the notifications sent and the tools/list requests answered are counted.
type announcingUpstream struct {
	url       string
	s         *mcp.Server
	tool      *mcp.Tool
	prompt    *mcp.Prompt
	burst     int
	sent      atomic.Int64 // tools/list_changed notifications sent
	toolLists atomic.Int64 // tools/list requests answered
}

func startAnnouncingUpstream(t *testing.T, name string, burst int) *announcingUpstream {
	t.Helper()
	u := &announcingUpstream{burst: max(burst, 1),
		tool: &mcp.Tool{Name: "forecast", Description: "The weather forecast of a city, from " + name + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		prompt: &mcp.Prompt{Name: "brief", Description: "A weather briefing from " + name + "."}}
	u.s = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	u.s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "notifications/tools/list_changed" {
				return next(ctx, method, req)
			}
			var res mcp.Result
			var err error
			for range u.burst {
				u.sent.Add(1)
				res, err = next(ctx, method, req)
			}
			return res, err
		}
	})
	u.s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				u.toolLists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	u.readdTool()
	u.readdPrompt()
	u.url = serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.s }, nil)).URL
	return u
}

// readdTool registers the tool again, unchanged: the server announces a
// change of its tool list.
func (u *announcingUpstream) readdTool() {
	u.s.AddTool(u.tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
	})
}

// readdPrompt registers the prompt again, unchanged.
func (u *announcingUpstream) readdPrompt() {
	u.s.AddPrompt(u.prompt, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "brief me"}}}}, nil
	})
}

// changeCounter is a Go SDK client that counts the list_changed
// notifications of tools and prompts it gets.
type changeCounter struct {
	cs             *mcp.ClientSession
	tools, prompts chan struct{}
}

func connectCounting(t *testing.T, endpoint, version string) *changeCounter {
	t.Helper()
	c := &changeCounter{tools: make(chan struct{}, 64), prompts: make(chan struct{}, 64)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "list-watcher", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { c.tools <- struct{}{} },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { c.prompts <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	c.cs = cs
	t.Cleanup(func() { closeSession(t, cs) })
	return c
}

// count drains ch for d and returns how many arrived.
func count(ch chan struct{}, d time.Duration) int {
	n := 0
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ch:
			n++
		case <-timer.C:
			return n
		}
	}
}

// awaitAnnounced calls trigger until ch gets a notification (a 2026-07-28
// client's listen stream may not be open yet at the first), within 15 s.
func awaitAnnounced(t *testing.T, what string, ch chan struct{}, trigger func()) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		trigger()
		select {
		case <-ch:
			return
		case <-time.After(700 * time.Millisecond):
		}
	}
	t.Fatalf("the client never got a %s list_changed after the server announced one", what)
}

// toolsOf lists the client's tools, by name, with each definition as JSON.
func toolsOf(t *testing.T, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]string{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		b, _ := json.Marshal(tool)
		out[tool.Name] = string(b)
	}
	return out
}

// TestListChangedPassedOn: a server that announces a list change its
// lists do not show (the same tool or prompt registered again) has its
// announcement passed on, in either era and exposure: as a session
// notification (2025-11-25) or on the listen stream (2026-07-28); the
// client's list is the same before and after.
func TestListChangedPassedOn(t *testing.T) {
	up := startAnnouncingUpstream(t, "weather", 1)
	g := startGateway(t, writeConfig(t, map[string]any{"weather": map[string]any{"type": "http", "url": up.url}},
		map[string]any{"exposure": "full", "http": map[string]any{"exposures": []string{"full", "dynamic"}}}))
	waitState(t, g, "weather", 30*time.Second, StateReady)
	base := serveHTTP(t, g.Handler("")).URL
	for _, c := range []struct{ name, version, path string }{
		{"2025 session, full", era2025, "/mcp/full"},
		{"2026 listen stream, full", era2026, "/mcp/full"},
		{"2025 session, dynamic with the tool found", era2025, "/mcp/dynamic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := connectCounting(t, base+c.path, c.version)
			if c.path == "/mcp/dynamic" {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if _, err := cl.cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": "select:forecast"}}); err != nil {
					t.Fatal(err)
				}
			}
			before := toolsOf(t, cl.cs)
			if _, ok := before["forecast"]; !ok {
				t.Fatalf("the upstream's tool is not listed: %v", before)
			}
			count(cl.tools, 300*time.Millisecond) // the search's own list_changed
			awaitAnnounced(t, "tools", cl.tools, up.readdTool)
			awaitAnnounced(t, "prompts", cl.prompts, up.readdPrompt)
			if after := toolsOf(t, cl.cs); len(after) != len(before) || after["forecast"] != before["forecast"] {
				t.Fatalf("the list changed although the server's did not:\n%v\n%v", before, after)
			}
		})
	}
}

// TestListChangedStorm: a server that sends fifty list_changed at once is
// listed again once or twice, and each client is told once.
func TestListChangedStorm(t *testing.T) {
	up := startAnnouncingUpstream(t, "storm", 50)
	g := startGateway(t, writeConfig(t, map[string]any{"storm": map[string]any{"type": "http", "url": up.url}},
		map[string]any{"exposure": "full"}))
	waitState(t, g, "storm", 30*time.Second, StateReady)
	base := serveHTTP(t, g.Handler("")).URL
	for _, version := range []string{era2025, era2026} {
		t.Run(version, func(t *testing.T) {
			cl := connectCounting(t, base+"/mcp", version)
			awaitAnnounced(t, "tools", cl.tools, up.readdTool) // the stream is open
			count(cl.tools, time.Second)                       // the rest of that storm
			sent, lists := up.sent.Load(), up.toolLists.Load()
			up.readdTool()
			got := count(cl.tools, 2*time.Second)
			sent, lists = up.sent.Load()-sent, up.toolLists.Load()-lists
			if sent < 50 {
				t.Fatalf("the server sent %d list_changed, want a storm of 50", sent)
			}
			if got != 1 {
				t.Errorf("a storm of %d list_changed reached the client as %d, want 1", sent, got)
			}
			if lists < 1 || lists > 2 {
				t.Errorf("a storm of %d list_changed cost %d listings, want 1 or 2", sent, lists)
			}
			t.Logf("%d list_changed from the server: %d listing(s), %d list_changed to the client", sent, lists, got)
		})
	}
}

// TestListChangedHiddenServer: a server whose tools policy hides is
// listed again when it announces a change, and no client is told; a
// visible server's announcement in the same gateway is passed on.
func TestListChangedHiddenServer(t *testing.T) {
	hidden := startAnnouncingUpstream(t, "hidden", 1)
	shown := startAnnouncingUpstream(t, "shown", 1)
	g := startGateway(t, writeConfig(t, map[string]any{
		"hidden": map[string]any{"type": "http", "url": hidden.url},
		"shown":  map[string]any{"type": "http", "url": shown.url},
	}, map[string]any{"exposure": "full", "policy": map[string]any{"deny": []string{"hidden/*"}}}))
	waitState(t, g, "hidden", 30*time.Second, StateReady)
	waitState(t, g, "shown", 30*time.Second, StateReady)
	base := serveHTTP(t, g.Handler("")).URL
	for _, version := range []string{era2025, era2026} {
		t.Run(version, func(t *testing.T) {
			cl := connectCounting(t, base+"/mcp", version)
			for name := range toolsOf(t, cl.cs) {
				if name == "hidden__forecast" {
					t.Fatalf("a denied tool is listed: %s", name)
				}
			}
			awaitAnnounced(t, "tools", cl.tools, shown.readdTool) // passed on, and the stream is open
			count(cl.tools, 300*time.Millisecond)
			lists := hidden.toolLists.Load()
			hidden.readdTool()
			if n := count(cl.tools, 1500*time.Millisecond); n != 0 {
				t.Errorf("a change of a server whose tools are all hidden reached the client %d times", n)
			}
			if hidden.toolLists.Load() == lists {
				t.Errorf("the hidden server was not listed again after its list_changed")
			}
		})
	}
}
