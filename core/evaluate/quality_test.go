package evaluate

import (
	"context"
	"os"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// loadShared loads the real catalog and the dev query set, or skips.
func loadShared(t testing.TB) (*catalog.Snapshot, []Query) {
	t.Helper()
	snap := sharedtest.Catalog(t)
	f, err := os.Open(sharedtest.QueriesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := LoadQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	return snap, qs
}

// TestQualityTargets holds the search to its quality targets on the real
// catalog and dev query set.
func TestQualityTargets(t *testing.T) {
	snap, qs := loadShared(t)
	rep, err := Run(context.Background(), search.Build(snap), qs, 5)
	if err != nil {
		t.Fatal(err)
	}
	for s, sc := range rep.ByStyle {
		t.Logf("%-9s n=%3d hit@1=%.3f hit@5=%.3f mrr=%.3f", s, sc.N, sc.HitAt1, sc.HitAtK, sc.MRR)
	}
	t.Logf("all       n=%3d hit@1=%.3f hit@5=%.3f mrr=%.3f", rep.N, rep.HitAt1, rep.HitAtK, rep.MRR)
	if os.Getenv("TOOLSEARCH_MISSES") != "" {
		for _, m := range rep.Misses {
			t.Logf("%s [%s] rank=%d %q\n   gold %v\n   got  %v", m.ID, m.Style, m.Rank, m.Query, m.Gold, m.Got)
		}
	}
	if rep.HitAt1 < 0.80 || rep.HitAtK < 0.93 || rep.MRR < 0.86 {
		t.Errorf("quality below target: hit@1=%.3f (≥0.80) hit@5=%.3f (≥0.93) mrr=%.3f (≥0.86)", rep.HitAt1, rep.HitAtK, rep.MRR)
	}
	if ex, ok := rep.ByStyle["exact"]; ok && ex.HitAt1 != 1 {
		t.Errorf("exact-name queries: hit@1=%.3f, want 1", ex.HitAt1)
	}
}

// TestQualityTargetsWithHints holds the search to its targets on the real
// catalog with the shared search hints, where a tool scores by its
// best-matching hint too.
func TestQualityTargetsWithHints(t *testing.T) {
	snap, qs := loadShared(t)
	set, err := hints.LoadFile(sharedtest.HintsPath(t))
	if err != nil {
		t.Fatal(err)
	}
	hinted, _, err := set.Apply(snap)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), search.Build(hinted), qs, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with hints: n=%d hit@1=%.3f hit@5=%.3f mrr=%.3f", rep.N, rep.HitAt1, rep.HitAtK, rep.MRR)
	if rep.HitAt1 < 0.93 || rep.HitAtK < 0.98 || rep.MRR < 0.94 {
		t.Errorf("quality with hints below target: hit@1=%.3f (≥0.93) hit@5=%.3f (≥0.98) mrr=%.3f (≥0.94)", rep.HitAt1, rep.HitAtK, rep.MRR)
	}
	if ex, ok := rep.ByStyle["exact"]; ok && ex.HitAt1 != 1 {
		t.Errorf("exact-name queries with hints: hit@1=%.3f, want 1", ex.HitAt1)
	}
}
