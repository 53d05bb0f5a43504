// Package usage is what ranking learns from use: which tool was called
// after a search, kept as (query terms → tool) with a strength that fades
// with time.
//
// A Store records that a query, analysed into the search index's terms,
// was followed by a call of a tool. Each (terms, tool) pair is one entry
// whose strength is the number of such calls, each counted by how long ago
// it was: a call counts 1 when it happens and half that after every
// half-life. The store holds at most Options.MaxEntries entries; a new one
// past the cap replaces the weakest.
//
// Shares answers a query: per tool, a share in [0, 1) of how strongly
// tools were called after queries like it. Two queries are alike by the
// terms they share, each term weighed by its idf (so that two queries
// that share only "get" are hardly alike): the similarity of query Q and
// recorded terms T is Σ idf(Q ∩ T) / Σ idf(Q ∪ T). A tool's evidence is
// E = Σ over its entries of similarity × strength, and its share is
// E / (1 + E): one call after the same query gives 1/2, three give 3/4,
// and no number of calls reaches 1. The search index turns the share into
// a bounded factor of the score (core/search, Request.Learned).
//
// Nothing but the terms and the tool's ID is kept: never a call's
// arguments or result. The file format is in file.go. The package does
// no I/O but in Load and Save, and imports no transport or SDK.
package usage

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults and limits of a Store.
const (
	// DefaultHalfLife is how long a call takes to count half.
	DefaultHalfLife = 7 * 24 * time.Hour
	// MinHalfLife and MaxHalfLife bound Options.HalfLife.
	MinHalfLife = time.Minute
	MaxHalfLife = 365 * 24 * time.Hour
	// DefaultMaxEntries is the number of entries kept by default.
	DefaultMaxEntries = 10_000
	// MaxMaxEntries bounds Options.MaxEntries (and a file's entries).
	MaxMaxEntries = 100_000
	// MaxTerms is the most terms an entry keeps (a search reads at most
	// as many).
	MaxTerms = 32
	// MaxTermLen bounds one term, in bytes.
	MaxTermLen = 128
	// MaxToolLen bounds a tool ID, in bytes.
	MaxToolLen = 512
	// MaxStrength bounds an entry's strength: past it, more calls add
	// nothing (a tool's share is then within 1e-6 of 1 anyway).
	MaxStrength = 1e6
	// MinStrength is the strength below which a loaded entry is dropped
	// (a call about ten half-lives ago).
	MinStrength = 1e-3
)

// Options configure a Store. A zero field takes its default.
type Options struct {
	// HalfLife is how long a recorded call takes to count half as much.
	HalfLife time.Duration
	// MaxEntries caps the (terms, tool) pairs kept.
	MaxEntries int
}

// withDefaults fills the zero fields of o and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.HalfLife == 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.HalfLife < MinHalfLife || o.HalfLife > MaxHalfLife {
		return o, fmt.Errorf("half-life %v is out of range %v..%v", o.HalfLife, MinHalfLife, MaxHalfLife)
	}
	if o.MaxEntries < 1 || o.MaxEntries > MaxMaxEntries {
		return o, fmt.Errorf("max entries %d is out of range 1..%d", o.MaxEntries, MaxMaxEntries)
	}
	return o, nil
}

// entry is one (terms, tool) pair. Its strength at time t is
// weight · 2^(−(t − at) / halfLife).
type entry struct {
	terms  []string // sorted, distinct
	tool   string
	weight float64
	at     time.Time
}

// key identifies an entry: its terms joined by a byte no term holds, then
// the tool.
func entryKey(terms []string, tool string) string {
	return strings.Join(terms, "\x00") + "\x01" + tool
}

// Store is the learned (terms → tool) record. It is safe for concurrent
// use.
type Store struct {
	opt Options

	mu      sync.Mutex
	entries map[string]*entry
	byTerm  map[string][]*entry
	changed bool // since the last MarkSaved
}

// New returns an empty store, or an error naming the option that is out
// of range.
func New(opt Options) (*Store, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{opt: opt, entries: map[string]*entry{}, byTerm: map[string][]*entry{}}, nil
}

// Options returns the store's options, defaults filled in.
func (s *Store) Options() Options { return s.opt }

// cleanTerms returns terms sorted, without repeats or empty terms, or an
// error naming the first term the store will not keep.
func cleanTerms(terms []string) ([]string, error) {
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if err := checkText(t, MaxTermLen); err != nil {
			return nil, fmt.Errorf("term %q: %w", clip(t), err)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no terms")
	}
	if len(out) > MaxTerms {
		return nil, fmt.Errorf("%d terms, more than %d", len(out), MaxTerms)
	}
	return out, nil
}

// checkText refuses an empty text, one longer than max bytes, one that is
// not UTF-8 and one with control characters.
func checkText(s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("empty")
	case len(s) > max:
		return fmt.Errorf("%d bytes, more than %d", len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("holds a control character")
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// strength is e's strength at t.
func (s *Store) strength(e *entry, t time.Time) float64 {
	return decay(e.weight, t.Sub(e.at), s.opt.HalfLife)
}

// decay is w after d of half-life h (a d below 0 counts as 0, so that a
// clock set back never makes an entry stronger).
func decay(w float64, d, h time.Duration) float64 {
	if d <= 0 {
		return w
	}
	return w * math.Exp2(-float64(d)/float64(h))
}

// rank orders entries by strength independently of the time it is taken
// at: log2 of the strength at time 0, up to a constant.
func (s *Store) rank(e *entry) float64 {
	return math.Log2(e.weight) + float64(e.at.UnixNano())/float64(s.opt.HalfLife)
}

// Record adds one call of tool after a query whose analysed terms are
// terms, at time at. Terms are kept sorted and without repeats; an entry
// already there gains 1 on its faded strength, a new one past
// MaxEntries replaces the weakest entry. It refuses a tool ID or terms
// the store will not keep (empty, too long, not UTF-8, control
// characters, more than MaxTerms).
func (s *Store) Record(terms []string, tool string, at time.Time) error {
	if err := checkText(tool, MaxToolLen); err != nil {
		return fmt.Errorf("record: tool %q: %w", clip(tool), err)
	}
	ts, err := cleanTerms(terms)
	if err != nil {
		return fmt.Errorf("record %s: %w", clip(tool), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(&entry{terms: ts, tool: tool, weight: 1, at: at})
	return nil
}

// add merges e into the store. The caller holds s.mu.
func (s *Store) add(e *entry) {
	s.changed = true
	k := entryKey(e.terms, e.tool)
	if old, ok := s.entries[k]; ok {
		at := old.at
		if e.at.After(at) {
			at = e.at
		}
		old.weight = min(MaxStrength, s.strength(old, at)+decay(e.weight, at.Sub(e.at), s.opt.HalfLife))
		old.at = at
		return
	}
	if len(s.entries) >= s.opt.MaxEntries {
		var weakest *entry
		var wr float64
		for _, c := range s.entries {
			if r := s.rank(c); weakest == nil || r < wr {
				weakest, wr = c, r
			}
		}
		if s.rank(e) <= wr {
			return // weaker than all that are kept
		}
		s.remove(weakest)
	}
	e.weight = min(MaxStrength, e.weight)
	s.entries[k] = e
	for _, t := range e.terms {
		s.byTerm[t] = append(s.byTerm[t], e)
	}
}

// remove drops e. The caller holds s.mu.
func (s *Store) remove(e *entry) {
	delete(s.entries, entryKey(e.terms, e.tool))
	for _, t := range e.terms {
		l := slices.DeleteFunc(s.byTerm[t], func(x *entry) bool { return x == e })
		if len(l) == 0 {
			delete(s.byTerm, t)
		} else {
			s.byTerm[t] = l
		}
	}
}

// Shares returns, for a query analysed into terms, each tool's learned
// share in [0, 1) at time at (see the package comment), by tool ID; nil
// when no entry shares a term with the query. idf weighs a term (nil
// weighs every term 1); a term of weight 0 or less, or not a number,
// makes no two queries alike.
func (s *Store) Shares(terms []string, idf func(string) float64, at time.Time) map[string]float64 {
	weigh := func(t string) float64 {
		if idf == nil {
			return 1
		}
		if w := idf(t); w > 0 && !math.IsInf(w, 1) {
			return w
		}
		return 0
	}
	q := map[string]float64{}
	var qsum float64
	for _, t := range terms {
		if _, ok := q[t]; ok {
			continue
		}
		w := weigh(t)
		q[t] = w
		qsum += w
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) == 0 || !(qsum > 0) {
		return nil
	}
	seen := map[*entry]bool{}
	var evidence map[string]float64
	for t, qw := range q {
		if qw == 0 {
			continue
		}
		for _, e := range s.byTerm[t] {
			if seen[e] {
				continue
			}
			seen[e] = true
			var both, union float64 = 0, qsum
			for _, et := range e.terms {
				if w, ok := q[et]; ok {
					both += w
				} else {
					union += weigh(et)
				}
			}
			if !(both > 0) {
				continue
			}
			if evidence == nil {
				evidence = map[string]float64{}
			}
			evidence[e.tool] += both / union * s.strength(e, at)
		}
	}
	for tool, ev := range evidence {
		evidence[tool] = ev / (1 + ev)
	}
	return evidence
}

// Len is the number of entries.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Entry is one recorded (terms → tool) pair, as Entries shows it.
type Entry struct {
	Terms    []string
	Tool     string
	Strength float64 // at the time Entries was asked for
	Last     time.Time
}

// Entries returns every entry, strongest first at time at.
func (s *Store) Entries(at time.Time) []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, Entry{Terms: slices.Clone(e.terms), Tool: e.tool, Strength: s.strength(e, at), Last: e.at})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Strength != b.Strength {
			if a.Strength > b.Strength {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		return slices.Compare(a.Terms, b.Terms)
	})
	return out
}

// Reset drops every entry.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.byTerm, s.changed = map[string]*entry{}, map[string][]*entry{}, true
}

// Changed reports whether the store changed since it was loaded or last
// saved.
func (s *Store) Changed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// SharesNow is Shares at the current time: as a method value it is a
// search.Learner.
func (s *Store) SharesNow(terms []string, idf func(string) float64) map[string]float64 {
	return s.Shares(terms, idf, time.Now())
}
