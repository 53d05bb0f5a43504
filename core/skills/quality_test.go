package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/search"
)

// qualityFixture is testdata/quality.json: skills across domains, and
// queries worded apart from their descriptions, each with the skill it
// wants.
type qualityFixture struct {
	Skills []struct {
		Path        string `json:"path"`
		Description string `json:"description"`
	} `json:"skills"`
	Queries []struct {
		Q    string `json:"q"`
		Want string `json:"want"`
	} `json:"queries"`
}

// Floors of the search quality check: below them, a change to the engine
// or to how skills are indexed lost what it found before.
const (
	minHitAt1 = 0.50
	minHitAt5 = 0.70
)

// TestSearchQuality runs every query of the fixture through the index the
// gateway and the command line search skills with, and reports hit@1 and
// hit@5 (the wanted skill first, among the first five).
func TestSearchQuality(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/quality.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx qualityFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Skills) < 20 || len(fx.Queries) < 30 {
		t.Fatalf("the fixture has %d skills and %d queries; too few to measure", len(fx.Skills), len(fx.Queries))
	}
	var refs []Ref
	known := map[string]bool{}
	for _, s := range fx.Skills {
		name := s.Path[strings.LastIndexByte(s.Path, '/')+1:]
		raw, _ := json.Marshal(map[string]any{"uri": "skill://" + s.Path + "/SKILL.md",
			"frontmatter": map[string]string{"name": name, "description": s.Description}, "resources": "dynamic"})
		e, err := Parse(raw)
		if err != nil {
			t.Fatalf("fixture skill %s: %v", s.Path, err)
		}
		r, err := NewRef("lib", e)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
		known[s.Path] = true
	}
	ix, err := NewIndex(refs)
	if err != nil {
		t.Fatal(err)
	}
	at1, at5 := 0, 0
	var misses []string
	for _, q := range fx.Queries {
		if !known[q.Want] {
			t.Fatalf("query %q wants %s, which the fixture lacks", q.Q, q.Want)
		}
		hits, err := ix.Search(context.Background(), []string{q.Q}, search.Request{MaxResults: 5})
		if err != nil {
			t.Fatalf("query %q: %v", q.Q, err)
		}
		rank := -1
		for i, h := range hits {
			if h.Entry.Path == q.Want {
				rank = i
				break
			}
		}
		switch {
		case rank == 0:
			at1++
			at5++
		case rank > 0:
			at5++
		}
		if rank != 0 {
			got := "nothing"
			if len(hits) > 0 {
				got = hits[0].Entry.Path
			}
			misses = append(misses, fmt.Sprintf("%q: want %s (rank %d), first %s", q.Q, q.Want, rank+1, got))
		}
	}
	n := float64(len(fx.Queries))
	h1, h5 := float64(at1)/n, float64(at5)/n
	t.Logf("skill search over %d skills, %d queries: hit@1 %.3f (%d), hit@5 %.3f (%d)", len(refs), len(fx.Queries), h1, at1, h5, at5)
	for _, m := range misses {
		t.Logf("not first: %s", m)
	}
	if h1 < minHitAt1 || h5 < minHitAt5 {
		t.Errorf("hit@1 %.3f, hit@5 %.3f: below the floors %.2f and %.2f", h1, h5, minHitAt1, minHitAt5)
	}
}
