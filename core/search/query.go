package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Mode chooses how a query's text is read.
type Mode int

// Query modes.
const (
	// ModeAuto reads select:, exact names and server prefixes first, then a
	// regular expression when the text looks like one, else keywords.
	ModeAuto Mode = iota
	// ModeKeyword reads the text as keywords or natural language (select:,
	// exact names and server prefixes are still honoured).
	ModeKeyword
	// ModeRegex reads the text as a Python-style regular expression.
	ModeRegex
)

// ParseMode reads "auto", "keyword" or "regex".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ModeAuto, nil
	case "keyword", "keywords", "bm25":
		return ModeKeyword, nil
	case "regex", "regexp":
		return ModeRegex, nil
	}
	return 0, fmt.Errorf("unknown search mode %q (want auto, keyword or regex)", s)
}

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeKeyword:
		return "keyword"
	case ModeRegex:
		return "regex"
	}
	return "auto"
}

// Form says how a query was understood.
type Form string

// Query forms.
const (
	FormSelect  Form = "select"
	FormExact   Form = "exact"
	FormServer  Form = "server"
	FormKeyword Form = "keyword"
	FormRegex   Form = "regex"
)

// Limits on what a query may ask. A query over a limit is refused with an
// error that names the limit, apart from its length: keywords are read from
// the first MaxQueryLen bytes of a longer query, and a keyword query of more
// than MaxTerms distinct terms is answered with its MaxTerms most
// informative ones.
const (
	DefaultMaxResults = 5
	MaxMaxResults     = 50
	MaxQueryLen       = 16 << 10 // bytes
	MaxTerms          = 32
	MaxSelectNames    = 50
	MaxRegexLen       = 200
)

// ErrBadQuery wraps every error about the query itself (as opposed to a
// cancelled context).
var ErrBadQuery = errors.New("bad query")

// Request is one search.
type Request struct {
	// Query is the text as the model or user typed it.
	Query string
	// Mode says how to read Query.
	Mode Mode
	// MaxResults caps the hits; 0 means DefaultMaxResults, and it is capped
	// at MaxMaxResults.
	MaxResults int
	// Servers, when not empty, restricts the search to these server keys.
	Servers []string
	// Visible, when set, hides every tool for which it returns false: such a
	// tool is never returned, counted or named by any query form.
	Visible func(*catalog.Tool) bool
	// MinScore, when above 0, drops keyword hits scoring below it (scores
	// are shown by Explain and the CLI's --explain). Without it a search
	// returns the MaxResults best tools that match at all. Total still
	// counts every tool that matched.
	MinScore float64
	// Explain asks for the fields and words that matched each keyword hit
	// (Hit.Why) and the numbers behind its score (Hit.Breakdown). Hits
	// found otherwise (select:, an exact name, a server prefix, a regex)
	// always say briefly how.
	Explain bool
	// Learned, when set, gives what ranking learned from use: a keyword
	// hit's score is multiplied by 1 + Weights.Learned × its learned
	// share (learn.go). It plays no part in select:, exact names, server
	// prefixes and regular expressions; nil ranks as without learning.
	Learned Learner
}

// Hit is one tool found.
type Hit struct {
	Tool  *catalog.Tool
	Score float64
	// Why says, briefly, what matched: fields and terms (for a keyword hit,
	// when the request asks to Explain), or the form.
	Why string
	// Breakdown takes a keyword hit's score apart, when the request asks
	// to Explain.
	Breakdown *Breakdown
}

// Result is what a search found.
type Result struct {
	// Form is how the query was understood.
	Form Form
	// Hits are the tools found, best first.
	Hits []Hit
	// Total counts every tool that matched, before MaxResults.
	Total int
	// TotalAtLeast says Total is a lower bound: ranking stopped reading the
	// postings of the query's commonest words once they could no longer
	// change the hits, so tools matching only those were not counted.
	TotalAtLeast bool
	// Unknown lists select: names that name no (visible) tool.
	Unknown []string
	// Ambiguous lists select: names that match tools of several servers.
	Ambiguous []string
	// NearestServers names, when nothing matched, the servers whose names
	// are closest to the query.
	NearestServers []string
}

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadQuery, fmt.Sprintf(format, args...))
}

// Search runs one query against the index.
func (ix *Index) Search(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	q := strings.TrimSpace(req.Query)
	switch {
	case q == "":
		return Result{}, badQuery("the query is empty")
	case !utf8.ValidString(q):
		return Result{}, badQuery("the query is not valid UTF-8")
	case math.IsNaN(req.MinScore) || math.IsInf(req.MinScore, 0) || req.MinScore < 0:
		return Result{}, badQuery("min_score is %v; it must be a number of at least 0", req.MinScore)
	case req.MaxResults < 0:
		return Result{}, badQuery("max_results is %d; it must be at least 1", req.MaxResults)
	}
	q = clipQuery(q)
	if req.MaxResults == 0 {
		req.MaxResults = DefaultMaxResults
	}
	req.MaxResults = min(req.MaxResults, MaxMaxResults)
	for _, s := range req.Servers {
		if _, ok := ix.servers[s]; !ok {
			return Result{}, badQuery("unknown server %q", s)
		}
	}
	v := ix.visibility(req)

	if rest, ok := cutPrefixFold(q, "select:"); ok {
		return ix.selectTools(rest, req, v)
	}
	if req.Mode == ModeRegex {
		return ix.regexSearch(ctx, q, req, v)
	}
	if hits := ix.exactTools(q, v); len(hits) > 0 {
		res := Result{Form: FormExact}
		for _, t := range hits {
			res.Hits = append(res.Hits, Hit{Tool: t, Score: exactScore, Why: "exact name"})
		}
		// Fill the rest with what the words of the name find.
		more, err := ix.keywordSearch(ctx, q, req, v)
		if err == nil {
			res.Hits = appendNew(res.Hits, more.Hits)
		}
		res.Total = len(res.Hits)
		res.Hits = res.Hits[:min(len(res.Hits), req.MaxResults)]
		return res, nil
	}
	if srv, ok := ix.serverPrefix(q); ok {
		return ix.serverTools(srv, req, v), nil
	}
	if req.Mode == ModeAuto && looksLikeRegex(q) {
		// A pattern that does not compile or finds nothing is read as
		// words after all ("what's in [brackets]").
		if res, err := ix.regexSearch(ctx, q, req, v); err == nil && len(res.Hits) > 0 {
			return res, nil
		}
	}
	return ix.keywordSearch(ctx, q, req, v)
}

// exactScore is the score given to a tool named exactly; keyword scores stay
// far below it.
const exactScore = 1e6

// visibility combines the request's server filter and visibility predicate.
func (ix *Index) visibility(req Request) func(*catalog.Tool) bool {
	if len(req.Servers) == 0 && req.Visible == nil {
		return allVisible
	}
	var only map[string]bool
	if len(req.Servers) > 0 {
		only = map[string]bool{}
		for _, s := range req.Servers {
			only[s] = true
		}
	}
	return func(t *catalog.Tool) bool {
		if only != nil && !only[t.Server] {
			return false
		}
		return req.Visible == nil || req.Visible(t)
	}
}

// allVisible is the visibility of a request that hides nothing.
func allVisible(*catalog.Tool) bool { return true }

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// lookupName returns the visible tools that name (in any of its forms)
// denotes exactly.
func (ix *Index) lookupName(name string, v func(*catalog.Tool) bool) []*catalog.Tool {
	if ix.names.cannotName(name) {
		return nil
	}
	var out []*catalog.Tool
	for _, t := range ix.names.lookup(strings.ToLower(name)) {
		if v(t) {
			out = append(out, t)
		}
	}
	return out
}

// selectTools answers "select:a,b": exact names, in order, duplicates
// dropped, unknown names reported.
func (ix *Index) selectTools(list string, req Request, v func(*catalog.Tool) bool) (Result, error) {
	res := Result{Form: FormSelect}
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return Result{}, badQuery("select: names no tool (write select:name1,name2)")
	}
	if len(names) > MaxSelectNames {
		return Result{}, badQuery("select: names %d tools; the limit is %d", len(names), MaxSelectNames)
	}
	seen := map[*catalog.Tool]bool{}
	for _, n := range names {
		tools := ix.lookupName(n, v)
		switch {
		case len(tools) == 0:
			res.Unknown = append(res.Unknown, n)
			continue
		case len(tools) > 1:
			res.Ambiguous = append(res.Ambiguous, n)
		}
		for _, t := range tools {
			if !seen[t] {
				seen[t] = true
				res.Hits = append(res.Hits, Hit{Tool: t, Score: exactScore, Why: "selected by name"})
			}
		}
	}
	res.Total = len(res.Hits)
	// A select names what it wants; MaxResults does not cut it below the
	// number of names asked for.
	return res, nil
}

// exactTools returns the tools named exactly by the query, or by one of its
// words when that word is an identifier (it has parts, like
// "create_pull_request" or "getRSI"). Earlier words come first.
func (ix *Index) exactTools(q string, v func(*catalog.Tool) bool) []*catalog.Tool {
	if tools := ix.lookupName(q, v); len(tools) > 0 {
		return tools
	}
	var out []*catalog.Tool
	for i := 0; ; {
		from, to := nextField(q, i)
		if from == to {
			break
		}
		i = to
		w := trimPunct(q[from:to])
		if len(w) < 3 || !isIdentifier(w) {
			continue
		}
		for _, t := range ix.lookupName(w, v) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// trimPunct trims the quotes, brackets and punctuation that may surround
// a name written in a sentence.
func trimPunct(w string) string {
	for len(w) > 0 && isPunct[w[0]] {
		w = w[1:]
	}
	for len(w) > 0 && isPunct[w[len(w)-1]] {
		w = w[:len(w)-1]
	}
	return w
}

var isPunct = func() (t [256]bool) {
	for _, c := range []byte("`'\"()[]{}<>,;:!?") {
		t[c] = true
	}
	return t
}()

// isIdentifier reports whether a word looks like a tool name rather than a
// plain word: it has a joiner or an inner case change.
func isIdentifier(w string) bool {
	plain := true
	for i := 0; i < len(w) && plain; i++ {
		c := w[i]
		plain = isLowerB(c) || isDigitB(c)
	}
	if plain {
		// Lower-case letters and digits: one part.
		return false
	}
	if strings.ContainsAny(w, "_/") || strings.Contains(w, "__") {
		return true
	}
	if strings.Contains(strings.Trim(w, "-."), "-") {
		return true
	}
	if isASCII(w) && len(w) <= 64 {
		var buf [64]byte
		var ends [24]int
		_, parts := splitASCIIInto(w, buf[:0], ends[:0])
		return len(parts) > 1
	}
	return len(splitIdentifier(w, nil)) > 1
}

// serverPrefix recognises "github__", "mcp__github", "mcp__github__",
// "github/", "github__*" and a server key alone.
func (ix *Index) serverPrefix(q string) (string, bool) {
	if strings.ContainsAny(q, asciiBlanks) {
		// No server key has one.
		return "", false
	}
	s := strings.ToLower(q)
	s = strings.TrimSuffix(s, "*")
	if rest, ok := strings.CutPrefix(s, "mcp__"); ok {
		s = rest
	}
	s = strings.TrimSuffix(s, catalog.WireSeparator)
	s = strings.TrimSuffix(s, catalog.IDSeparator)
	key, ok := ix.serverFold[s]
	return key, ok
}

// serverTools lists a server's visible tools in the order it lists them.
func (ix *Index) serverTools(key string, req Request, v func(*catalog.Tool) bool) Result {
	res := Result{Form: FormServer}
	for _, t := range ix.servers[key].srv.Tools {
		if !v(t) {
			continue
		}
		res.Total++
		if len(res.Hits) < req.MaxResults {
			res.Hits = append(res.Hits, Hit{Tool: t, Score: 1, Why: "server " + key})
		}
	}
	return res
}

func appendNew(dst, src []Hit) []Hit {
	seen := make(map[*catalog.Tool]bool, len(dst))
	for _, h := range dst {
		seen[h.Tool] = true
	}
	for _, h := range src {
		if !seen[h.Tool] {
			seen[h.Tool] = true
			dst = append(dst, h)
		}
	}
	return dst
}

// clipQuery returns the first MaxQueryLen bytes of q, ending at a space
// when one is near, else at a character boundary.
func clipQuery(q string) string {
	if len(q) <= MaxQueryLen {
		return q
	}
	cut := MaxQueryLen
	for cut > 0 && !utf8.RuneStart(q[cut]) {
		cut--
	}
	if sp := strings.LastIndexAny(q[:cut], " \t\n"); sp > cut-64 {
		cut = sp
	}
	return strings.TrimSpace(q[:cut])
}
