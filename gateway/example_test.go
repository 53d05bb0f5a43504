package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
)

type issueArgs struct {
	Title string `json:"title" jsonschema:"the issue's title"`
}

// trackerServer is an MCP server of two tools, served over streamable HTTP
// on loopback: the upstream the gateway connects to.
func trackerServer() *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "create_issue", Description: "Open an issue in the bug tracker with a title."},
		func(ctx context.Context, req *mcp.CallToolRequest, a issueArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "opened issue #1: " + a.Title}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "close_issue", Description: "Close an issue of the bug tracker."},
		func(ctx context.Context, req *mcp.CallToolRequest, a issueArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil, nil
		})
	return httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// A gateway in front of one MCP server, in search exposure: its client
// sees two tools, search_tools and call_tool, finds the tool it needs and
// calls it through the gateway. The client here is the Go MCP SDK's,
// connected in memory; over HTTP, serve g.Handler instead.
func Example() {
	upstream := trackerServer()
	defer upstream.Close()
	doc := fmt.Sprintf(`{
	  "mcpServers": {"tracker": {"url": %q}},
	  "toolsearch": {"exposure": "search",
	    "builtins": {"glob": false, "grep": false, "lsp": false, "web_fetch": false, "resources": false}}
	}`, upstream.URL)
	cfg, err := config.Parse("toolsearch.json", []byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer func() { cancel(); g.Close() }()
	g.Start(ctx)
	if err := g.WaitSettled(ctx); err != nil {
		panic(err)
	}

	// The gateway's own search, as a Go program asks it.
	res, err := g.Search(ctx, "close a bug", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("Search:", res.Hits[0].Tool.ID())

	// A client session: what an MCP client sees and does.
	clientEnd, gatewayEnd := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", gatewayEnd); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	fmt.Println("tools/list:", strings.Join(names, ", "))

	found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "open an issue"}})
	if err != nil {
		panic(err)
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(found.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		panic(err)
	}
	fmt.Println("search_tools found:", out.Tools[0].Name)

	called, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool",
		Arguments: map[string]any{"name": out.Tools[0].Name, "arguments": map[string]any{"title": "login fails"}}})
	if err != nil {
		panic(err)
	}
	fmt.Println("call_tool:", called.Content[0].(*mcp.TextContent).Text)
	// Output:
	// Search: tracker/close_issue
	// tools/list: call_tool, search_tools
	// search_tools found: create_issue
	// call_tool: opened issue #1: login fails
}

// startGateway starts a gateway on the configuration doc, with the
// tracker server (trackerServer) at %s, and waits until its servers have
// started.
func startGateway(ctx context.Context, doc, trackerURL string) *gateway.Gateway {
	cfg, err := config.Parse("toolsearch.json", []byte(fmt.Sprintf(doc, trackerURL)), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		panic(err)
	}
	g.Start(ctx)
	if err := g.WaitSettled(ctx); err != nil {
		panic(err)
	}
	return g
}

// Policy is applied in one place, Visible, for every listing, search and
// call; patterns that match nothing are reported with the name most
// likely meant.
func ExampleGateway_Visible() {
	upstream := trackerServer()
	defer upstream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	g := startGateway(ctx, `{
	  "mcpServers": {"tracker": {"url": %q}},
	  "toolsearch": {"policy": {"deny": ["tracker/close_*", "trakcer/delete_*"]},
	    "builtins": {"glob": false, "grep": false, "lsp": false, "resources": false}}
	}`, upstream.URL)
	defer func() { cancel(); g.Close() }() // Close after Start's context ends

	for _, t := range g.Snapshot().Tools() {
		fmt.Println(t.ID(), "visible:", g.Visible(t))
	}
	res, _ := g.Search(ctx, "close an issue", 5)
	for _, h := range res.Hits {
		fmt.Println("search finds", h.Tool.ID())
	}
	for _, w := range g.PolicyWarnings() {
		fmt.Println(w)
	}
	// Output:
	// tracker/close_issue visible: false
	// tracker/create_issue visible: true
	// search finds tracker/create_issue
	// global policy: deny pattern "trakcer/delete_*" names server "trakcer", which is not configured, so it matches nothing; did you mean "tracker/delete_*"?
}

// The state of each upstream server, as toolsearch status shows it.
func ExampleGateway_Statuses() {
	upstream := trackerServer()
	defer upstream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	g := startGateway(ctx, `{"mcpServers": {"tracker": {"url": %q}, "broken": {"url": "http://127.0.0.1:1/mcp", "startTimeout": 2}},
	  "toolsearch": {"limits": {"maxRestarts": 0}}}`, upstream.URL)
	defer func() { cancel(); g.Close() }() // Close after Start's context ends
	for _, s := range g.Statuses() {
		fmt.Printf("%s (%s): %s, %d tools, protocol %q\n", s.Key, s.Transport, s.State, s.Tools, s.Protocol)
	}
	mode, why := g.Exposure()
	fmt.Println("auto exposure:", mode, "—", why)
	// Output:
	// broken (http): failed, 0 tools, protocol ""
	// tracker (http): ready, 2 tools, protocol "2025-11-25"
	// auto exposure: full — auto: all tool definitions (763 tokens) fit under the threshold (20000 tokens, 10% of 200000); by client: claude-code gets full (it defers MCP tools itself)
}

// A running gateway takes a new configuration: servers added start,
// removed ones stop, changed ones restart, the others keep running, and
// the global policy applies at once; settings read only at start are
// named.
func ExampleGateway_Reload() {
	upstream := trackerServer()
	defer upstream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	g := startGateway(ctx, `{"mcpServers": {"tracker": {"url": %q}}, "toolsearch": {"exposure": "auto"}}`, upstream.URL)
	defer func() { cancel(); g.Close() }() // Close after Start's context ends

	next, err := config.Parse("toolsearch.json", []byte(fmt.Sprintf(`{"mcpServers": {"tracker": {"url": %q}},
	  "toolsearch": {"exposure": "search", "policy": {"deny": ["*/close_issue"]}}}`, upstream.URL)), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	diff, err := g.Reload(ctx, next)
	if err != nil {
		panic(err)
	}
	fmt.Println(diff)
	t, _ := g.Snapshot().Tool("tracker/close_issue")
	fmt.Println("close_issue visible:", g.Visible(t))
	// Output:
	// policy changed; 1 unchanged; not applied until restart: toolsearch.exposure
	// close_issue visible: false
}

// Over HTTP, one gateway serves several exposures at once, each at its
// own endpoint, with /healthz beside them. Here its catalog is a static
// one (Options.Static: the embedded demo), which needs no server.
func ExampleGateway_Handler() {
	cfg, err := config.Parse("toolsearch.json", []byte(`{"mcpServers": {}, "toolsearch": {"exposure": "auto",
	  "builtins": {"glob": false, "grep": false, "lsp": false, "resources": false}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Static: demo.Snapshot()})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer func() { cancel(); g.Close() }()
	g.Start(ctx)
	srv := httptest.NewServer(g.Handler(""))
	defer srv.Close()
	fmt.Println(g.Endpoints(""))

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	for _, path := range []string{"/mcp/search", "/mcp/full"} {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + path}, nil)
		if err != nil {
			panic(err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(path, len(list.Tools), "tools")
		cs.Close()
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var health struct {
		Status string `json:"status"`
		Tools  int    `json:"tools"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&health)
	fmt.Println("/healthz:", health.Status, health.Tools, "tools")
	// Output:
	// [/mcp /mcp/auto /mcp/full /mcp/search /mcp/dynamic]
	// /mcp/search 3 tools
	// /mcp/full 89 tools
	// /healthz: ok 89 tools
}
