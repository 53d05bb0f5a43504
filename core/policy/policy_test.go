package policy

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
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
		if first, again := Match(pat, name), Match(pat, name); first != again {
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

// A server's own patterns match its bare names literally, "__" and all: a
// rule such as "drop__table" under server db must hide db's drop__table.
func TestLocalPatternsMatchBareNamesLiterally(t *testing.T) {
	t.Parallel()
	p, err := New(Rules{}, map[string]Rules{
		"db": {Deny: []string{"drop__table", "admin__*", "db/purge_*", "mcp__db__wipe", "db__nuke"}, Ask: []string{"alter__*"}},
		"kv": {Allow: []string{"get__*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tool string
		want         Decision
	}{
		{"db", "drop__table", Deny},
		{"db", "admin__reset", Deny},
		{"db", "admin_reset", Allow}, // one underscore: not the pattern
		{"db", "purge_all", Deny},    // own prefix "db/"
		{"db", "wipe", Deny},         // own prefix "mcp__db__"
		{"db", "nuke", Deny},         // own prefix "db__"
		{"db", "alter__column", Ask},
		{"db", "select", Allow},
		{"kv", "get__key", Allow},
		{"kv", "set__key", Deny},
		{"other", "drop__table", Allow}, // db's rules are db's
	}
	for _, c := range cases {
		if v := p.Decide(c.server, c.tool); v.Decision != c.want {
			t.Errorf("Decide(%s, %s) = %v (%s), want %v", c.server, c.tool, v.Decision, v.Reason(), c.want)
		}
	}
}

// Global patterns read server__tool and mcp__server__tool as server/tool,
// splitting at the first "__" only.
func TestGlobalQualifiedForms(t *testing.T) {
	t.Parallel()
	p, err := New(Rules{Deny: []string{"db__drop__table", "mcp__db__admin__*", "kv/del"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tool string
		want         Decision
	}{
		{"db", "drop__table", Deny},
		{"db", "admin__users", Deny},
		{"db", "drop_table", Allow},
		{"kv", "del", Deny},
		{"db", "del", Allow},
	}
	for _, c := range cases {
		if v := p.Decide(c.server, c.tool); v.Decision != c.want {
			t.Errorf("Decide(%s, %s) = %v (%s), want %v", c.server, c.tool, v.Decision, v.Reason(), c.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		global      Rules
		servers     map[string]Rules
		wantPattern []string // patterns warned of, in order
	}{
		{"clean", Rules{Deny: []string{"*/delete_*", "db__drop__table", "mcp__kv__del"}},
			map[string]Rules{"db": {Deny: []string{"drop__table", "admin__*", "db/x", "mcp__db__y"}}}, nil},
		{"global without server", Rules{Deny: []string{"delete_everything"}}, nil, []string{"delete_everything"}},
		{"global names unknown server", Rules{Ask: []string{"gihtub/merge_*"}}, nil, []string{"gihtub/merge_*"}},
		{"global bad character", Rules{Deny: []string{"db/drop table"}}, nil, []string{"db/drop table"}},
		{"global slash in tool part", Rules{Deny: []string{"db/a/b"}}, nil, []string{"db/a/b"}},
		{"local slash", Rules{}, map[string]Rules{"db": {Deny: []string{"a/b"}}}, []string{"a/b"}},
		{"local other server", Rules{}, map[string]Rules{"db": {Deny: []string{"kv/del", "mcp__kv__get", "kv__put"}}},
			[]string{"kv/del", "mcp__kv__get", "kv__put"}},
		{"local mcp prefix", Rules{}, map[string]Rules{"db": {Allow: []string{"mcp__other__x"}}}, []string{"mcp__other__x"}},
		{"local prompt glob", Rules{}, map[string]Rules{"db": {Prompts: Globs{Deny: []string{"has space"}}}}, []string{"has space"}},
		{"resource globs are URIs", Rules{Resources: Globs{Deny: []string{"db/file:///etc/*"}}},
			map[string]Rules{"db": {Resources: Globs{Deny: []string{"file:///a b/*"}}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(c.global, c.servers)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range p.Warnings([]string{"db", "kv"}) {
				got = append(got, w.Pattern)
				if w.Problem == "" || w.String() == "" {
					t.Errorf("warning without a problem: %+v", w)
				}
			}
			if strings.Join(got, "|") != strings.Join(c.wantPattern, "|") {
				t.Errorf("warned of %q, want %q", got, c.wantPattern)
			}
		})
	}
}

func TestPromptsAndResources(t *testing.T) {
	t.Parallel()
	p, err := New(Rules{Deny: []string{"closed/*"}, Prompts: Globs{Deny: []string{"open/secret_*"}},
		Resources: Globs{Deny: []string{"open/file:///etc/*"}}},
		map[string]Rules{
			"local":   {Deny: []string{"*"}, Resources: Globs{Allow: []string{"docs://*"}}},
			"open":    {Prompts: Globs{Allow: []string{"review*", "secret_*"}}},
			"partial": {Deny: []string{"write_*"}},
		})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind, server, name string
		want               Decision
	}{
		{"prompt", "closed", "summarise", Deny}, // every tool denied globally
		{"resource", "closed", "file:///a", Deny},
		{"prompt", "local", "x", Deny},           // every tool denied by "*"
		{"resource", "local", "docs://a", Allow}, // named by an allow pattern
		{"resource", "local", "file:///a", Deny}, // not in the allow list
		{"prompt", "open", "review_pr", Allow},
		{"prompt", "open", "secret_x", Deny}, // deny wins over allow
		{"prompt", "open", "other", Deny},    // not in the allow list
		{"resource", "open", "file:///etc/passwd", Deny},
		{"resource", "open", "file:///home/a", Allow},
		{"prompt", "partial", "x", Allow}, // some tools remain
		{"resource", "partial", "x://y", Allow},
		{"prompt", "unlisted", "x", Allow},
	}
	for _, c := range cases {
		var v Verdict
		if c.kind == "prompt" {
			v = p.DecidePrompt(c.server, c.name)
		} else {
			v = p.DecideResource(c.server, c.name)
		}
		if v.Decision != c.want {
			t.Errorf("%s %s/%s = %v (%s), want %v", c.kind, c.server, c.name, v.Decision, v.Reason(), c.want)
		}
		if v.Decision == Deny && v.Reason() == "no rule matched" {
			t.Errorf("%s %s/%s: denied without a reason", c.kind, c.server, c.name)
		}
	}
	only, _ := New(Rules{Allow: []string{"gh/*"}}, nil)
	if only.DecidePrompt("slack", "p").Decision != Deny || only.DecidePrompt("gh", "p").Decision != Allow {
		t.Error("a global allow list that names none of a server's tools must close its prompts")
	}
}

func TestToolsClosed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		global Rules
		local  Rules
		want   bool
	}{
		{Rules{Deny: []string{"db/*"}}, Rules{}, true},
		{Rules{Deny: []string{"d?/*"}}, Rules{}, true},
		{Rules{Deny: []string{"*"}}, Rules{}, true},
		{Rules{Deny: []string{"*/*"}}, Rules{}, true},
		{Rules{Deny: []string{"db__*"}}, Rules{}, true},
		{Rules{Deny: []string{"db/a*"}}, Rules{}, false},
		{Rules{Deny: []string{"dbx/*"}}, Rules{}, false},
		{Rules{}, Rules{Deny: []string{"*"}}, true},
		{Rules{}, Rules{Deny: []string{"db/*"}}, true},
		{Rules{}, Rules{Deny: []string{"*_*"}}, false},
		{Rules{Allow: []string{"kv/*"}}, Rules{}, true},
		{Rules{Allow: []string{"*/read_*"}}, Rules{}, false},
		{Rules{}, Rules{Allow: []string{"read_*"}}, false},
	}
	for _, c := range cases {
		p, err := New(c.global, map[string]Rules{"db": c.local})
		if err != nil {
			t.Fatal(err)
		}
		if _, got := p.ToolsClosed("db"); got != c.want {
			t.Errorf("ToolsClosed with global %+v, local %+v = %v, want %v", c.global, c.local, got, c.want)
		}
	}
}

// FuzzExtension checks the prefix analysis against Match itself.
func FuzzExtension(f *testing.F) {
	f.Add("db/*", "db/", "x")
	f.Add("d*b?/*", "db/", "tool")
	f.Add("*a*", "b", "a")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, pat, prefix, suffix string) {
		if len(pat) > 64 || len(prefix) > 64 || len(suffix) > 64 || suffix == "" {
			return
		}
		if matchesEveryExtension(pat, prefix) && !Match(pat, prefix+suffix) {
			t.Fatalf("%q said to match every extension of %q, but not %q", pat, prefix, prefix+suffix)
		}
		if Match(pat, prefix+suffix) && !canMatchExtension(pat, prefix) {
			t.Fatalf("%q matches %q, but was said to match no extension of %q", pat, prefix+suffix, prefix)
		}
	})
}

// FuzzMatchReference compares Match with the same glob as a regular
// expression.
func FuzzMatchReference(f *testing.F) {
	f.Add("*", "*0")
	f.Add("a*?b", "a**b")
	f.Add("db/*", "db/drop__table")
	f.Fuzz(func(t *testing.T, pat, name string) {
		if len(pat) > 32 || len(name) > 64 || !utf8.ValidString(pat) || !utf8.ValidString(name) {
			return
		}
		var re strings.Builder
		re.WriteString(`^(?s:`)
		for _, r := range pat {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`)$`)
		// The regexp's "." is a character, Match's "?" a byte: compare
		// on ASCII only where they agree.
		if strings.Contains(pat, "?") && !isASCII(name) {
			return
		}
		if want := regexp.MustCompile(re.String()).MatchString(name); Match(pat, name) != want {
			t.Fatalf("Match(%q, %q) = %v, want %v", pat, name, !want, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
