package catalog_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// A server's tools, as its tools/list returned them, become a snapshot:
// every definition kept byte for byte, named by ID and by wire name, and
// sized in tokens.
func ExampleNewSnapshot() {
	raws := []json.RawMessage{
		json.RawMessage(`{"name": "create_issue", "description": "Open an issue in a repository.",
		  "inputSchema": {"type": "object", "properties": {"title": {"type": "string", "description": "The issue's title."}}, "required": ["title"]},
		  "_meta": {"anthropic/alwaysLoad": true}}`),
		json.RawMessage(`{"name": "list_issues", "description": "List the issues of a repository.", "inputSchema": {"type": "object"}}`),
	}
	github, err := catalog.NewServer("github", raws, []string{"gh"}, false)
	if err != nil {
		panic(err)
	}
	snap, err := catalog.NewSnapshot(github)
	if err != nil {
		panic(err)
	}
	for _, t := range snap.Tools() {
		fmt.Printf("%s (wire name %s): always loaded %v, keywords %v, params %v\n", t.ID(), t.WireName(), t.AlwaysLoad, t.Keywords, t.Params())
	}
	t, _ := snap.Tool("github/create_issue")
	fmt.Println("kept as sent:", strings.Contains(string(t.Raw), `"_meta": {"anthropic/alwaysLoad": true}`))
	fmt.Println("definition:", string(t.Definition()))
	fmt.Println("version", snap.Version(), "tokens", t.Tokens(), "of", github.Tokens())
	// Output:
	// github/create_issue (wire name github__create_issue): always loaded true, keywords [gh], params [{title The issue's title. true}]
	// github/list_issues (wire name github__list_issues): always loaded false, keywords [gh], params []
	// kept as sent: true
	// definition: {"name":"create_issue","description":"Open an issue in a repository.","input_schema":{"type":"object","properties":{"title":{"type":"string","description":"The issue's title."}},"required":["title"]}}
	// version 1 tokens 44 of 67
}

// A change makes a new snapshot and says what changed; the old snapshot
// stays as it was for whoever still reads it.
func ExampleSnapshot_Apply() {
	tool := func(name string) json.RawMessage {
		return json.RawMessage(`{"name": "` + name + `", "description": "…", "inputSchema": {"type": "object"}}`)
	}
	chat, _ := catalog.NewServer("chat", []json.RawMessage{tool("post_message")}, nil, false)
	v1, _ := catalog.NewSnapshot(chat)

	chat2, _ := catalog.NewServer("chat", []json.RawMessage{tool("post_message"), tool("delete_message")}, nil, false)
	sentry, _ := catalog.NewServer("sentry", []json.RawMessage{tool("list_errors")}, nil, false)
	v2, diff, err := v1.Apply(catalog.Put(chat2), catalog.Put(sentry))
	if err != nil {
		panic(err)
	}
	fmt.Printf("version %d → %d: added %v, servers %v\n", diff.From, diff.To, diff.Added, diff.Servers)
	fmt.Println("old snapshot:", len(v1.Tools()), "tools; new:", len(v2.Tools()))

	v3, diff, _ := v2.Apply(catalog.Remove("sentry"))
	fmt.Printf("version %d: removed %v\n", v3.Version(), diff.Removed)
	// Output:
	// version 1 → 2: added [chat/delete_message sentry/list_errors], servers [chat sentry]
	// old snapshot: 1 tools; new: 3
	// version 3: removed [sentry/list_errors]
}

// Catalog files come in two formats; this is the plain one, an object
// keyed by server whose values are tools/list results or bare arrays.
func ExampleLoad() {
	file := `{
	  "github": {"tools": [{"name": "create_issue", "description": "Open an issue.", "inputSchema": {"type": "object"}}], "keywords": ["gh"]},
	  "slack":  [{"name": "post_message", "description": "Post a message.", "inputSchema": {"type": "object"}}]
	}`
	snap, err := catalog.Load(strings.NewReader(file))
	if err != nil {
		panic(err)
	}
	for _, s := range snap.Servers() {
		fmt.Println(s.Key, len(s.Tools), "tool(s), keywords", s.Keywords)
	}
	// Output:
	// github 1 tool(s), keywords [gh]
	// slack 1 tool(s), keywords []
}

// Sizes are o200k tokens; Claude models count more, by an estimated factor.
func ExampleClaudeTokens() {
	n := catalog.CountTokens("Open an issue in a repository.")
	fmt.Println(n, "o200k tokens,", catalog.ClaudeTokens(n), "estimated for Claude")
	fmt.Println(catalog.ClaudeTokens(1000))
	// Output:
	// 7 o200k tokens, 9 estimated for Claude
	// 1200
}
