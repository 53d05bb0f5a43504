package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
)

// searchWith calls search_tools with args and returns its output, or its
// error text.
func (c *client) searchWith(t testing.TB, args map[string]any) (searchOutput, string) {
	t.Helper()
	text, isErr := c.call(t, searchToolName, args)
	if isErr {
		return searchOutput{}, text
	}
	var out searchOutput
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("search %v: %v in %s", args, err, text)
	}
	return out, ""
}

func outNames(out searchOutput) []string {
	var names []string
	for _, h := range append(out.Tools, out.More...) {
		names = append(names, h.Name)
	}
	return names
}

// TestSearchToolQueries calls search_tools through a Go SDK client with
// several queries and checks the merged list against the single answers.
func TestSearchToolQueries(t *testing.T) {
	t.Parallel()
	g, err := New(nil, Options{Static: demo.Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, g.Handler("search"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)

	// The tool tells the model how to ask, and takes queries.
	var desc string
	var schema map[string]any
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == searchToolName {
			desc = tool.Description
			b, _ := json.Marshal(tool.InputSchema)
			_ = json.Unmarshal(b, &schema)
		}
	}
	for _, want := range []string{"queries", "select:", "naming the product"} {
		if !strings.Contains(desc, want) {
			t.Errorf("search_tools description lacks %q: %s", want, desc)
		}
	}
	if props, _ := schema["properties"].(map[string]any); props["queries"] == nil || props["query"] == nil {
		t.Errorf("search_tools schema lacks query or queries: %v", schema)
	}

	tests := []struct {
		name    string
		args    map[string]any
		first   []string // the list starts with these
		singles []string // each one's best hit is in the list
		max     int
		form    string
		err     string
	}{
		{name: "two needs", args: map[string]any{"queries": []string{"create a pull request", "post a message to a channel"}},
			singles: []string{"create a pull request", "post a message to a channel"}, max: 5, form: "keyword"},
		{name: "query and queries", args: map[string]any{"query": "fetch the logs of a pod", "queries": []string{"merge a pull request", "refund a payment"}, "max_results": 3},
			singles: []string{"fetch the logs of a pod", "merge a pull request", "refund a payment"}, max: 3, form: "keyword"},
		{name: "select first", args: map[string]any{"queries": []string{"refund a payment", "select:teamchat__postMessage"}},
			first: []string{"teamchat__postMessage"}, singles: []string{"refund a payment"}, max: 5, form: "mixed"},
		{name: "exact name first", args: map[string]any{"query": "read a file", "queries": []string{"kube__getPodLogs"}},
			first: []string{"kube__getPodLogs"}, singles: []string{"read a file"}, max: 5, form: "mixed"},
		{name: "the same query twice", args: map[string]any{"queries": []string{"create a pull request", "create a pull request"}, "max_results": 2},
			singles: []string{"create a pull request"}, max: 2, form: "keyword"},
		{name: "a bad query names its place", args: map[string]any{"queries": []string{"refund a payment", "  "}}, err: "queries[1]: bad query: the query is empty"},
		{name: "a bad query beside query", args: map[string]any{"query": "refund", "queries": []string{"ok", "select: ,"}}, err: "queries[1]: bad query: select: names no tool"},
		{name: "a bad query itself", args: map[string]any{"query": "select:", "queries": []string{"ok"}}, err: "query: bad query: select: names no tool"},
		{name: "too many", args: map[string]any{"query": "a", "queries": strings.Fields("b c d e f g h i")}, err: "bad query: 9 queries given (query and queries together); the limit is 8"},
		{name: "a flood of queries", args: map[string]any{"queries": slices.Repeat([]string{"x"}, 10000)}, err: "10000 queries given (query and queries together); the limit is 8"},
		{name: "nothing asked", args: map[string]any{"queries": []string{}}, err: "needs a query (a string) or queries"},
		{name: "not a list", args: map[string]any{"queries": "refund"}, err: "search_tools takes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errText := c.searchWith(t, tc.args)
			if tc.err != "" {
				if !strings.Contains(errText, tc.err) {
					t.Fatalf("error %q, want %q", errText, tc.err)
				}
				return
			}
			if errText != "" {
				t.Fatal(errText)
			}
			names := outNames(out)
			if len(names) == 0 || len(names) > tc.max {
				t.Errorf("%d tools %v, want 1 to %d", len(names), names, tc.max)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
				t.Errorf("duplicates in %v", names)
			}
			if len(names) < len(tc.first) || !slices.Equal(names[:len(tc.first)], tc.first) {
				t.Errorf("tools %v do not start with %v", names, tc.first)
			}
			for _, q := range tc.singles {
				single, errText := c.searchWith(t, map[string]any{"query": q, "max_results": 1})
				if errText != "" || len(single.Tools) == 0 {
					t.Fatalf("single %q: %s %+v", q, errText, single)
				}
				if !slices.Contains(names, single.Tools[0].Name) {
					t.Errorf("%q's best tool %s is not in the merged %v", q, single.Tools[0].Name, names)
				}
			}
			asked, _ := tc.args["query"].(string)
			if out.Matched != tc.form || out.Total < len(names) || out.Query != asked || !slices.Equal(out.Queries, tc.args["queries"].([]string)) {
				t.Errorf("matched_as %q (want %q), total %d, query %q, queries %q; asked %v", out.Matched, tc.form, out.Total, out.Query, out.Queries, tc.args)
			}
			for _, tool := range out.Tools {
				if len(tool.InputSchema) == 0 {
					t.Errorf("%s comes without its schema", tool.Name)
				}
			}
		})
	}
}

// TestSearchToolQueriesPolicy: no query of a list, whatever its form,
// reaches a denied tool, and in dynamic mode only the tools found join
// the session's list.
func TestSearchToolQueriesPolicy(t *testing.T) {
	t.Parallel()
	echo := roleServer(t, "echo")
	echo["deny"] = []string{"delete_*"}
	g := startGateway(t, writeConfig(t, map[string]any{"echo": echo}, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler(""))
	c := connectHTTP(t, srv.URL+"/mcp/dynamic", nil)
	before := c.toolNames(t)
	out, errText := c.searchWith(t, map[string]any{
		"query": "select:echo__delete_everything",
		"queries": []string{"delete every record", "delete_everything", "echo/delete_everything", "delete.*",
			"select:delete_everything,echo", "mcp__echo__delete_everything", "echo the text back"},
		"max_results": 50,
	})
	if errText != "" {
		t.Fatal(errText)
	}
	names := outNames(out)
	if slices.Contains(names, "delete_everything") || slices.Contains(names, "echo__delete_everything") {
		t.Errorf("the denied tool was found: %v", names)
	}
	if !slices.Contains(names, "echo") || names[0] != "echo" {
		t.Errorf("tools %v, want echo first (named by select:)", names)
	}
	if !slices.Contains(out.Unknown, "echo__delete_everything") || !slices.Contains(out.Unknown, "delete_everything") {
		t.Errorf("unknown %v, want the denied names", out.Unknown)
	}
	waitFor(t, "the found tools in the list", 10*time.Second, func() bool {
		return slices.Contains(c.toolNames(t), "echo")
	})
	after := c.toolNames(t)
	for _, n := range after {
		if strings.Contains(n, "delete_everything") {
			t.Errorf("dynamic list holds the denied %s", n)
		}
		if !slices.Contains(before, n) && !slices.Contains(names, n) {
			t.Errorf("dynamic list gained %s, which the search did not return", n)
		}
	}
	if text, isErr := c.call(t, callToolName, map[string]any{"name": "delete_everything"}); !isErr || strings.Contains(text, "DELETED") {
		t.Errorf("call_tool of the denied tool = %q", text)
	}
}
