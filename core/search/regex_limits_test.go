package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// hugeIndex is a catalog an upstream server could ship: a few tools whose
// descriptions are megabytes long, and many of MaxRegexText bytes, of text
// the patterns below make RE2 work hard on (long runs of 'a', and no 'q' or
// 'z' to end a match).
func hugeIndex(t *testing.T) *Index {
	t.Helper()
	unit := strings.Repeat("a", 63) + " "
	huge := strings.Repeat(unit, (1<<20)/len(unit)) + "!"
	full := strings.Repeat(unit, MaxRegexText/len(unit))
	var fts []fixtureTool
	for i := range 4 {
		fts = append(fts, fixtureTool{name: fmt.Sprintf("huge_%d", i), desc: huge})
	}
	for i := range 200 {
		fts = append(fts, fixtureTool{name: fmt.Sprintf("full_%d", i), desc: full})
	}
	snap, err := catalog.NewSnapshot(fixtureServer(t, "huge", fts...))
	if err != nil {
		t.Fatal(err)
	}
	return Build(snap)
}

// hugeNameIndex is a catalog of one tool with a megabyte name, which a
// regex reads in full.
func hugeNameIndex(t *testing.T) *Index {
	t.Helper()
	name := strings.Repeat("a", 1<<20) + "!"
	snap, err := catalog.NewSnapshot(fixtureServer(t, "huge", fixtureTool{name: name, desc: "short"}))
	if err != nil {
		t.Fatal(err)
	}
	return Build(snap)
}

// searchWithin runs req, failing the test if it has not returned after
// wait (the search then goes on in the background: the failure is the
// bug).
func searchWithin(t *testing.T, ix *Index, ctx context.Context, req Request, wait time.Duration) (Result, error) {
	t.Helper()
	type answer struct {
		res Result
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := ix.Search(ctx, req)
		done <- answer{res, err}
	}()
	select {
	case got := <-done:
		return got.res, got.err
	case <-time.After(wait):
		t.Fatalf("%q: the search is still running after %v", req.Query, time.Since(start))
		return Result{}, nil
	}
}

// TestRegexStopsAtDeadline runs patterns that cost RE2 many microseconds a
// byte over tools with megabyte descriptions, with a short time to run: the
// search must come back soon after it, say why, and leave nothing running.
// It measures time and goroutines and changes RegexTimeLimit, so it does
// not run in parallel.
func TestRegexStopsAtDeadline(t *testing.T) {
	descs, name := hugeIndex(t), hugeNameIndex(t)
	const wait = 200 * time.Millisecond
	type stop int
	const (
		byDeadline stop = iota // the context's deadline is wait away
		byCancel               // the context is cancelled after wait
		byLimit                // no deadline; RegexTimeLimit is wait
	)
	tests := []struct {
		name      string
		pattern   string
		stop      stop
		mayFinish bool // the pattern is cheap enough to finish in time
		ix        *Index
	}{
		{"optional run", `(?:.?){480}q`, byDeadline, false, descs},
		{"bounded dot", `.{0,450}z`, byDeadline, false, descs},
		{"word groups", `(?i)(?:\w+\s+){1,100}zzz`, byDeadline, false, descs},
		// RE2 runs (a+)+$ in linear time, and fast.
		{"nested plus", `(a+)+$`, byDeadline, true, descs},
		{"cancelled", `(?:.?){480}q`, byCancel, false, descs},
		{"time limit", `.{0,450}z`, byLimit, false, descs},
		// The name is read in full, so the clock is read inside it.
		{"huge name", `.{0,450}z`, byDeadline, false, name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch tt.stop {
			case byDeadline:
				ctx, cancel = context.WithTimeout(ctx, wait)
				defer cancel()
			case byCancel:
				time.AfterFunc(wait, cancel)
			case byLimit:
				defer func(d time.Duration) { RegexTimeLimit = d }(RegexTimeLimit)
				RegexTimeLimit = wait
			}
			start := time.Now()
			res, err := searchWithin(t, tt.ix, ctx, Request{Query: tt.pattern, Mode: ModeRegex}, 5*wait)
			elapsed := time.Since(start)
			t.Logf("%q: returned after %v: %v", tt.pattern, elapsed, err)
			if elapsed > 3*wait {
				t.Errorf("%q: the search took %v, stopped after %v", tt.pattern, elapsed, wait)
			}
			timeUp, deadline, cancelled := errors.Is(err, ErrTimeExceeded),
				errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled)
			switch {
			case err == nil && tt.mayFinish:
				if len(res.Hits) > 0 {
					// Neither a whole description nor its first
					// MaxRegexText bytes (words and spaces) ends in 'a'.
					t.Errorf("%q: hits %v, want none", tt.pattern, ids(res))
				}
			case tt.stop == byDeadline && !(timeUp && deadline):
				t.Errorf("%q: err = %v, want %v wrapping %v", tt.pattern, err, ErrTimeExceeded, context.DeadlineExceeded)
			case tt.stop == byCancel && !(cancelled && !timeUp):
				t.Errorf("%q: err = %v, want %v (and no time exceeded)", tt.pattern, err, context.Canceled)
			case tt.stop == byLimit && !(timeUp && !deadline):
				t.Errorf("%q: err = %v, want %v (and no deadline)", tt.pattern, err, ErrTimeExceeded)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf(" of %d", tt.ix.Len())) {
				t.Errorf("%q: err = %q, want it to say how far the search got", tt.pattern, err)
			}
			// Nothing may go on matching once Search has returned.
			for idle := time.Now(); runtime.NumGoroutine() > before; {
				if time.Since(idle) > time.Second {
					t.Fatalf("%d goroutines left running after the search, %d before", runtime.NumGoroutine(), before)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestRegexReadsCappedText checks what a regex reads of a tool: the name in
// full, and MaxRegexText bytes of the rest, description first.
func TestRegexReadsCappedText(t *testing.T) {
	t.Parallel()
	pad := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name    string
		tool    fixtureTool
		pattern string
		want    bool
	}{
		{"description inside", fixtureTool{name: "t", desc: pad(MaxRegexText-20) + " needle"}, `needle`, true},
		{"description past the cap", fixtureTool{name: "t", desc: pad(MaxRegexText) + " needle"}, `needle`, false},
		{"description straddling the cap", fixtureTool{name: "t", desc: pad(MaxRegexText-3) + "needle"}, `needle`, false},
		{"long name in full", fixtureTool{name: "t" + pad(3*MaxRegexText) + "needle", desc: "short"}, `needle$`, true},
		{"parameter inside", fixtureTool{name: "t", desc: pad(100), params: map[string]string{"p": "needle"}}, `needle`, true},
		{"parameter after a full description", fixtureTool{name: "t", desc: pad(MaxRegexText), params: map[string]string{"p": "needle"}}, `needle`, false},
		{"parameter name after a full description", fixtureTool{name: "t", desc: pad(MaxRegexText), params: map[string]string{"needle": "p"}}, `needle`, false},
		{"search hint inside", fixtureTool{name: "t", desc: pad(100), meta: `{"anthropic/searchHint":"needle"}`}, `needle`, true},
		{"search hint after a full description", fixtureTool{name: "t", desc: pad(MaxRegexText), meta: `{"anthropic/searchHint":"needle"}`}, `needle`, false},
		// 8 KiB of three-byte runes is cut at a character boundary, not
		// inside a rune (which would read as U+FFFD).
		{"cut at a character", fixtureTool{name: "t", desc: strings.Repeat("€", MaxRegexText)}, `\ufffd`, false},
		{"last whole character", fixtureTool{name: "t", desc: strings.Repeat("€", MaxRegexText)}, `^€+$`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap, err := catalog.NewSnapshot(fixtureServer(t, "srv", tt.tool))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Build(snap).Search(context.Background(), Request{Query: tt.pattern, Mode: ModeRegex})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Hits) == 1; got != tt.want {
				t.Errorf("%q found the tool: %v, want %v (hits %v)", tt.pattern, got, tt.want, ids(res))
			}
		})
	}
}

// TestRegexReaderMatchesString checks that matching through the clock's
// reader, as long texts are, decides exactly as matching the string does.
func TestRegexReaderMatchesString(t *testing.T) {
	t.Parallel()
	patterns := []string{`^abc`, `abc$`, `\bword\b`, `^$`, `a*`, `(?i)ÉTÉ`, `.{3}$`, `(?m)^x$`, `\Aa.c\Z`,
		`[^a]$`, `\w+\s\d`, `(?s)a.b`, `é`, `\ufffd`}
	texts := []string{"", "abc", "xabc", "abcx", "a word, b", "sword", "été", "x\ny", "a\nb", "a\xffc",
		"é\xe2\x82", "ab 12", strings.Repeat("ab ", 500) + "abc"}
	for _, p := range patterns {
		re, insts, err := compilePattern(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		for _, text := range texts {
			s := newRegexScan(context.Background(), re, insts)
			if got, want := s.matchReader(text), re.MatchString(text); got != want || s.err != nil {
				t.Errorf("%q on %q: through the reader %v (err %v), as a string %v", p, text, got, s.err, want)
			}
		}
	}
}

// FuzzRegexReader checks the reader against MatchString on any pattern
// pyregex accepts and any text.
func FuzzRegexReader(f *testing.F) {
	for _, seed := range [][2]string{{`^a.c$`, "abc"}, {`\bb`, "a b"}, {`(?i)é+`, "ÉÉ\xff"}, {`x*$`, ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, insts, err := compilePattern(pattern)
		if err != nil {
			return
		}
		s := newRegexScan(context.Background(), re, insts)
		if got, want := s.matchReader(text), re.MatchString(text); got != want {
			t.Errorf("%q on %q: through the reader %v, as a string %v", pattern, text, got, want)
		}
	})
}

// TestRegexResultsUnchanged checks that tools whose text fits under the cap
// are found, scored, ordered and explained as a plain scan of every field
// would.
func TestRegexResultsUnchanged(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	for _, q := range []string{`issue`, `^create_`, `(?i)REPOSITORY`, `message|channel`, `name$`, `^$`, `a`} {
		res, err := ix.Search(context.Background(), Request{Query: q, Mode: ModeRegex, MaxResults: MaxMaxResults})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		re, _, err := compilePattern(q)
		if err != nil {
			t.Fatal(err)
		}
		type hit struct {
			id    string
			score float64
			why   string
		}
		var want []hit
		for _, seg := range ix.segs {
			for _, d := range seg.docs {
				fields := plainRegexFields(re.MatchString, d.tool)
				if len(fields) == 0 {
					continue
				}
				score := 1 / float64(10+len(d.tool.Name))
				for _, f := range fields {
					score += regexFieldScore[f]
				}
				names := make([]string, len(fields))
				for i, f := range fields {
					names[i] = f.String()
				}
				want = append(want, hit{d.tool.ID(), score, "regex matched " + strings.Join(names, ", ")})
			}
		}
		slices.SortFunc(want, func(a, b hit) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return strings.Compare(a.id, b.id)
		})
		var got []hit
		for _, h := range res.Hits {
			got = append(got, hit{h.Tool.ID(), h.Score, h.Why})
		}
		if !slices.Equal(got, want) || res.Total != len(want) {
			t.Errorf("%q: total %d, hits\n%v\nwant\n%v", q, res.Total, got, want)
		}
	}
}

// plainRegexFields lists the fields of t that match, in field order,
// reading every field whole.
func plainRegexFields(match func(string) bool, t *catalog.Tool) []Field {
	var fields []Field
	if match(t.Name) {
		fields = append(fields, FieldName)
	}
	extra := match(t.Title) || match(t.SearchHint)
	for _, k := range t.Keywords {
		extra = extra || match(k)
	}
	if extra {
		fields = append(fields, FieldExtra)
	}
	if match(t.Description) {
		fields = append(fields, FieldDescription)
	}
	for _, p := range t.Params() {
		if match(p.Name) || match(p.Description) {
			fields = append(fields, FieldParams)
			break
		}
	}
	return fields
}
