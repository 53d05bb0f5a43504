package policy

import (
	"testing"

	"github.com/toolsearch/toolsearch/catalog"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"*", "", true},
		{"*", "a/b", true},
		{"a/*", "a/b", true},
		{"a/*", "b/a", false},
		{"*/delete_*", "gh/delete_repo", true},
		{"?", "ab", false},
		{"a?c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"", "", true},
		{"", "x", false},
		{"**", "x", true},
	}
	for _, c := range cases {
		if got := Match(c.pat, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pat, c.name, got)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p, err := New(Rules{Deny: []string{"*/delete_*", "mcp__fs__rm"}, Ask: []string{"gh__merge_*"}},
		map[string]Rules{
			"gh":   {Deny: []string{"admin_*"}, Ask: []string{"push"}},
			"only": {Allow: []string{"read_*", "only/list"}},
		})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tool string
		want         Decision
	}{
		{"gh", "create_issue", Allow},
		{"gh", "delete_repo", Deny},
		{"fs", "rm", Deny},
		{"fs", "rmdir", Allow},
		{"gh", "admin_users", Deny},
		{"other", "admin_users", Allow},
		{"gh", "merge_pr", Ask},
		{"gh", "push", Ask},
		{"only", "read_file", Allow},
		{"only", "list", Allow},
		{"only", "write_file", Deny},
		{"only", "delete_x", Deny},
	}
	for _, c := range cases {
		v := p.Decide(c.server, c.tool)
		if v.Decision != c.want {
			t.Errorf("Decide(%s, %s) = %v (%s), want %v", c.server, c.tool, v.Decision, v.Reason(), c.want)
		}
		if c.want != Allow && v.Rule == "" {
			t.Errorf("Decide(%s, %s): no rule given", c.server, c.tool)
		}
	}
	if p.Visible(&catalog.Tool{Server: "gh", Name: "delete_repo"}) {
		t.Error("denied tool visible")
	}
}

func TestGlobalAllowList(t *testing.T) {
	t.Parallel()
	p, _ := New(Rules{Allow: []string{"gh/*"}}, nil)
	if p.Decide("gh", "x").Decision != Allow || p.Decide("slack", "x").Decision != Deny {
		t.Fatal("global allow list not applied")
	}
	var nilP *Policy
	if nilP.Decide("a", "b").Decision != Allow || !nilP.Empty() {
		t.Fatal("nil policy must allow")
	}
	if _, err := New(Rules{Deny: []string{" "}}, nil); err == nil {
		t.Fatal("empty pattern accepted")
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("a*b?c", "axxbyc")
	f.Add("***", "")
	f.Fuzz(func(t *testing.T, pat, name string) {
		_ = Match(pat, name)
		if Match(pat, name) != Match(pat, name) {
			t.Fatal("not deterministic")
		}
		if pat == name && !Match(pat, name) && !containsMeta(pat) {
			t.Fatalf("literal %q does not match itself", pat)
		}
	})
}

func containsMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' || s[i] == '?' {
			return true
		}
	}
	return false
}
