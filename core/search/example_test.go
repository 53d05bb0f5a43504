package search_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
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

// Several needs at once: one query per need, answered as one list. Tools
// named exactly come first, then the others fused by rank; a query that
// names unknown tools says which.
func ExampleIndex_SearchMany() {
	ix := search.Build(demo.Snapshot())
	res, err := ix.SearchMany(context.Background(), search.Request{MaxResults: 4},
		[]string{"select:codehost/create_pull_request,codehost/nope", "post a message to the team channel", "send an invoice to a customer"})
	if err != nil {
		panic(err)
	}
	for _, h := range res.Hits {
		fmt.Println(h.Tool.ID())
	}
	fmt.Println("unknown:", res.Unknown)
	// Output:
	// codehost/create_pull_request
	// teamchat/postMessage
	// payments/finalize_invoice
	// teamchat/getChannelHistory
	// unknown: [codehost/nope]
}

// Every query form through one call: the form a query was read as comes
// back with the result. A regex is Python re syntax and runs in linear
// time.
func ExampleIndex_Search_forms() {
	ix := search.Build(demo.Snapshot())
	for _, q := range []string{"select:codehost/merge_pull_request", "create_pull_request", "codehost__", "^create_.*request$", "+draft pull request"} {
		res, err := ix.Search(context.Background(), search.Request{Query: q, MaxResults: 2})
		if err != nil {
			panic(err)
		}
		var ids []string
		for _, h := range res.Hits {
			ids = append(ids, h.Tool.ID())
		}
		fmt.Printf("%-36s %-8s %v\n", q, res.Form, ids)
	}
	// Output:
	// select:codehost/merge_pull_request   select   [codehost/merge_pull_request]
	// create_pull_request                  exact    [codehost/create_pull_request codehost/merge_pull_request]
	// codehost__                           server   [codehost/search_repositories codehost/get_repository]
	// ^create_.*request$                   regex    [codehost/create_pull_request]
	// +draft pull request                  keyword  [codehost/create_pull_request payments/create_invoice]
}

// Explain takes a score apart: each query word, the term it matched (its
// own, a synonym, or an action class: "pull" is a kind of "get"), and the
// fields the term occurs in; Breakdown.String has the factors too.
func ExampleIndex_Search_explain() {
	ix := search.Build(demo.Snapshot())
	res, err := ix.Search(context.Background(), search.Request{
		Query: "open a pull request", MaxResults: 1, Explain: true,
	})
	if err != nil {
		panic(err)
	}
	h := res.Hits[0]
	fmt.Println(h.Tool.ID())
	for _, ts := range h.Breakdown.Terms {
		fmt.Printf("%s → %s (%s): %v\n", ts.Word, ts.Term, ts.Kind, ts.Fields)
	}
	// Output:
	// codehost/create_pull_request
	// open → open (term): [description parameters]
	// pull → pull (term): [name description parameters]
	// request → request (term): [name description parameters]
	// pull → ~get (action): [name]
}
