package discovery_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/discovery"
)

// The loaded set is rebuilt from the conversation alone: each search
// result that loaded tools is an event, and a compaction carries the set
// across the summary that replaces them.
func ExampleLoaded() {
	history := []discovery.Event{
		{Kind: discovery.Found, Names: []string{"github__create_issue"}, Where: "message 2"},
		{Kind: discovery.Found, Names: []string{"slack__post_message", "github__create_issue"}, Where: "message 6"},
	}
	fmt.Println("loaded:", discovery.Loaded(history).Names())

	// After compaction, the summary carries them, and the set reads the same.
	carry := discovery.Carry(history)
	compacted := []discovery.Event{carry, {Kind: discovery.Found, Names: []string{"sentry__list_errors"}}}
	fmt.Println("after compaction:", discovery.Loaded(compacted).Names())
	fmt.Println(discovery.CarriedText(carry.Names))
	// Output:
	// loaded: [github__create_issue slack__post_message]
	// after compaction: [github__create_issue slack__post_message sentry__list_errors]
	// Tools loaded before this summary: github__create_issue, slack__post_message
}

// On a wire without tool references, a search result says what it loaded
// in one line that is read back from the history.
func ExampleLoadedText() {
	line := discovery.LoadedText([]string{"github__create_issue", "slack__post_message"})
	fmt.Println(line)
	fmt.Println(discovery.ParseLoadedText("Found 2 tools.\n" + line))
	// Output:
	// Loaded tools: github__create_issue, slack__post_message
	// [github__create_issue slack__post_message]
}

// The model is told what it can search for: a snapshot the first time,
// then only what changed, so earlier requests' bytes never change.
func ExampleState_Delta() {
	first := discovery.Deferred{
		Servers:    []discovery.ServerTools{{Prefix: "github__", Names: []string{"github__create_issue", "github__list_issues"}}},
		Connecting: []string{"sentry"},
	}
	var told discovery.State
	a := told.Delta(first, 0)
	fmt.Print(a.Text(), "\n\n")
	told.Apply(a)

	next := discovery.Deferred{Servers: append(first.Servers,
		discovery.ServerTools{Prefix: "sentry__", Names: []string{"sentry__list_errors"}})}
	d := told.Delta(next, 0)
	fmt.Println(d.Text())
	p, ok := discovery.ParseAnnouncement(d.Text())
	fmt.Println("read back:", ok, p.Added, p.Connecting)
	// Output:
	// <deferred-tools>
	// Deferred tools exist but are not loaded: use the tool search tool to load one (select:<name> for an exact name, or keywords) before calling it.
	// added:
	// github__create_issue
	// github__list_issues
	// still connecting: sentry
	// </deferred-tools>
	//
	// <deferred-tools>
	// Deferred tools exist but are not loaded: use the tool search tool to load one (select:<name> for an exact name, or keywords) before calling it.
	// added:
	// sentry__list_errors
	// still connecting: none
	// </deferred-tools>
	// read back: true [sentry__list_errors] []
}

// Names gives each catalog tool the name a model calls it by, and leads
// that name back to the tool.
func ExampleNames() {
	tool := json.RawMessage(`{"name": "create.issue", "description": "Open an issue.", "inputSchema": {"type": "object"}}`)
	github, _ := catalog.NewServer("github", []json.RawMessage{tool}, nil, false)
	snap, _ := catalog.NewSnapshot(github)
	names := discovery.NewNames(snap, "mcp__")
	t := snap.Tools()[0]
	wire := names.Wire(t)
	back, _ := names.Tool(wire)
	fmt.Println(wire, "→", back.ID())
	// Output:
	// mcp__github__create_issue → github/create.issue
}
