package search_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// fixedShares is a Learner that gives the same shares whatever the query,
// and remembers the terms it was asked about.
func fixedShares(shares map[string]float64, asked *[]string) search.Learner {
	return func(terms []string, idf func(string) float64) map[string]float64 {
		if asked != nil {
			*asked = append((*asked)[:0], terms...)
		}
		return shares
	}
}

// randomShares gives a share to about one tool in four of snap, from a
// seeded generator; some shares are out of range or not numbers, which
// ranking must take as the nearest end or 0.
func randomShares(snap *catalog.Snapshot, seed uint64) map[string]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := map[string]float64{}
	for _, t := range snap.Tools() {
		if rng.IntN(4) != 0 {
			continue
		}
		switch rng.IntN(20) {
		case 0:
			out[t.ID()] = math.NaN()
		case 1:
			out[t.ID()] = 3
		case 2:
			out[t.ID()] = -1
		default:
			out[t.ID()] = rng.Float64()
		}
	}
	return out
}

// TestLearningOffChangesNothing checks that a search that learns nothing
// (no Learner, a Learner with no shares, shares for tools the query does
// not match, or a learned weight of 0) ranks exactly as before, score for
// score.
func TestLearningOffChangesNothing(t *testing.T) {
	t.Parallel()
	snap := hintedCatalog(t)
	ix := search.Build(snap)
	off := search.DefaultWeights
	off.Learned = 0
	ixOff := search.BuildWith(snap, off)
	ctx := context.Background()
	for _, q := range scoreQueries {
		want, err := ix.Search(ctx, search.Request{Query: q, MaxResults: 10})
		if err != nil {
			t.Fatal(err)
		}
		matched := map[string]bool{}
		for _, h := range want.Hits {
			matched[h.Tool.ID()] = true
		}
		unmatched := map[string]float64{}
		for _, tl := range snap.Tools() {
			if !matched[tl.ID()] && len(unmatched) < 50 {
				unmatched[tl.ID()] = 1
			}
		}
		cases := []struct {
			name string
			ix   *search.Index
			l    search.Learner
		}{
			{"empty shares", ix, fixedShares(nil, nil)},
			{"zero shares", ix, fixedShares(map[string]float64{snap.Tools()[0].ID(): 0}, nil)},
			{"weight 0", ixOff, fixedShares(randomShares(snap, 1), nil)},
		}
		for _, c := range cases {
			got, err := c.ix.Search(ctx, search.Request{Query: q, MaxResults: 10, Learned: c.l})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Hits) != len(want.Hits) || got.Total != want.Total {
				t.Fatalf("%q, %s: %d hits (total %d), want %d (total %d)", q, c.name, len(got.Hits), got.Total, len(want.Hits), want.Total)
			}
			for i := range got.Hits {
				if got.Hits[i].Tool != want.Hits[i].Tool || got.Hits[i].Score != want.Hits[i].Score {
					t.Fatalf("%q, %s: hit %d is %s %v, want %s %v", q, c.name, i, got.Hits[i].Tool.ID(), got.Hits[i].Score,
						want.Hits[i].Tool.ID(), want.Hits[i].Score)
				}
			}
		}
	}
}

// TestLearnedFactor checks the learned factor on a small catalog: a tool
// with share U scores (1 + U) times its score without learning, a tool
// that does not match the query gains nothing, and the breakdown shows
// the factor and multiplies out to the score.
func TestLearnedFactor(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndexExt(t)
	ctx := context.Background()
	q := "create issue"
	base, err := ix.Search(ctx, search.Request{Query: q, MaxResults: 10, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Hits) < 2 {
		t.Fatalf("%q: %d hits, want 2 or more", q, len(base.Hits))
	}
	last := base.Hits[len(base.Hits)-1].Tool.ID()
	for _, u := range []float64{0.25, 0.5, 1, 7} {
		var asked []string
		shares := map[string]float64{last: u, "nowhere/none": 1}
		got, err := ix.Search(ctx, search.Request{Query: q, MaxResults: 10, Explain: true, Learned: fixedShares(shares, &asked)})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(asked, " ") != strings.Join(ix.Terms(q), " ") || len(asked) == 0 {
			t.Fatalf("the learner was asked about %q, want Terms(%q) = %q", asked, q, ix.Terms(q))
		}
		want := base.Hits[len(base.Hits)-1].Score * (1 + min(u, 1))
		found := false
		for _, h := range got.Hits {
			b := h.Breakdown
			if b == nil || b.LearnedWeight != 1 {
				t.Fatalf("%s: breakdown %+v, want the learned weight 1", h.Tool.ID(), b)
			}
			prod := b.Sum * math.Pow(b.Coverage, b.CoveragePower) * (1 + b.NameWeight*b.NameShare) * (1 + b.MentionWeight*b.Mention) *
				(1 + b.HintWeight*b.HintShare*b.HintShare) * (1 + b.HintLeadWeight*b.HintLead) * (1 + b.LearnedWeight*b.Learned)
			if math.Abs(prod-h.Score) > 1e-9*h.Score || b.Score != h.Score {
				t.Fatalf("%s: breakdown %v multiplies to %v, score %v", h.Tool.ID(), b, prod, h.Score)
			}
			if h.Tool.ID() != last {
				if b.Learned != 0 {
					t.Fatalf("%s has a learned share %v", h.Tool.ID(), b.Learned)
				}
				continue
			}
			found = true
			if math.Abs(h.Score-want) > 1e-9*want || b.Learned != min(u, 1) {
				t.Fatalf("share %v: %s scores %v (learned %v), want %v", u, last, h.Score, b.Learned, want)
			}
			if !strings.Contains(b.String(), "learned (1 + 1.00×") {
				t.Fatalf("breakdown text without the learned factor:\n%s", b)
			}
		}
		if !found {
			t.Fatalf("share %v: %s lost", u, last)
		}
		if len(got.Hits) != len(base.Hits) {
			t.Fatalf("share %v: %d hits, want %d: learning added a tool the query does not match", u, len(got.Hits), len(base.Hits))
		}
	}
}

// fixtureIndexExt is the small fixture catalog of search_test.go, built
// from outside the package.
func fixtureIndexExt(t *testing.T) (*catalog.Snapshot, *search.Index) {
	t.Helper()
	return search.FixtureIndex(t)
}

// TestLearningNeverAboveExactOrSelect checks that the largest learned
// share on every other tool cannot put one above a tool named exactly or
// by select:.
func TestLearningNeverAboveExactOrSelect(t *testing.T) {
	t.Parallel()
	snap := smallCatalog(t)
	ix := search.Build(snap)
	all := map[string]float64{}
	tools := snap.Tools()
	for _, tl := range tools {
		all[tl.ID()] = 1
	}
	ctx := context.Background()
	a, b := tools[17], tools[401]
	for _, c := range []struct {
		q    string
		want []string
	}{
		{a.ID(), []string{a.ID()}},
		{"select:" + b.ID() + "," + a.ID(), []string{b.ID(), a.ID()}},
	} {
		shares := map[string]float64{}
		for k, v := range all {
			if k != a.ID() && k != b.ID() {
				shares[k] = v
			}
		}
		res, err := ix.Search(ctx, search.Request{Query: c.q, MaxResults: 5, Learned: fixedShares(shares, nil)})
		if err != nil {
			t.Fatal(err)
		}
		got := hitIDs(res)
		if len(got) < len(c.want) || strings.Join(got[:len(c.want)], " ") != strings.Join(c.want, " ") {
			t.Fatalf("%q with learning on every other tool: %v, want %v first", c.q, got, c.want)
		}
	}
}

// TestLearnedPrunedMatchesExhaustive checks that with learning, ranking
// block by block still answers exactly as reading everything, and that
// every bound holds.
func TestLearnedPrunedMatchesExhaustive(t *testing.T) {
	t.Parallel()
	for name, snap := range map[string]*catalog.Snapshot{"plain": benchCatalog(t), "hinted": hintedCatalog(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ix := search.Build(snap)
			if !ix.Prunable() {
				t.Fatal("the index is not prunable")
			}
			checked := 0
			for seed := range uint64(4) {
				l := fixedShares(randomShares(snap, seed), nil)
				for _, q := range scoreQueries {
					comparePruned(t, ix, search.Request{Query: q, MaxResults: 5, Learned: l})
					n, bad := ix.BoundViolationsLearned(q, l)
					checked += n
					for _, b := range bad {
						t.Errorf("seed %d, %q: %s", seed, q, b)
					}
				}
			}
			if checked < 1000 {
				t.Fatalf("only %d tools checked", checked)
			}
		})
	}
}

// comparePruned fails t when ranking block by block differs from reading
// every posting for req.
func comparePruned(t testing.TB, ix *search.Index, req search.Request) {
	t.Helper()
	ctx := context.Background()
	want, errW := ix.SearchExhaustive(ctx, req)
	got, errG := ix.SearchPruned(ctx, req)
	if errW != nil || errG != nil {
		t.Fatalf("%q: %v / %v", req.Query, errW, errG)
	}
	if len(got.Hits) != len(want.Hits) {
		t.Fatalf("%q: %d hits pruned, %d reading everything", req.Query, len(got.Hits), len(want.Hits))
	}
	for i, h := range got.Hits {
		if h.Tool != want.Hits[i].Tool || h.Score != want.Hits[i].Score {
			t.Fatalf("%q hit %d: %s %v, want %s %v", req.Query, i, h.Tool.ID(), h.Score, want.Hits[i].Tool.ID(), want.Hits[i].Score)
		}
	}
}

// FuzzLearnedBounds checks, for any query and any learned shares, that
// every bound of the score model is at least the score it bounds, that a
// score stays finite and at most 1 + Weights.Learned times the score
// without learning, and that pruning answers as reading everything.
func FuzzLearnedBounds(f *testing.F) {
	for i, q := range scoreQueries {
		f.Add(q, uint64(i), 1.0)
	}
	f.Add("create issue", uint64(9), 1e300)
	f.Add("send message", uint64(3), math.NaN())
	snap := smallCatalog(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string, seed uint64, weight float64) {
		w := search.DefaultWeights
		w.Learned = weight
		ix := search.BuildWith(snap, w)
		l := fixedShares(randomShares(snap, seed), nil)
		if _, bad := ix.BoundViolationsLearned(q, l); len(bad) > 0 {
			t.Fatalf("%q, seed %d, weight %v: %s", q, seed, weight, strings.Join(bad, "; "))
		}
		req := search.Request{Query: q, MaxResults: 5, Learned: l}
		if _, err := ix.Search(ctx, req); err != nil {
			return
		}
		comparePruned(t, ix, req)
		plain, _ := ix.SearchExhaustive(ctx, search.Request{Query: q, MaxResults: search.MaxMaxResults})
		before := map[*catalog.Tool]float64{}
		for _, h := range plain.Hits {
			before[h.Tool] = h.Score
		}
		learned, _ := ix.SearchExhaustive(ctx, search.Request{Query: q, MaxResults: search.MaxMaxResults, Learned: l})
		most := 1 + min(max(weight, 0), 1e6)
		if math.IsNaN(weight) {
			most = 1
		}
		for _, h := range learned.Hits {
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) || h.Score < 0 {
				t.Fatalf("%q: %s scores %v", q, h.Tool.ID(), h.Score)
			}
			if b, ok := before[h.Tool]; ok && h.Score > b*most*(1+1e-12) {
				t.Fatalf("%q: %s scores %v with learning, %v without: more than %v times", q, h.Tool.ID(), h.Score, b, most)
			}
		}
	})
}
