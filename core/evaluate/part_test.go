package evaluate

import (
	"fmt"
	"strings"
	"testing"
)

func TestParsePart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Part
		err  string
	}{
		{in: "1/2", want: Part{1, 2}},
		{in: " 2 / 2 ", want: Part{2, 2}},
		{in: "1/1", want: Part{1, 1}},
		{in: "3/2", err: "K is 3"},
		{in: "0/2", err: "K is 0"},
		{in: "1/0", err: "N is 0"},
		{in: "1/-2", err: "N is -2"},
		{in: "1/1001", err: "N is 1001"},
		{in: "2", err: "want K/N"},
		{in: "", err: "want K/N"},
		{in: "a/2", err: "whole numbers"},
		{in: "1/2/3", err: "whole numbers"},
		{in: "1/99999999999999999999", err: "whole numbers"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePart(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
					t.Fatalf("ParsePart(%q) = %v, %v; want an error naming the input and %q", tc.in, p, err, tc.err)
				}
				return
			}
			if err != nil || p != tc.want || p.String() != fmt.Sprintf("%d/%d", tc.want.K, tc.want.N) {
				t.Fatalf("ParsePart(%q) = %v, %v; want %v", tc.in, p, err, tc.want)
			}
		})
	}
}

// fnv1a is 32-bit FNV-1a written out from its definition, to check Part
// against.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// TestPartSplits: the parts of one N are disjoint, together hold every
// query, keep the file's order, and follow FNV-1a of the ID.
func TestPartSplits(t *testing.T) {
	t.Parallel()
	var qs []Query
	for i := range 500 {
		qs = append(qs, Query{ID: fmt.Sprintf("dev-%d", i), Query: "q", Gold: []string{"s/t"}})
	}
	for n := 1; n <= 5; n++ {
		owner := map[string]int{}
		for k := 1; k <= n; k++ {
			p := Part{K: k, N: n}
			sel := p.Select(qs)
			if n > 1 && (len(sel) < len(qs)/n/2 || len(sel) > 2*len(qs)/n) {
				t.Errorf("part %s holds %d of %d queries", p, len(sel), len(qs))
			}
			prev := -1
			for _, q := range sel {
				if k0, dup := owner[q.ID]; dup {
					t.Errorf("%s is in parts %d and %d of %d", q.ID, k0, k, n)
				}
				owner[q.ID] = k
				if want := int(fnv1a(q.ID)%uint32(n)) + 1; want != k {
					t.Errorf("%s is in part %d/%d; FNV-1a says %d", q.ID, k, n, want)
				}
				var idx int
				fmt.Sscanf(q.ID, "dev-%d", &idx)
				if idx <= prev {
					t.Errorf("part %s is out of order at %s", p, q.ID)
				}
				prev = idx
			}
		}
		if len(owner) != len(qs) {
			t.Errorf("the %d parts of %d hold %d of %d queries", n, n, len(owner), len(qs))
		}
	}
	if got := (Part{}).Select(qs); len(got) != len(qs) {
		t.Errorf("the zero Part holds %d of %d", len(got), len(qs))
	}
}

// FuzzParsePart: ParsePart never panics; what it accepts is in range and
// reads back the same from its String.
func FuzzParsePart(f *testing.F) {
	for _, s := range []string{"1/2", "2/2", " 3 / 7 ", "0/1", "1/0", "-1/2", "1/1000", "1/1001", "a/b", "1/", "/2", "1//2", "+1/2", "1/2/3", "9999999999999999999/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePart(s)
		if err != nil {
			if !strings.Contains(err.Error(), "part ") {
				t.Fatalf("error %q does not say it is about the part", err)
			}
			return
		}
		if p.K < 1 || p.K > p.N || p.N > MaxParts {
			t.Fatalf("ParsePart(%q) = %v, out of range", s, p)
		}
		back, err := ParsePart(p.String())
		if err != nil || back != p {
			t.Fatalf("ParsePart(%q) = %v; its String %q reads back as %v, %v", s, p, p.String(), back, err)
		}
		if next := (Part{K: p.K%p.N + 1, N: p.N}); p.N > 1 && p.Holds("x") && next.Holds("x") {
			t.Fatalf("id x is in parts %d and %d of %d", p.K, p.K%p.N+1, p.N)
		}
	})
}
