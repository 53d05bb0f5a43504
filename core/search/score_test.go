package search_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// scoreQueries are keyword queries over the made-up catalog: common and
// rare words, server names, +required words, and words no tool has.
var scoreQueries = []string{
	"create issue", "+send message channel", "list files in folder 07", "the a of",
	"webhook workspace 12", "update payment invoice status", "zzz", "merge branch +commit",
	"delete remove erase record", "issue server 03 create",
}

var (
	fuzzSnapOnce sync.Once
	fuzzSnap     *catalog.Snapshot
)

// smallCatalog is the first servers of the made-up catalog with search
// hints on every second tool: big enough for long lists and several
// blocks, small enough to build per fuzz input, and with tools both with
// and without hints, so that every factor of the score takes part.
func smallCatalog(tb testing.TB) *catalog.Snapshot {
	fuzzSnapOnce.Do(func() {
		snap, err := catalog.NewSnapshot(hintedCatalog(tb).Servers()[:6]...)
		if err != nil {
			tb.Fatal(err)
		}
		fuzzSnap = snap
	})
	return fuzzSnap
}

// TestBoundsHold checks, for every tool each query matches, that every
// bound of the score model (a block's, a block's scale, the query's
// scale) is at least the tool's score, with and without search hints.
func TestBoundsHold(t *testing.T) {
	t.Parallel()
	for name, snap := range map[string]*catalog.Snapshot{"plain": benchCatalog(t), "hinted": hintedCatalog(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ix := search.Build(snap)
			total := 0
			for _, q := range scoreQueries {
				n, bad := ix.BoundViolations(q)
				total += n
				for _, b := range bad {
					t.Errorf("%q: %s", q, b)
				}
			}
			if total < 1000 {
				t.Fatalf("only %d tools checked: the test checks too little", total)
			}
		})
	}
}

// FuzzWeights builds the index with any weights and checks that queries
// neither panic nor give a score that is negative or not finite, that
// every bound holds, and that ranking block by block answers as reading
// everything does. The server mention's weight is also the hint
// coverage's, and the name's length normalisation also HintRest.
func FuzzWeights(f *testing.F) {
	d := search.DefaultWeights
	f.Add(d.Field[0], d.Field[3], d.B[0], d.K1, d.Synonym, d.NameCoverage, d.Coordination, d.ServerMention, d.ImplicitMention, uint8(0))
	f.Add(d.Field[0], d.Field[3], d.B[0], d.K1, 0.0, d.NameCoverage, d.Coordination, d.ServerMention, d.ImplicitMention, uint8(1))
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, uint8(2))
	f.Add(-1.0, math.NaN(), 2.0, -3.0, math.Inf(1), -1.0, math.NaN(), math.Inf(-1), 5.0, uint8(3))
	f.Add(1e300, 1e-300, 1.0, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, uint8(4))
	snap := smallCatalog(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, name, desc, b, k1, syn, nc, coord, sm, im float64, qi uint8) {
		w := search.DefaultWeights
		w.Field[search.FieldName], w.Field[search.FieldDescription] = name, desc
		w.B[search.FieldName] = b
		w.K1, w.Synonym, w.NameCoverage, w.Coordination, w.ServerMention, w.ImplicitMention = k1, syn, nc, coord, sm, im
		w.HintCoverage, w.HintRest = sm, b
		ix := search.BuildWith(snap, w)
		q := scoreQueries[int(qi)%len(scoreQueries)]
		for _, k := range []int{1, 5} {
			req := search.Request{Query: q, MaxResults: k}
			want, errW := ix.SearchExhaustive(ctx, req)
			got, errG := ix.SearchPruned(ctx, req)
			if errW != nil || errG != nil {
				t.Fatalf("%q with %+v: %v / %v", q, w, errW, errG)
			}
			if len(got.Hits) != len(want.Hits) {
				t.Fatalf("%q with %+v: %d hits pruned, %d reading everything", q, w, len(got.Hits), len(want.Hits))
			}
			for i, h := range got.Hits {
				if h.Score < 0 || math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
					t.Fatalf("%q with %+v: %s scores %v", q, w, h.Tool.ID(), h.Score)
				}
				if h.Tool != want.Hits[i].Tool || h.Score != want.Hits[i].Score {
					t.Fatalf("%q with %+v hit %d: %s %v, want %s %v", q, w, i, h.Tool.ID(), h.Score, want.Hits[i].Tool.ID(), want.Hits[i].Score)
				}
			}
		}
		if _, bad := ix.BoundViolations(q); len(bad) > 0 {
			t.Fatalf("%q with %+v: %s", q, w, strings.Join(bad, "; "))
		}
	})
}

// FuzzBounds checks the bounds on any query over the made-up catalog
// with the default weights.
func FuzzBounds(f *testing.F) {
	for _, q := range scoreQueries {
		f.Add(q)
	}
	ix := search.Build(smallCatalog(f))
	f.Fuzz(func(t *testing.T, q string) {
		if _, bad := ix.BoundViolations(q); len(bad) > 0 {
			t.Fatalf("%q: %s", q, strings.Join(bad, "; "))
		}
	})
}

// TestWeightsJSON checks that weights round-trip through JSON, the form
// tuning gives them in.
func TestWeightsJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(search.DefaultWeights)
	if err != nil {
		t.Fatal(err)
	}
	var w search.Weights
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w != search.DefaultWeights {
		t.Fatalf("round trip changed the weights: %+v", w)
	}
}
