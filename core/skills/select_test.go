package skills

import (
	"context"
	"testing"

	"github.com/toolsearch/toolsearch/core/search"
)

// TestSearchSelect: a select: query names skills by their name, path,
// search name, server-qualified search name or aggregator URI, in the
// order named, each once; a name no skill has picks nothing.
func TestSearchSelect(t *testing.T) {
	t.Parallel()
	ref := func(server, uri, name string) Ref {
		t.Helper()
		e, err := Parse([]byte(entryJSON(uri, `{"name":"`+name+`","description":"d"}`, map[string]string{uri: "x"})))
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRef(server, e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	refs := []Ref{
		ref("alpha", "skill://pdf-forms/SKILL.md", "pdf-forms"),
		ref("beta", "skill://pdf-forms/SKILL.md", "pdf-forms"),
		ref("beta", "skill://acme/billing/refunds/SKILL.md", "refunds"),
	}
	x, err := NewIndex(refs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"select:refunds", []string{"skill://beta/acme/billing/refunds/SKILL.md"}},
		{"select:acme/billing/refunds", []string{"skill://beta/acme/billing/refunds/SKILL.md"}},
		{"select:beta__acme.billing.refunds", []string{"skill://beta/acme/billing/refunds/SKILL.md"}},
		{"select:skill://beta/pdf-forms/SKILL.md", []string{"skill://beta/pdf-forms/SKILL.md"}},
		{"select:pdf-forms", []string{"skill://alpha/pdf-forms/SKILL.md", "skill://beta/pdf-forms/SKILL.md"}},
		{"select: refunds , alpha__pdf-forms, refunds", []string{"skill://beta/acme/billing/refunds/SKILL.md", "skill://alpha/pdf-forms/SKILL.md"}},
		{"select:nothing", nil},
		{"select:", nil},
	}
	for _, tc := range tests {
		hits, err := x.Search(context.Background(), []string{tc.query}, search.Request{})
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.URI)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.query, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.query, got, tc.want)
				break
			}
		}
	}
}
