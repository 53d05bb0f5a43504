package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// TestNameIndexSpellings checks nameIndex against filing every tool under
// each of its four lower-cased spellings, on names chosen so that
// separators run together and spellings of different tools collide.
func TestNameIndexSpellings(t *testing.T) {
	t.Parallel()
	tools := []*catalog.Tool{
		{Server: "a", Name: "_b"},
		{Server: "a", Name: "b"},
		{Server: "a", Name: "__b"},
		{Server: "A", Name: "B"},
		{Server: "a_", Name: "b"}, // not a valid key, but spelt like one
		{Server: "a_b", Name: "c"},
		{Server: "a", Name: "b__c"},
		{Server: "a", Name: "b/c"},
		{Server: "mcp", Name: "a__b"},
		{Server: "mcp", Name: "x"},
		{Server: "GitHub", Name: "Create_Issue"},
		{Server: "github", Name: "create_issue"},
		{Server: "gitlab", Name: "create_issue"},
		{Server: "x", Name: "mcp__gitlab__create_issue"},
		{Server: "ü", Name: "Ünïcode"},
		{Server: "s", Name: "a/b/c"},
		{Server: "s/a", Name: "b/c"},
		// Names with blanks: queries of several words are looked up
		// only once a name has one.
		{Server: "s", Name: "Send Message"},
		{Server: "t", Name: "tab\tname"},
	}
	want := map[string][]*catalog.Tool{}
	x := newNameIndex(0)
	for _, tl := range tools {
		s, n := strings.ToLower(tl.Server), strings.ToLower(tl.Name)
		for _, f := range []string{n, s + "/" + n, s + "__" + n, "mcp__" + s + "__" + n} {
			want[f] = append(want[f], tl)
		}
		x.add(tl)
	}
	queries := []string{"", "_", "__", "/", "mcp__", "mcp____", "a__", "__b", "a___b", "a____b", "zzz", "mcp__a", "a b", "send  message"}
	for q := range want {
		queries = append(queries, q, q+"_", "_"+q, q+"/", "mcp__"+q)
	}
	multi := 0
	for _, q := range queries {
		got := x.lookup(q)
		if !slices.Equal(got, want[q]) {
			t.Errorf("lookup(%q) = %v, want %v", q, toolIDs(got), toolIDs(want[q]))
		}
		if len(want[q]) > 1 {
			multi++
		}
	}
	if multi < 4 {
		t.Errorf("only %d spellings name several tools; the test means to check their order", multi)
	}
	if !x.spaced || x.cannotName("send message") {
		t.Error("names with blanks were added, but the index does not know")
	}
	plain := newNameIndex(0)
	plain.add(&catalog.Tool{Server: "a", Name: "b_c"})
	for q, want := range map[string]bool{"a b": true, "b_c\t": true, "b_c": false, "a/b_c": false} {
		if got := plain.cannotName(q); got != want {
			t.Errorf("without names with blanks, cannotName(%q) = %v, want %v", q, got, want)
		}
	}
}

func toolIDs(ts []*catalog.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID()
	}
	return out
}
