package deferral_test

import (
	"fmt"

	"github.com/toolsearch/toolsearch/core/deferral"
)

// One request's tools: the search tool, a send-message tool the host
// always shows, and MCP tools. In mode auto, search turns on only once
// the MCP definitions pass a share of the context window; every decision
// says why.
func ExampleDecide() {
	tools := []deferral.Tool{
		{ID: "tool_search", Origin: deferral.SearchTool},
		{ID: "send_message", Origin: deferral.Builtin, Primary: true, Tokens: 120},
		{ID: "github__create_issue", Origin: deferral.MCP, Tokens: 9_000},
		{ID: "github__list_issues", Origin: deferral.MCP, Tokens: 8_000},
		{ID: "memory__read_graph", Origin: deferral.MCP, AlwaysLoad: true, Tokens: 300},
	}
	for _, window := range []int{1_000_000, 100_000} {
		d := deferral.Decide(deferral.Input{
			Tools:         tools,
			Mode:          deferral.Mode{Kind: deferral.Auto},
			ContextWindow: window,
			References:    true,
		})
		fmt.Printf("window %d: search on %v, deferred %v, loaded %v\n", window, d.SearchOn, d.Deferred, d.Loaded)
		fmt.Println(" ", d.Why())
	}
	// Output:
	// window 1000000: search on false, deferred [], loaded [send_message github__create_issue github__list_issues memory__read_graph]
	//   search off (mode auto): the definitions of 2 deferrable tools take 17000 tokens, not more than 10% of the 1000000-token context window (100000)
	// window 100000: search on true, deferred [github__create_issue github__list_issues], loaded [tool_search send_message memory__read_graph]
	//   search on (mode auto): the definitions of 2 deferrable tools take 17000 tokens, more than 10% of the 100000-token context window (10000)
}

// Modes are written as users write them in a flag or a file.
func ExampleParseMode() {
	for _, s := range []string{"on", "off", "auto", "auto:25", "auto:0"} {
		m, err := deferral.ParseMode(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%q → %s\n", s, m)
	}
	// Output:
	// "on" → on
	// "off" → off
	// "auto" → auto
	// "auto:25" → auto:25
	// error: tool search mode "auto:0": the percentage must be from 1 to 100, not 0
}

// Without tool references on the endpoint, search stays on only when the
// caller can expand found tools itself; otherwise it is off, and the
// reason names the endpoint's problem.
func ExampleDecision_Why() {
	tools := []deferral.Tool{
		{ID: "tool_search", Origin: deferral.SearchTool},
		{ID: "github__create_issue", Origin: deferral.MCP, Tokens: 900},
	}
	for _, expand := range []bool{false, true} {
		d := deferral.Decide(deferral.Input{Tools: tools, NoReferencesWhy: "the endpoint rejects tool_reference blocks", Expand: expand})
		fmt.Printf("expand %v: search on %v, expand %v: %s\n", expand, d.SearchOn, d.Expand, d.Why())
	}
	// Output:
	// expand false: search on false, expand false: search off: the endpoint rejects tool_reference blocks
	// expand true: search on true, expand true: search on (mode on): 1 tool deferred; the endpoint rejects tool_reference blocks, so discovered tools are sent in full and references are written as text
}
