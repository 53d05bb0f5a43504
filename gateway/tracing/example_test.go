package tracing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/tracing"
)

// A program that embeds the gateway gives it a Provider of its own; here a
// Recorder keeps the spans in memory. A client's trace context in a
// request's _meta makes the gateway's spans part of the client's trace.
func ExampleRecorder() {
	rec := &tracing.Recorder{}
	provider := tracing.NewProvider(tracing.ProviderOptions{Processor: rec})
	cfg, err := config.Parse("toolsearch.json", []byte(`{"mcpServers": {}, "toolsearch": {"exposure": "search",
	  "builtins": {"glob": false, "grep": false, "lsp": false, "resources": false}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Static: demo.Snapshot(), TracerProvider: provider})
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "open a pull request"},
		Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	if err != nil {
		panic(err)
	}
	client, _ := tracing.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	names := map[tracing.SpanID]string{client.SpanID: "the client's span"}
	var inTrace []*tracing.Span
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID == client.TraceID { // the spans of the client's trace
			names[s.SpanContext().SpanID] = s.Name()
			inTrace = append(inTrace, s)
		}
	}
	for _, s := range inTrace {
		fmt.Printf("%s, below %s\n", s.Name(), names[s.Parent().SpanID])
	}
	// Output:
	// search, below tools/call search_tools
	// tools/call search_tools, below the client's span
}
