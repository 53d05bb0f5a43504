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
