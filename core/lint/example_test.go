package lint_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/lint"
	"github.com/toolsearch/toolsearch/core/search"
)

// A tool is judged among the tools it competes with: here a server whose
// tools say little, beside one that describes its own well.
func ExampleCheck() {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	tracker, _ := catalog.NewServer("tracker", []json.RawMessage{
		tool("create_issue", "Open an issue in the bug tracker with a title and a body."),
		tool("close_issue", "Close an issue of the bug tracker once it is fixed."),
	}, nil, false)
	vague, _ := catalog.NewServer("vague", []json.RawMessage{
		tool("do_it", "Does it."),
		tool("create_issue", "Open an issue in the bug tracker with a title and a body."),
	}, nil, false)
	snap, _ := catalog.NewSnapshot(tracker, vague)

	rep, err := lint.Check(context.Background(), snap, search.Build(snap), lint.Options{Servers: []string{"vague"}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d tools, %d findable by their own description\n", rep.Tools, rep.Findable)
	for _, f := range rep.Findings {
		fmt.Printf("%s %s [%s]: %s\n", f.Severity, f.Tool, f.Check, f.Message)
	}
	// Output:
	// 2 tools, 1 findable by their own description
	// warning vague/do_it [description]: description of 8 characters says little about when to use the tool
	// warning vague/do_it [findable]: a search for its own first sentence does not rank it in the top 5; say what it does in words users type, or add a searchHint
	// info vague/create_issue [name]: the name is shared with tracker/create_issue: only the qualified name selects it
}
