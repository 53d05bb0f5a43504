package hints_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
)

// A hints file gives tools search phrasings of their own. An entry with
// the digest of the definition it was written from goes stale when the
// definition changes; one without a digest applies whatever it is.
func ExampleSet_Apply() {
	issue := json.RawMessage(`{"name": "create_issue", "description": "Create an issue.", "inputSchema": {"type": "object"}}`)
	github, _ := catalog.NewServer("github", []json.RawMessage{issue}, nil, false)
	chat, _ := catalog.NewServer("chat", []json.RawMessage{json.RawMessage(`{"name": "post_message", "description": "Post a message.", "inputSchema": {"type": "object"}}`)}, nil, false)
	snap, _ := catalog.NewSnapshot(github, chat)
	createIssue, _ := snap.Tool("github/create_issue")

	file := `{"id": "github/create_issue", "hints": ["file a bug report", "open a ticket on my repo"], "digest": "` + hints.Digest(createIssue) + `"}
{"id": "chat/post_message", "hints": ["tell the team"], "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
{"id": "jira/create_ticket", "hints": ["new ticket"]}
`
	set, err := hints.Parse([]byte(file))
	if err != nil {
		panic(err)
	}
	withHints, report, err := set.Apply(snap)
	if err != nil {
		panic(err)
	}
	fmt.Println(report)
	fmt.Println("stale:", report.Stale, "unknown:", report.Unknown)
	t, _ := withHints.Tool("github/create_issue")
	fmt.Println(t.ID(), t.Hints)
	// Output:
	// 3 entries: 1 tools given hints, 1 stale (ignored), 1 naming no tool of the catalog
	// stale: [chat/post_message] unknown: [jira/create_ticket]
	// github/create_issue [file a bug report open a ticket on my repo]
}

// A file is checked line by line; the first bad line is the error, with
// its number.
func ExampleParse() {
	_, err := hints.Parse([]byte(`{"id": "github/create_issue", "hints": ["file a bug"]}
{"id": "github/list_issues", "hints": []}
`))
	fmt.Println(err)
	// Output:
	// line 2 (github/list_issues): no hints
}
