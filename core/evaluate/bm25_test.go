package evaluate

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// plainBM25 is the baseline a plain search engine gives: Okapi BM25
// (k1 1.2, b 0.75) over one field, a tool's name split into words and its
// description, with words lower-cased and nothing else done to them: no
// stemming, synonyms, field weights or coverage. The search must rank at
// least as well as this on query sets nobody tuned it on.
type plainBM25 struct {
	ids      []string
	length   []float64
	postings map[string][]bm25Posting
	avg      float64
}

type bm25Posting struct {
	doc int
	tf  float64
}

// bm25Words splits s into lower-cased words at every character that is
// not a letter or digit, and between a lower-case and an upper-case
// letter ("getUser" is "get user").
func bm25Words(s string) []string {
	var out []string
	var cur []rune
	prev := rune(0)
	for _, r := range s {
		split := !unicode.IsLetter(r) && !unicode.IsDigit(r)
		if split || unicode.IsUpper(r) && unicode.IsLower(prev) {
			if len(cur) > 0 {
				out = append(out, strings.ToLower(string(cur)))
				cur = cur[:0]
			}
		}
		if !split {
			cur = append(cur, r)
		}
		prev = r
	}
	if len(cur) > 0 {
		out = append(out, strings.ToLower(string(cur)))
	}
	return out
}

func newPlainBM25(snap *catalog.Snapshot) *plainBM25 {
	b := &plainBM25{postings: map[string][]bm25Posting{}}
	for i, t := range snap.Tools() {
		words := bm25Words(t.Name + " " + t.Description)
		tf := map[string]float64{}
		for _, w := range words {
			tf[w]++
		}
		for w, n := range tf {
			b.postings[w] = append(b.postings[w], bm25Posting{i, n})
		}
		b.ids = append(b.ids, t.ID())
		b.length = append(b.length, float64(len(words)))
		b.avg += float64(len(words))
	}
	b.avg /= float64(max(1, len(b.ids)))
	return b
}

// search returns the IDs of the k best tools for q, best first.
func (b *plainBM25) search(q string, k int) []string {
	const k1, bb = 1.2, 0.75
	n := float64(len(b.ids))
	score := map[int]float64{}
	seen := map[string]bool{}
	for _, w := range bm25Words(q) {
		if seen[w] {
			continue
		}
		seen[w] = true
		ps := b.postings[w]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			score[p.doc] += idf * p.tf * (k1 + 1) / (p.tf + k1*(1-bb+bb*b.length[p.doc]/b.avg))
		}
	}
	docs := make([]int, 0, len(score))
	for d := range score {
		docs = append(docs, d)
	}
	sort.Slice(docs, func(i, j int) bool {
		if score[docs[i]] != score[docs[j]] {
			return score[docs[i]] > score[docs[j]]
		}
		return docs[i] < docs[j]
	})
	var out []string
	for _, d := range docs[:min(k, len(docs))] {
		out = append(out, b.ids[d])
	}
	return out
}

// plainNDCG is the mean NDCG@k of the baseline over qs, per category.
func (b *plainBM25) ndcgByCategory(qs []Query, k int) map[string]float64 {
	sum, count := map[string]float64{}, map[string]int{}
	for _, q := range qs {
		sum[q.Category] += judge(q.Gold, b.search(q.Query, k), k).ndcg
		count[q.Category]++
	}
	for c := range sum {
		sum[c] /= float64(count[c])
	}
	return sum
}
