package evaluate

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Part is a deterministic subset of a query set: part K of N holds the
// queries whose ID hashes (32-bit FNV-1a) to K-1 modulo N. The parts of one
// N split any set into N disjoint pieces that together hold every query,
// and a query stays in its part however the file is ordered or grows, so
// one part can be tuned on and another reported.
type Part struct {
	K, N int
}

// MaxParts bounds N, which keeps "K/N" readable and its pieces non-trivial.
const MaxParts = 1000

// ParsePart reads "K/N", with 1 ≤ K ≤ N ≤ MaxParts.
func ParsePart(s string) (Part, error) {
	ks, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Part{}, fmt.Errorf("part %q: want K/N, such as 1/2", s)
	}
	k, errK := strconv.Atoi(strings.TrimSpace(ks))
	n, errN := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case errK != nil || errN != nil:
		return Part{}, fmt.Errorf("part %q: K and N must be whole numbers, as in 1/2", s)
	case n < 1 || n > MaxParts:
		return Part{}, fmt.Errorf("part %q: N is %d; it must be between 1 and %d", s, n, MaxParts)
	case k < 1 || k > n:
		return Part{}, fmt.Errorf("part %q: K is %d; it must be between 1 and N (%d)", s, k, n)
	}
	return Part{K: k, N: n}, nil
}

// String writes the part as "K/N", or "" for the zero Part.
func (p Part) String() string {
	if p.N < 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", p.K, p.N)
}

// Holds reports whether the query with this ID belongs to the part. The
// zero Part holds every query.
func (p Part) Holds(id string) bool {
	if p.N < 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32()%uint32(p.N)) == p.K-1
}

// Select returns the queries of qs that belong to the part, in their order.
func (p Part) Select(qs []Query) []Query {
	var out []Query
	for _, q := range qs {
		if p.Holds(q.ID) {
			out = append(out, q)
		}
	}
	return out
}
