package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// A regex query is written in Python's re syntax (at most MaxRegexLen
// bytes), translated to RE2 and so matched in linear time. It is matched
// against a tool's name, its title, search hint and keywords, its
// description, and its parameter names and descriptions; a match in the
// name counts most.
//
// Linear time is not little time: RE2 takes up to one step per instruction
// of the compiled pattern for each byte of text (some 16 µs a byte for
// `.{0,450}z`), and an upstream server chooses how long its
// descriptions are. So a regex search is bounded twice over:
//
//   - It reads a tool's name in full, and at most MaxRegexText bytes of the
//     rest of the tool's text: its description first, then its title,
//     search hint and keywords, then each parameter's name and description,
//     each cut to what is left (at a character boundary). Text past that is
//     not searched, and $ matches where the part read ends.
//   - It keeps to a deadline, the context's or RegexTimeLimit from its
//     start, whichever comes first. The clock is read between texts, about
//     every few milliseconds of matching, and inside a text too long to
//     match in one go; past the deadline the search stops and returns an
//     error, never a result read from part of the catalog.

// MaxRegexText is how many bytes of a tool's text, besides its name, a
// regex search reads. It holds all the text of 99.9% of the tools in a
// catalog of 3,600 collected from real servers.
const MaxRegexText = 8 << 10

// RegexTimeLimit bounds the time one regex search may take, when the
// context does not set a closer deadline. Past it the search stops with
// ErrTimeExceeded.
var RegexTimeLimit = 2 * time.Second

// ErrTimeExceeded is returned when a search runs out of time: past
// RegexTimeLimit, or past the context's deadline (the error then wraps
// context.DeadlineExceeded too).
var ErrTimeExceeded = errors.New("search time exceeded")

// regexFieldScore is what a match in each field adds to a tool's score.
// A regular expression is matched against what a tool says of itself, not
// against hints written for it.
var regexFieldScore = [numFields]float64{4, 0, 2, 0, 1, 0.5}

func (ix *Index) regexSearch(ctx context.Context, pattern string, req Request, v func(*catalog.Tool) bool) (Result, error) {
	if len(pattern) > MaxRegexLen {
		return Result{}, badQuery("the regex is %d bytes long; the limit is %d", len(pattern), MaxRegexLen)
	}
	re, insts, err := compilePattern(pattern)
	if err != nil {
		return Result{}, badQuery("%v", err)
	}
	res := Result{Form: FormRegex}
	top := newTopK(req.MaxResults)
	s := newRegexScan(ctx, re, insts)
	n := 0
	for _, seg := range ix.segs {
		for i := range seg.docs {
			n++
			if seg.deadDoc != nil && seg.deadDoc[i] {
				continue
			}
			t := seg.docs[i].tool
			if !v(t) {
				continue
			}
			fields := s.fields(t)
			if s.err != nil {
				return Result{}, s.failure(n, ix.total)
			}
			if fields == 0 {
				continue
			}
			score := fields.score()
			// Shorter names first among equals: the closer match.
			score += 1 / float64(10+len(t.Name))
			res.Total++
			top.offer(scored{seg: seg, doc: uint32(i), matched: uint64(fields), score: score})
		}
	}
	for _, h := range top.sorted() {
		t := h.seg.docs[h.doc].tool
		res.Hits = append(res.Hits, Hit{Tool: t, Score: h.score, Why: "regex matched " + regexFields(h.matched).String()})
	}
	if len(res.Hits) == 0 {
		res.NearestServers = ix.nearestServers(pattern)
	}
	return res, nil
}

// regexFields is the set of fields a regex matched in a tool, one bit per
// Field.
type regexFields uint64

// score adds up what the fields are worth, in field order.
func (fs regexFields) score() float64 {
	var score float64
	for f := range numFields {
		if fs&(1<<f) != 0 {
			score += regexFieldScore[f]
		}
	}
	return score
}

// String names the fields, in field order, separated by commas.
func (fs regexFields) String() string {
	var names []string
	for f := range numFields {
		if fs&(1<<f) != 0 {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, ", ")
}

// regexCheckSteps is how much matching, in steps (bytes of text times
// instructions of the pattern, tens of nanoseconds each at worst), a regex
// search does between two readings of the clock. A text that costs more is
// matched through a runeClock, which reads the clock as it goes.
const regexCheckSteps = 1 << 18

// regexClockRunes is how many characters a runeClock hands out between two
// readings of the clock.
const regexClockRunes = 256

// regexScan matches one pattern against tool after tool, keeping to a
// deadline.
type regexScan struct {
	re    *regexp.Regexp
	insts int // instructions of the compiled pattern: steps per byte, at most
	ctx   context.Context
	// deadline is when the scan must stop: the context's deadline when
	// byContext, else RegexTimeLimit from the start.
	deadline  time.Time
	byContext bool
	// unchecked counts the steps matched since the clock was last read.
	unchecked int
	// err says why the scan stopped, once it has: the context's error, or
	// ErrTimeExceeded.
	err error
	rd  runeClock
}

func newRegexScan(ctx context.Context, re *regexp.Regexp, insts int) *regexScan {
	s := &regexScan{re: re, insts: insts, ctx: ctx, deadline: time.Now().Add(RegexTimeLimit)}
	if d, ok := ctx.Deadline(); ok && d.Before(s.deadline) {
		s.deadline, s.byContext = d, true
	}
	s.rd.scan = s
	return s
}

// fields reports which fields of t the pattern matches, reading the name in
// full and MaxRegexText bytes of the rest. Once the scan has stopped (s.err
// is set) the answer means nothing.
func (s *regexScan) fields(t *catalog.Tool) regexFields {
	var fs regexFields
	if s.match(t.Name) {
		fs |= 1 << FieldName
	}
	left := MaxRegexText
	if s.match(cutText(t.Description, &left)) {
		fs |= 1 << FieldDescription
	}
	// Every text takes its share of the budget, matched or not, so that
	// what is read does not depend on what matched before.
	extra := s.match(cutText(t.Title, &left))
	hint := cutText(t.SearchHint, &left)
	extra = extra || s.match(hint)
	for _, k := range t.Keywords {
		k = cutText(k, &left)
		extra = extra || s.match(k)
	}
	if extra {
		fs |= 1 << FieldExtra
	}
	params := false
	for _, p := range t.Params() {
		name := cutText(p.Name, &left)
		desc := cutText(p.Description, &left)
		params = params || s.match(name) || s.match(desc)
	}
	if params {
		fs |= 1 << FieldParams
	}
	return fs
}

// cutText returns as much of the start of text as *left allows, cut at a
// character boundary, and takes its length from *left.
func cutText(text string, left *int) string {
	n := min(len(text), *left)
	for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
		n--
	}
	*left -= n
	return text[:n]
}

// match reports whether the pattern matches text. A text cheap enough is
// matched in one call, the clock being read now and then between such
// calls; a costlier one is matched through the clock. Once the scan has
// stopped, match reports false.
func (s *regexScan) match(text string) bool {
	if s.err != nil {
		return false
	}
	if len(text) > regexCheckSteps/s.insts {
		return s.matchReader(text)
	}
	cost := len(text) * s.insts
	if s.unchecked += cost; s.unchecked > regexCheckSteps {
		if s.late() {
			return false
		}
		s.unchecked = cost
	}
	return s.re.MatchString(text)
}

// matchReader matches text through the clock: the match stops at the
// deadline (and reports false, with s.err set).
func (s *regexScan) matchReader(text string) bool {
	if s.late() {
		return false
	}
	s.rd.text, s.rd.at, s.rd.runes = text, 0, 0
	ok := s.re.MatchReader(&s.rd)
	s.rd.text = ""
	// The characters read since the reader last looked at the clock.
	s.unchecked = s.rd.runes % regexClockRunes * s.insts
	return ok && s.err == nil
}

// late reads the clock and the context, and stops the scan when it is past
// its deadline or the context is done.
func (s *regexScan) late() bool {
	if s.err != nil {
		return true
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return true
	}
	if !time.Now().Before(s.deadline) {
		s.err = ErrTimeExceeded
		if s.byContext {
			s.err = context.DeadlineExceeded
		}
		return true
	}
	return false
}

// failure is the error of a scan that stopped in the done-th of total
// tools.
func (s *regexScan) failure(done, total int) error {
	switch {
	case errors.Is(s.err, context.DeadlineExceeded):
		return fmt.Errorf("%w: the regex reached the request's deadline at tool %d of %d; make it simpler (%w)",
			ErrTimeExceeded, done, total, s.err)
	case errors.Is(s.err, ErrTimeExceeded):
		return fmt.Errorf("%w: the regex ran out of time (%v) at tool %d of %d; make it simpler",
			ErrTimeExceeded, RegexTimeLimit, done, total)
	}
	return fmt.Errorf("regex search stopped at tool %d of %d: %w", done, total, s.err)
}

// runeClock hands a text to the regexp engine one character at a time and
// reads the scan's clock every regexClockRunes characters; past the
// deadline it ends the text early, and the scan, now stopped, discards the
// answer. It decodes UTF-8 as the engine does for a string, so a match
// through it decides as MatchString does.
type runeClock struct {
	scan  *regexScan
	text  string
	at    int
	runes int
}

// ReadRune returns the next character of the text, or io.EOF at its end or
// past the deadline.
func (r *runeClock) ReadRune() (rune, int, error) {
	if r.at >= len(r.text) {
		return 0, 0, io.EOF
	}
	if r.runes++; r.runes%regexClockRunes == 0 && r.scan.late() {
		r.at = len(r.text)
		return 0, 0, io.EOF
	}
	if c := r.text[r.at]; c < utf8.RuneSelf {
		r.at++
		return rune(c), 1, nil
	}
	c, size := utf8.DecodeRuneInString(r.text[r.at:])
	r.at += size
	return c, size, nil
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
