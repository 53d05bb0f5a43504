package skills

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsearch/toolsearch/core/search"
)

// benchWords make the made-up skills' descriptions: each skill takes a
// few, so that any query word matches a share of them, as in a large real
// collection.
var benchWords = []string{"invoice", "refund", "contract", "review", "deploy", "release", "incident", "report",
	"schema", "migrate", "translate", "summarise", "calendar", "meeting", "budget", "forecast", "ticket", "triage",
	"pdf", "form", "spreadsheet", "chart", "email", "draft", "test", "coverage", "security", "audit", "onboard",
	"customer", "vendor", "payroll", "expense", "policy", "compliance", "design", "brand", "slide", "video", "audio"}

// benchRefs is n skills over n/100 servers, each with a description of
// four words and two files.
func benchRefs(b *testing.B, n int) []Ref {
	b.Helper()
	refs := make([]Ref, 0, n)
	for i := range n {
		name := fmt.Sprintf("skill-%05d", i)
		desc := fmt.Sprintf("%s the %s and %s for the %s team", benchWords[i%len(benchWords)], benchWords[(i*7+3)%len(benchWords)],
			benchWords[(i*13+5)%len(benchWords)], benchWords[(i*17+11)%len(benchWords)])
		uri := "skill://" + name + "/SKILL.md"
		raw := entryJSON(uri, fmt.Sprintf(`{"name":%q,"description":%q}`, name, desc),
			map[string]string{uri: "---\nname: " + name + "\n---\n", "skill://" + name + "/references/GUIDE.md": desc})
		e, err := Parse([]byte(raw))
		if err != nil {
			b.Fatal(err)
		}
		r, err := NewRef(fmt.Sprintf("server%03d", i/100), e)
		if err != nil {
			b.Fatal(err)
		}
		refs = append(refs, r)
	}
	return refs
}

// BenchmarkSkills10k: what 10,000 skills (100 servers of 100) cost the
// gateway: building their index, a search, and the tokens of the first
// skills/list page. Run with
//
//	go test -run '^$' -bench BenchmarkSkills10k -benchmem ./core/skills
func BenchmarkSkills10k(b *testing.B) {
	refs := benchRefs(b, 10_000)
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := NewIndex(refs); err != nil {
				b.Fatal(err)
			}
		}
	})
	x, err := NewIndex(refs)
	if err != nil {
		b.Fatal(err)
	}
	if x.Len() != len(refs) {
		b.Fatalf("indexed %d skills of %d", x.Len(), len(refs))
	}
	b.Run("search", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			hits, err := x.Search(ctx, []string{"review the customer refund policy"}, search.Request{MaxResults: 5})
			if err != nil || len(hits) == 0 {
				b.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
	})
	b.Run("first-list-tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if FirstListTokens(refs) == 0 {
				b.Fatal("no tokens")
			}
		}
	})
}
