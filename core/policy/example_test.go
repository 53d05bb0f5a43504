package policy_test

import (
	"fmt"

	"github.com/toolsearch/toolsearch/core/policy"
)

// Global patterns match server/tool; a server's own patterns match its
// bare tool names literally. Deny wins, and every verdict names its rule.
func ExamplePolicy_Decide() {
	p, err := policy.New(
		policy.Rules{Deny: []string{"*/delete_*"}, Ask: []string{"github/merge_*"}},
		map[string]policy.Rules{"db": {Deny: []string{"drop__table"}}},
	)
	if err != nil {
		panic(err)
	}
	for _, c := range [][2]string{
		{"github", "create_issue"}, {"github", "merge_pull_request"}, {"github", "delete_repo"}, {"db", "drop__table"}, {"db", "query"},
	} {
		v := p.Decide(c[0], c[1])
		fmt.Printf("%s/%s: %s (%s)\n", c[0], c[1], v.Decision, v.Reason())
	}
	// Output:
	// github/create_issue: allow (no rule matched)
	// github/merge_pull_request: ask (matched ask github/merge_*)
	// github/delete_repo: deny (matched deny */delete_*)
	// db/drop__table: deny (matched server db: deny drop__table)
	// db/query: allow (no rule matched)
}

// A server whose every tool is denied has its prompts and resources
// denied too, unless an allow pattern names them.
func ExamplePolicy_DecidePrompt() {
	p, _ := policy.New(policy.Rules{Deny: []string{"admin/*"}, Prompts: policy.Globs{Allow: []string{"admin/help"}}}, nil)
	fmt.Println(p.DecidePrompt("admin", "reset_all").Decision, p.DecidePrompt("admin", "help").Decision)
	rule, closed := p.ToolsClosed("admin")
	fmt.Println(closed, rule)
	// Output:
	// deny allow
	// true deny admin/*
}

// Patterns that can match nothing are reported when the configuration is
// loaded, with the name most likely meant; so are tool patterns that
// match none of the tools the servers listed.
func ExamplePolicy_Warnings() {
	p, _ := policy.New(policy.Rules{Deny: []string{"memroy/delete_*", "memory/delte_*"}}, nil)
	for _, w := range p.Warnings([]string{"memory", "github"}) {
		fmt.Println(w)
	}
	listed := map[string][]string{"memory": {"create_entities", "delete_entities", "read_graph"}}
	for _, w := range p.Unmatched([]string{"memory", "github"}, listed) {
		fmt.Println(w)
	}
	// Output:
	// global policy: deny pattern "memroy/delete_*" names server "memroy", which is not configured, so it matches nothing; did you mean "memory/delete_*"?
	// global policy: deny pattern "memory/delte_*" matches none of server "memory"'s 3 tools; did you mean "memory/delete_*"?
}

// Globs: "*" matches any run of characters, "/" included; "?" one.
func ExampleMatch() {
	fmt.Println(policy.Match("github/create_*", "github/create_issue"), policy.Match("*__delete?", "db__deletes"), policy.Match("delete_*", "remove_item"))
	// Output:
	// true true false
}
