package catalog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// vocabFor returns the embedded vocabulary, failing t if it cannot be read.
func vocabFor(t testing.TB) *o200kVocab {
	t.Helper()
	v, err := loadO200k()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParseO200kVocab: a small vocabulary is read, every token is found
// at its rank, and other text is not a token.
func TestParseO200kVocab(t *testing.T) {
	t.Parallel()
	// a, b, ab, abc, "b c"
	v, err := parseO200kVocab(strings.NewReader("YQ== 0\nYg== 1\nYWI= 2\n\nYWJj 3\nYiBj 4\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for want, tok := range []string{"a", "b", "ab", "abc", "b c"} {
		if got := v.rank(tok); got != uint32(want) {
			t.Errorf("rank(%q) = %d, want %d", tok, got, want)
		}
	}
	for _, s := range []string{"", "c", "ba", "abcd", "b  c", "A"} {
		if got := v.rank(s); got != noRank {
			t.Errorf("rank(%q) = %d, want none", s, got)
		}
	}
	if v.maxLen != 3 {
		t.Errorf("maxLen = %d, want 3", v.maxLen)
	}
}

// TestParseO200kVocabErrors: a malformed vocabulary is refused, naming
// the line and what is wrong with it.
func TestParseO200kVocabErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no tokens"},
		{"blank", "\n\n", "no tokens"},
		{"no rank", "YQ==\n", `line 1: want "base64 rank"`},
		{"bad rank", "YQ== 0\nYg== x\n", "line 2: rank \"x\", want 1"},
		{"rank gap", "YQ== 0\nYg== 2\n", "line 2: rank \"2\", want 1"},
		{"rank first", "YQ== 1\n", "line 1: rank \"1\", want 0"},
		{"bad base64", "YQ== 0\n!!!! 1\n", "line 2: token \"!!!!\" is not base64"},
		{"empty token", " 0\n", "line 1: token \"\" is not base64"},
		{"duplicate", "YQ== 0\nYg== 1\nYQ== 2\n", "line 3: token \"a\" already has rank 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := parseO200kVocab(strings.NewReader(tc.in), int64(len(tc.in)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseO200kVocab(%q) = %v, %v; want an error containing %q", tc.in, v, err, tc.want)
			}
		})
	}
}

// TestO200kMergeScanHeap: both ways of merging leave the same number of
// parts of any bytes, ties between equal pairs (runs of one or two
// letters) among them.
func TestO200kMergeScanHeap(t *testing.T) {
	t.Parallel()
	v := vocabFor(t)
	rnd := rand.New(rand.NewPCG(13, 17))
	alphabets := []string{"a", "ab", "aeinrst", "0123456789", " \n\t", "!=-_.", "日本語\u0301", ""}
	for range 5000 {
		n := rnd.IntN(maxScanMerge + 1)
		b := make([]byte, 0, n)
		alpha := alphabets[rnd.IntN(len(alphabets))]
		for len(b) < n {
			if alpha == "" {
				b = append(b, byte(rnd.Uint32()))
			} else {
				b = append(b, alpha[rnd.IntN(len(alpha))])
			}
		}
		p := string(b)
		if scan, heap := v.mergeScan(p), v.mergeHeap(p); scan != heap {
			t.Fatalf("%q: merged by scan into %d parts, with the heap into %d", p, scan, heap)
		}
	}
}

// TestO200kMergeReference: single words of up to 300 letters, merged
// with the heap past maxScanMerge bytes, are counted as the reference
// counts them.
func TestO200kMergeReference(t *testing.T) {
	t.Parallel()
	v := vocabFor(t)
	rnd := rand.New(rand.NewPCG(19, 23))
	for _, alpha := range []string{"a", "ab", "abc", "aeinrst", "etaoinshrdlucmfwypvbgkjqxz"} {
		for range 200 {
			b := make([]byte, 1+rnd.IntN(300))
			for i := range b {
				b[i] = alpha[rnd.IntN(len(alpha))]
			}
			p := string(b)
			got := 1
			if v.rank(p) == noRank {
				got = v.merge(p)
			}
			if want := refCount(t, p); got != want {
				t.Fatalf("%q: %d tokens, the reference counts %d", p, got, want)
			}
		}
	}
}

// BenchmarkO200kLoad reads the embedded vocabulary; vocab-B is the size
// of what it keeps, B/op all it allocates on the way.
func BenchmarkO200kLoad(b *testing.B) {
	b.ReportAllocs()
	var v *o200kVocab
	for b.Loop() {
		f, err := vocabFile()
		if err != nil {
			b.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		if v, err = parseO200kVocab(f, fi.Size()); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	b.ReportMetric(float64(v.size()), "vocab-B")
	b.ReportMetric(float64(len(v.ends)), "tokens")
}

// BenchmarkCountTokensLongPiece counts text that is one piece, merged
// with the heap: the time a byte stays about the same from 64 KiB to
// 4 MiB, as merging takes O(n log n).
func BenchmarkCountTokensLongPiece(b *testing.B) {
	CountTokens("")
	for _, size := range []int{64 << 10, 4 << 20} {
		for _, unit := range []string{"a", "ab", "!?"} {
			s := strings.Repeat(unit, size/len(unit))
			b.Run(unit+"/"+byteSize(size), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					CountTokens(s)
				}
			})
		}
	}
}

// byteSize names a size in KiB or MiB.
func byteSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
