package search

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/catalog"
)

// A regex query is written in Python's re syntax (at most MaxRegexLen
// bytes), translated to RE2 and so matched in linear time. It is matched
// against a tool's name, its title, search hint and keywords, its
// description, and its parameter names and descriptions; a match in the
// name counts most.

// RegexTimeLimit bounds the time one regex search may take. RE2 runs in
// time linear in the text, but a large pattern makes that line steep; past
// the limit the search stops with ErrTimeExceeded.
var RegexTimeLimit = 2 * time.Second

// ErrTimeExceeded is returned when a search runs out of time.
var ErrTimeExceeded = errors.New("search time exceeded")

// regexFieldScore is what a match in each field adds to a tool's score.
var regexFieldScore = [numFields]float64{4, 0, 2, 1, 0.5}

func (ix *Index) regexSearch(ctx context.Context, pattern string, req Request, v func(*catalog.Tool) bool) (Result, error) {
	if len(pattern) > MaxRegexLen {
		return Result{}, badQuery("the regex is %d bytes long; the limit is %d", len(pattern), MaxRegexLen)
	}
	re, err := compilePattern(pattern)
	if err != nil {
		return Result{}, badQuery("%v", err)
	}
	res := Result{Form: FormRegex}
	top := newTopK(req.MaxResults)
	n := 0
	start := time.Now()
	for _, seg := range ix.segs {
		for i := range seg.docs {
			if n++; n%64 == 0 {
				if err := ctx.Err(); err != nil {
					return Result{}, err
				}
				if time.Since(start) > RegexTimeLimit {
					return Result{}, fmt.Errorf("%w: the regex ran out of time (%v) after %d of %d tools; make it simpler",
						ErrTimeExceeded, RegexTimeLimit, n, ix.total)
				}
			}
			if seg.deadDoc != nil && seg.deadDoc[i] {
				continue
			}
			t := seg.docs[i].tool
			if !v(t) {
				continue
			}
			score, _ := regexScore(re, t)
			if score == 0 {
				continue
			}
			// Shorter names first among equals: the closer match.
			score += 1 / float64(10+len(t.Name))
			res.Total++
			top.offer(scored{seg: seg, doc: uint32(i), score: score})
		}
	}
	for _, h := range top.sorted() {
		t := h.seg.docs[h.doc].tool
		_, fields := regexScore(re, t)
		res.Hits = append(res.Hits, Hit{Tool: t, Score: h.score, Why: "regex matched " + strings.Join(fields, ", ")})
	}
	if len(res.Hits) == 0 {
		res.NearestServers = ix.nearestServers(pattern)
	}
	return res, nil
}

func regexScore(re *regexp.Regexp, t *catalog.Tool) (float64, []string) {
	var score float64
	var fields []string
	hit := func(f Field) {
		score += regexFieldScore[f]
		fields = append(fields, f.String())
	}
	if re.MatchString(t.Name) {
		hit(FieldName)
	}
	extra := re.MatchString(t.Title) || re.MatchString(t.SearchHint)
	for _, k := range t.Keywords {
		extra = extra || re.MatchString(k)
	}
	if extra {
		hit(FieldExtra)
	}
	if re.MatchString(t.Description) {
		hit(FieldDescription)
	}
	for _, p := range t.Params() {
		if re.MatchString(p.Name) || re.MatchString(p.Description) {
			hit(FieldParams)
			break
		}
	}
	return score, fields
}

// looksLikeRegex reports whether an auto-mode query is meant as a regular
// expression: it uses a construct that plain words and tool names never do.
func looksLikeRegex(q string) bool {
	for _, s := range []string{".*", ".+", "\\", "(?", "[", "|"} {
		if strings.Contains(q, s) {
			return true
		}
	}
	if strings.HasPrefix(q, "^") || (strings.HasSuffix(q, "$") && !strings.ContainsAny(q, " \t")) {
		return true
	}
	return false
}

// nearestServers names up to three servers whose key, title or package are
// closest to the query's words, by shared character trigrams.
func (ix *Index) nearestServers(q string) []string {
	qg := trigrams(strings.ToLower(q))
	if len(qg) == 0 {
		return nil
	}
	type cand struct {
		key string
		sim float64
	}
	var cs []cand
	for key, info := range ix.servers {
		sg := info.grams
		common := 0
		for g := range qg {
			if sg[g] {
				common++
			}
		}
		if common == 0 {
			continue
		}
		cs = append(cs, cand{key, float64(common) / float64(len(qg)+len(sg)-common)})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].sim != cs[j].sim {
			return cs[i].sim > cs[j].sim
		}
		return cs[i].key < cs[j].key
	})
	var out []string
	for _, c := range cs[:min(3, len(cs))] {
		out = append(out, c.key)
	}
	return out
}

func trigrams(s string) map[string]bool {
	out := map[string]bool{}
	words(s, func(parts []string, _ string) {
		for _, p := range parts {
			w := " " + p + " "
			for i := 0; i+3 <= len(w); i++ {
				out[w[i:i+3]] = true
			}
		}
	})
	return out
}
