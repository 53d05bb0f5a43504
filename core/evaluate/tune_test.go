package evaluate

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/toolsearch/toolsearch/core/search"
)

// TestTune evaluates weight variants given as JSON in TOOLSEARCH_TUNE (a list
// of partial Weights objects applied over the defaults). It is a tool for
// tuning, skipped unless the variable is set.
func TestTune(t *testing.T) {
	spec := os.Getenv("TOOLSEARCH_TUNE")
	if spec == "" {
		t.Skip("set TOOLSEARCH_TUNE to a JSON list of weight variants")
	}
	snap, qs := loadShared(t)
	var variants []json.RawMessage
	if err := json.Unmarshal([]byte(spec), &variants); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		w := search.DefaultWeights
		if err := json.Unmarshal(v, &w); err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), search.BuildWith(snap, w), qs, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-60s hit@1=%.3f hit@5=%.3f mrr=%.3f  task %.3f mism %.3f kw %.3f", v, rep.HitAt1, rep.HitAtK, rep.MRR,
			rep.ByStyle["task"].HitAt1, rep.ByStyle["mismatch"].HitAt1, rep.ByStyle["keywords"].HitAt1)
	}
}
