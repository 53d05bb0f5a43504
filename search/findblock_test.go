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
