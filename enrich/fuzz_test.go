package enrich

import (
	"testing"

	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
)

// FuzzParseReply checks that no reply makes parseReply panic, that every
// tool it keeps was in the batch with hints that pass the file's checks,
// and that every tool of the batch is either kept or rejected.
func FuzzParseReply(f *testing.F) {
	batch := fixture(f, map[string]int{"alpha": 3}).Tools()
	names := namesOf(batch)
	for _, s := range []string{
		enrichtest.ReplyFor(names, func(n string) []any { return []any{"a", "b", "c", "d"} }),
		"```json\n" + enrichtest.ReplyFor(names[:1], func(string) []any { return []any{"a", 1, nil, "d"} }) + "\n```",
		`{"tools":[{"name":"tool_00","hints":["a","b","c","d"]},{"name":"tool_00","hints":[]}]}`,
		`{"tools":null}`, `{"tools":[null,1,"x",{"name":7}]}`, "", "```", "```\n```", `prose {"tools":[]} prose`,
		`{"tools":[{"name":"zz","hints":["a","b","c","d"]}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		good, rejected := parseReply(reply, "alpha", batch)
		inBatch := map[string]bool{}
		for _, n := range names {
			inBatch[n] = true
		}
		for name, hs := range good {
			if !inBatch[name] {
				t.Fatalf("kept hints for %q, which is not in the batch", name)
			}
			if len(hs) != HintsPerTool {
				t.Fatalf("kept %d hints for %q", len(hs), name)
			}
			for _, h := range hs {
				if c, err := hints.CheckHint(h); err != nil || c != h {
					t.Fatalf("kept hint %q for %q: %v", h, name, err)
				}
			}
		}
		rej := map[string]bool{}
		for _, r := range rejected {
			rej[r.Tool] = true
			if r.Problem == "" {
				t.Fatalf("rejection of %s without a problem", r.Tool)
			}
		}
		for _, tl := range batch {
			if _, ok := good[tl.Name]; ok == rej[tl.ID()] {
				t.Fatalf("%s: kept %v and rejected %v", tl.ID(), ok, rej[tl.ID()])
			}
		}
	})
}
