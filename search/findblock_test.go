package search

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFindBlock checks findBlock against a plain search over lists of every
// density.
func TestFindBlock(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	for _, nb := range []int{1, 2, 7, 64, 1000} {
		for _, density := range []float64{0.01, 0.1, 0.5, 0.9, 1} {
			var bl []blockMax
			for b := range nb {
				if rng.Float64() < density {
					bl = append(bl, blockMax{block: uint32(b)})
				}
			}
			for b := range uint32(nb + 2) {
				want, _ := slices.BinarySearchFunc(bl, b, func(e blockMax, b uint32) int { return int(e.block) - int(b) })
				if got := findBlock(bl, b, nb); got != want {
					t.Fatalf("nb %d density %v block %d: findBlock = %d, want %d", nb, density, b, got, want)
				}
			}
		}
	}
}

// TestGallopDocs checks gallopDocs against a plain search, for targets
// before, inside and after lists of every length.
func TestGallopDocs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{0, 1, 2, 3, 5, 8, 33, 100, 1000} {
		ds := make([]uint32, 0, n)
		d := uint32(0)
		for range n {
			d += 1 + uint32(rng.IntN(4))
			ds = append(ds, d)
		}
		for doc := uint32(0); doc <= d+2; doc++ {
			want, _ := slices.BinarySearch(ds, doc)
			if got := gallopDocs(ds, doc); got != want {
				t.Fatalf("n %d doc %d: gallopDocs = %d, want %d", n, doc, got, want)
			}
		}
	}
}
