package dashboard_test

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

// A program that embeds the gateway passes the dashboard as both its event
// feed and its UI (served at /ui by g.Handler). Its State is what the
// pages show: here a client's session and its search.
func ExampleNew() {
	cfg, err := config.Parse("toolsearch.json", []byte(`{"mcpServers": {}, "toolsearch": {"exposure": "search",
	  "builtins": {"glob": false, "grep": false, "lsp": false, "resources": false}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	d := dashboard.New(dashboard.FromConfig(cfg.Gateway.Dashboard))
	defer d.Close() // before the HTTP server stops, so that open event streams end
	g, err := gateway.New(cfg, gateway.Options{Static: demo.Snapshot(), Feed: d, UI: d})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer func() { cancel(); g.Close() }()
	g.Start(ctx)

	clientEnd, gatewayEnd := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", gatewayEnd); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example-agent", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "open a pull request", "max_results": 2}}); err != nil {
		panic(err)
	}

	st := d.State()
	for _, s := range st.Sessions {
		fmt.Printf("session of %s: %s exposure, deferred by the %s\n", s.Client, s.Exposure, s.DeferredBy)
	}
	for _, s := range st.Searches {
		fmt.Printf("search %q (%s): %v\n", s.Query, s.Form, s.Results)
	}
	// Output:
	// session of example-agent 1: search exposure, deferred by the gateway
	// search "open a pull request" (keyword): [codehost__create_pull_request codehost__merge_pull_request]
}
