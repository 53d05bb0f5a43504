package policy

import (
	"fmt"
	"strings"
	"testing"
)

func TestNearest(t *testing.T) {
	t.Parallel()
	tools := []string{"delete_entities", "delete_observations", "read_graph", "search_nodes"}
	cases := []struct {
		pattern    string
		candidates []string
		name, fix  string // "" when no suggestion is wanted
	}{
		{"delte_*", tools, "delete_entities", "delete_*"},
		{"read_grpah", tools, "read_graph", "read_graph"},
		{"serch_*", tools, "search_nodes", "search_*"},
		{"memroy", []string{"memory", "github"}, "memory", "memory"},
		{"gihtub", []string{"memory", "github"}, "github", "github"},
		{"*_graph", tools, "", ""},     // matches already
		{"write_file", tools, "", ""},  // far from every name
		{"rm", []string{"mv"}, "", ""}, // too short to call a typo
		{"", tools, "", ""},            // empty
		{"zzzzzzz", nil, "", ""},       // no candidates
		{"re?d_grap", tools, "read_graph", "re?d_graph"},
		{strings.Repeat("a", 300), []string{"a"}, "", ""}, // too long to compare
	}
	// A hostile server's many long names: bounded work, still an answer.
	var many []string
	for i := range 20000 {
		many = append(many, fmt.Sprintf("%s_%05d", strings.Repeat("x", 200), i))
	}
	cases = append(cases, struct {
		pattern    string
		candidates []string
		name, fix  string
	}{"*_00042" + strings.Repeat("y", 200), many, "", ""})
	for _, c := range cases {
		name, fix, ok := Nearest(c.pattern, c.candidates)
		if ok != (c.name != "") || name != c.name || fix != c.fix {
			t.Errorf("Nearest(%q) = %q, %q, %v; want %q, %q", c.pattern, name, fix, ok, c.name, c.fix)
		}
		if ok && !Match(fix, name) {
			t.Errorf("Nearest(%q): corrected %q does not match %q", c.pattern, fix, name)
		}
	}
}

func TestWarningsSuggestServer(t *testing.T) {
	t.Parallel()
	p, err := New(Rules{Deny: []string{"memroy/delete_*", "zzzz/x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Warnings([]string{"memory", "github"})
	if len(ws) != 2 {
		t.Fatalf("warnings = %v, want 2", ws)
	}
	if !strings.Contains(ws[0].Problem, `did you mean "memory/delete_*"?`) {
		t.Errorf("no suggestion: %s", ws[0])
	}
	if strings.Contains(ws[1].Problem, "did you mean") {
		t.Errorf("a suggestion for a name near none: %s", ws[1])
	}
}

func TestUnmatched(t *testing.T) {
	t.Parallel()
	listed := map[string][]string{
		"memory": {"delete_entities", "delete_relations", "read_graph"},
		"fs":     {"read_file", "write_file"},
	}
	cases := []struct {
		name       string
		global     Rules
		servers    map[string]Rules
		configured []string
		want       []string // "pattern: suggestion" ("" for none), in order
	}{
		{"all match", Rules{Deny: []string{"memory/delete_*", "*/read_*", "fs__write_file"}, Ask: []string{"mcp__fs__read_file"}},
			map[string]Rules{"fs": {Allow: []string{"read_*", "fs/write_file"}}}, []string{"memory", "fs"}, nil},
		{"global typo in tool", Rules{Deny: []string{"memory/delte_*"}}, nil, []string{"memory", "fs"},
			[]string{`memory/delte_*: "memory/delete_*"`}},
		{"wire form typo", Rules{Ask: []string{"mcp__fs__wrte_file"}}, nil, []string{"memory", "fs"},
			[]string{`mcp__fs__wrte_file: "fs/write_file"`}},
		{"no such tool", Rules{Allow: []string{"fs/format_disk"}}, nil, []string{"memory", "fs"}, []string{"fs/format_disk: "}},
		{"wildcard server", Rules{Deny: []string{"*/delete_everything"}}, nil, []string{"memory", "fs"},
			[]string{"*/delete_everything: "}},
		{"wildcard server waits for every server", Rules{Deny: []string{"*/drop_*"}}, nil, []string{"memory", "fs", "db"}, nil},
		{"unlisted server not judged", Rules{Deny: []string{"db/drop_*"}}, nil, []string{"memory", "fs", "db"}, nil},
		{"unknown server left to Warnings", Rules{Deny: []string{"memroy/delete_*"}}, nil, []string{"memory", "fs"}, nil},
		{"local typo", Rules{}, map[string]Rules{"memory": {Deny: []string{"delete_entites", "memory/read_*"}}},
			[]string{"memory", "fs"}, []string{`delete_entites: "delete_entities"`}},
		{"local prefix typo", Rules{}, map[string]Rules{"fs": {Ask: []string{"mcp__fs__raed_file"}}},
			[]string{"memory", "fs"}, []string{`mcp__fs__raed_file: "read_file"`}},
		{"local unlisted", Rules{}, map[string]Rules{"db": {Deny: []string{"x"}}}, []string{"memory", "fs", "db"}, nil},
		{"prompts not judged", Rules{Prompts: Globs{Deny: []string{"fs/none"}}}, nil, []string{"memory", "fs"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(c.global, c.servers)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range p.Unmatched(c.configured, listed) {
				s := ""
				if _, after, ok := strings.Cut(w.Problem, "did you mean "); ok {
					s = strings.TrimSuffix(after, "?")
				}
				got = append(got, w.Pattern+": "+s)
				if !strings.Contains(w.Problem, "matches none") {
					t.Errorf("problem %q does not say it matches nothing", w.Problem)
				}
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("unmatched = %q, want %q", got, c.want)
			}
		})
	}
	var nilPolicy *Policy
	if w := nilPolicy.Unmatched(nil, listed); w != nil {
		t.Errorf("nil policy: %v", w)
	}
}
