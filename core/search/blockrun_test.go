package search

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestBlockRun checks that blockRun finds each block's postings, in long
// lists (through their block ranks) and short ones, of every density, as a
// plain scan does.
func TestBlockRun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{1, 64, 65, 500, 4096, 4100, 64000} {
		for _, density := range []float64{0.002, 0.01, 0.1, 0.5, 0.9, 1} {
			var ps []posting
			for d := range uint32(n) {
				if rng.Float64() < density {
					ps = append(ps, newPosting(d, 1, 0))
				}
			}
			if len(ps) == 0 {
				continue
			}
			l := &plist{ps: ps}
			seg := &segment{docs: make([]doc, n), post: map[string]*plist{"t": l}}
			indexBlocks(seg)
			if (l.blocks != nil) != (len(ps) >= minBlockList) || len(l.aux) < len(l.blocks) {
				t.Fatalf("n %d density %v: %d postings, block entries %v", n, density, len(ps), l.blocks != nil)
			}
			nb := uint32((n + blockSize - 1) >> blockShift)
			for i := range nb {
				var want []posting
				for _, p := range ps {
					if p.doc()>>blockShift == i {
						want = append(want, p)
					}
				}
				from, to := l.blockRun(i, seg.ranks)
				if got := ps[from:to]; !slices.Equal(got, want) {
					t.Fatalf("n %d density %v block %d: blockRun gives %d postings from %d, want %d", n, density, i, to-from, from, len(want))
				}
			}
		}
	}
}

// TestSearchPostings checks the branch-free search against sort.Search on
// lists of every length up to 70, for documents before, inside, between
// and after their postings.
func TestSearchPostings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	for n := range 70 {
		ps := make([]posting, 0, n)
		d := uint32(r.IntN(3))
		for range n {
			ps = append(ps, newPosting(d, 1, uint8(r.IntN(1<<fieldBits))))
			d += 1 + uint32(r.IntN(3))
		}
		for doc := range d + 2 {
			want := sort.Search(len(ps), func(i int) bool { return ps[i].doc() >= doc })
			if got := searchPostings(ps, doc); got != want {
				t.Fatalf("%d postings %v: searchPostings(%d) = %d, want %d", n, ps, doc, got, want)
			}
		}
	}
}

// TestLargestSums checks the tools a block offers first: exactly those
// whose sum is at least the n-th largest, on random blocks with ties.
func TestLargestSums(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 4))
	for range 2000 {
		var acc [blockSize]docAcc
		docs := r.Uint64()
		var sums []float32
		for o := range blockSize {
			if docs&(1<<o) != 0 {
				acc[o].acc = float32(r.IntN(20)) / 4 // ties and zeros
				sums = append(sums, acc[o].acc)
			}
		}
		n := 1 + r.IntN(maxFirst)
		if len(sums) <= n {
			continue
		}
		slices.Sort(sums)
		nth := sums[len(sums)-n]
		var want uint64
		for o := range blockSize {
			if docs&(1<<o) != 0 && acc[o].acc >= nth {
				want |= 1 << o
			}
		}
		if got := largestSums(&acc, docs, n); got != want {
			t.Fatalf("n %d, sums %v: got %064b, want %064b", n, sums, got, want)
		}
	}
}

// TestCoverages checks the table of coverage sums against adding each set's
// idf in group order, bit for bit, since final uses either.
func TestCoverages(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 7))
	for n := range covGroups + 1 {
		idf := make([]float64, n)
		for i := range idf {
			idf[i] = r.Float64() * 12
		}
		cov := coverages(make([]float64, 1<<n), idf)
		for m := range cov {
			var want float64
			for gi := range n {
				if m&(1<<gi) != 0 {
					want += idf[gi]
				}
			}
			if cov[m] != want {
				t.Fatalf("%d groups, set %b: %v, want %v", n, m, cov[m], want)
			}
		}
	}
}
