package skills_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/skills"
)

// entry is a skills/list entry of a skill and its files, as a server of
// the MCP Skills extension sends it.
func entry(uri, name, desc string, files map[string]string) []byte {
	res := "["
	for u, content := range files {
		if res != "[" {
			res += ","
		}
		res += fmt.Sprintf(`{"uri":%q,"digest":%q,"size":%d}`, u, skills.Digest([]byte(content)), len(content))
	}
	return fmt.Appendf(nil, `{"uri":%q,"frontmatter":{"name":%q,"description":%q},"resources":%s]}`, uri, name, desc, res)
}

// An entry is checked before anything is built on it, and every file
// read later is verified against its manifest.
func ExampleParse() {
	e, err := skills.Parse(entry("skill://pdf-forms/SKILL.md", "pdf-forms", "Fill in PDF forms.",
		map[string]string{"skill://pdf-forms/SKILL.md": "# PDF forms\n"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Name, e.Path, len(e.Files), "file")
	fmt.Println(e.Verify("skill://pdf-forms/SKILL.md", []byte("# PDF forms\n")))
	err = e.Verify("skill://pdf-forms/SKILL.md", []byte("# changed\n"))
	fmt.Println(errors.Is(err, skills.ErrVerify))

	_, err = skills.Parse([]byte(`{"uri":"skill://../etc/SKILL.md","frontmatter":{"name":"etc","description":"d"},"resources":"dynamic"}`))
	fmt.Println(errors.Is(err, skills.ErrInvalid))
	// Output:
	// pdf-forms pdf-forms 1 file
	// <nil>
	// true
	// true
}

// An aggregator serves each server's skills under URIs of its own, which
// keep same-named skills of two servers apart and lead back to the server.
func ExampleQualify() {
	uri, err := skills.Qualify("docs", "skill://pdf-forms/SKILL.md")
	if err != nil {
		panic(err)
	}
	key, orig, ok := skills.Unqualify(uri)
	fmt.Println(uri, "→", key, orig, ok)
	// Output:
	// skill://docs/pdf-forms/SKILL.md → docs skill://pdf-forms/SKILL.md true
}

// Skills are found by their paths, names and descriptions.
func ExampleIndex_Search() {
	var refs []skills.Ref
	for _, s := range []struct{ server, uri, name, desc string }{
		{"docs", "skill://pdf-forms/SKILL.md", "pdf-forms", "Fill in PDF forms and flatten them."},
		{"billing", "skill://acme/billing/refunds/SKILL.md", "refunds", "Issue a refund for a customer's order."},
	} {
		e, err := skills.Parse(entry(s.uri, s.name, s.desc, map[string]string{s.uri: "# " + s.name + "\n"}))
		if err != nil {
			panic(err)
		}
		r, err := skills.NewRef(s.server, e)
		if err != nil {
			panic(err)
		}
		refs = append(refs, r)
	}
	ix, err := skills.NewIndex(refs)
	if err != nil {
		panic(err)
	}
	hits, err := ix.Search(context.Background(), []string{"refund an order"}, search.Request{MaxResults: 1})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.Server, h.URI)
	}
	// Output:
	// billing skill://billing/acme/billing/refunds/SKILL.md
}
