package search_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// Index two servers' tools, as a gateway does with what each server's
// tools/list returned, and find tools by what they do.
func Example() {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	github, err := catalog.NewServer("github", []json.RawMessage{
		tool("create_pull_request", "Open a pull request from a branch into the base branch of a repository."),
		tool("list_issues", "List the issues of a repository, filtered by state and labels."),
	}, nil, false)
	if err != nil {
		panic(err)
	}
	calendar, err := catalog.NewServer("calendar", []json.RawMessage{
		tool("create_event", "Add an event with a title, start and end time to a calendar."),
		tool("list_events", "List the events of a calendar between two dates."),
	}, nil, false)
	if err != nil {
		panic(err)
	}
	snap, err := catalog.NewSnapshot(github, calendar)
	if err != nil {
		panic(err)
	}
	ix := search.Build(snap)

	for _, q := range []string{"open a PR", "merge my branch", "bugs still open", "add a meeting to my calendar", "show my meetings for next week", "select:list_issues"} {
		res, err := ix.Search(context.Background(), search.Request{Query: q, MaxResults: 1})
		if err != nil {
			panic(err)
		}
		best := "nothing matched"
		if len(res.Hits) > 0 {
			best = res.Hits[0].Tool.ID()
		}
		fmt.Printf("%-32s → %s\n", q, best)
	}
	// Output:
	// open a PR                        → github/create_pull_request
	// merge my branch                  → github/create_pull_request
	// bugs still open                  → github/list_issues
	// add a meeting to my calendar     → calendar/create_event
	// show my meetings for next week   → calendar/list_events
	// select:list_issues               → github/list_issues
}
