package usage

// The usage file, <state directory>/usage.json, is one JSON object:
//
//	{
//	  "format": "toolsearch-usage",
//	  "version": 1,
//	  "halfLife": "168h0m0s",
//	  "entries": [
//	    {"terms": ["creat", "issu"], "tool": "github/create_issue", "weight": 2.5, "at": 1764600000}
//	  ]
//	}
//
// Each entry is a (terms → tool) pair: its terms sorted and distinct (as
// the search index analyses a query), the tool's ID, its strength weight
// at time at (Unix seconds), which fades by half every half-life from
// then. halfLife is the half-life the file was written with; a store with
// another one reads the weights as they are (only their fading changes).
//
// The file is untrusted input to the reader: Decode refuses, with an
// error naming the entry and what is wrong with it, any other format or
// version, unknown keys, more than MaxMaxEntries entries, an entry with
// no terms or more than MaxTerms, a term or tool that is empty, too long,
// not UTF-8 or holds control characters, terms out of order or repeated,
// a weight that is not a number in (0, MaxStrength], a time before 1970 or
// more than a day after the reader's clock, and two entries with the same
// terms and tool. It drops the entries that have faded below MinStrength,
// and, from a file with more entries than the store keeps, the weakest.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/internal/safefile"
)

// Format and Version name the file format.
const (
	Format  = "toolsearch-usage"
	Version = 1
	// FileName is the file's name in the gateway's state directory.
	FileName = "usage.json"
	// MaxFileBytes bounds the file Load reads.
	MaxFileBytes = 256 << 20
)

// maxFuture is how far after the reader's clock an entry's time may be
// (clocks of replicas differ a little; an entry from the far future would
// never fade).
const maxFuture = 24 * time.Hour

type fileJSON struct {
	Format   string      `json:"format"`
	Version  int         `json:"version"`
	HalfLife string      `json:"halfLife,omitempty"`
	Entries  []entryJSON `json:"entries"`
}

type entryJSON struct {
	Terms  []string `json:"terms"`
	Tool   string   `json:"tool"`
	Weight float64  `json:"weight"`
	At     float64  `json:"at"`
}

// Encode writes the store in the file format, entries in the order of
// their tools and terms.
func (s *Store) Encode() ([]byte, error) {
	f := fileJSON{Format: Format, Version: Version, HalfLife: s.opt.HalfLife.String(), Entries: []entryJSON{}}
	s.mu.Lock()
	for _, e := range s.entries {
		f.Entries = append(f.Entries, entryJSON{Terms: e.terms, Tool: e.tool, Weight: e.weight,
			At: float64(e.at.UnixMilli()) / 1000})
	}
	s.mu.Unlock()
	slices.SortFunc(f.Entries, func(a, b entryJSON) int {
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		return slices.Compare(a.Terms, b.Terms)
	})
	return json.MarshalIndent(f, "", " ")
}

// Decode reads a store from data in the file format with options opt, at
// time now (which bounds the entries' times). See the top of file.go for
// what it refuses.
func Decode(data []byte, opt Options, now time.Time) (*Store, error) {
	s, err := New(opt)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileJSON
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a usage file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a usage file: text after the object")
	}
	switch {
	case f.Format != Format:
		return nil, fmt.Errorf("not a usage file: format is %q, want %q", clip(f.Format), Format)
	case f.Version > Version:
		return nil, fmt.Errorf("usage file version %d is newer than this toolsearch reads (%d)", f.Version, Version)
	case f.Version != Version:
		return nil, fmt.Errorf("usage file version %d is not one this toolsearch reads (%d)", f.Version, Version)
	case len(f.Entries) > MaxMaxEntries:
		return nil, fmt.Errorf("usage file has %d entries, more than %d", len(f.Entries), MaxMaxEntries)
	}
	latest := float64(now.Add(maxFuture).Unix())
	seen := make(map[string]int, len(f.Entries))
	kept := make([]*entry, 0, len(f.Entries))
	for i, je := range f.Entries {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("usage file entry %d: %s", i, fmt.Sprintf(format, args...))
		}
		if err := checkText(je.Tool, MaxToolLen); err != nil {
			return nil, bad("tool: %v", err)
		}
		if len(je.Terms) == 0 || len(je.Terms) > MaxTerms {
			return nil, bad("%d terms, want 1..%d", len(je.Terms), MaxTerms)
		}
		for j, t := range je.Terms {
			if err := checkText(t, MaxTermLen); err != nil {
				return nil, bad("term %d: %v", j, err)
			}
			if j > 0 && je.Terms[j-1] >= t {
				return nil, bad("terms are not sorted and distinct (%q before %q)", clip(je.Terms[j-1]), clip(t))
			}
		}
		if !(je.Weight > 0 && je.Weight <= MaxStrength) {
			return nil, bad("weight %v is not in (0, %g]", je.Weight, float64(MaxStrength))
		}
		if !(je.At >= 0 && je.At <= latest) {
			return nil, bad("time %v is not between 1970 and a day from now", je.At)
		}
		k := entryKey(je.Terms, je.Tool)
		if j, ok := seen[k]; ok {
			return nil, bad("repeats entry %d (same terms and tool)", j)
		}
		seen[k] = i
		sec, frac := math.Modf(je.At)
		at := time.Unix(int64(sec), int64(frac*1e9))
		if decay(je.Weight, now.Sub(at), s.opt.HalfLife) < MinStrength {
			continue // faded away
		}
		kept = append(kept, &entry{terms: je.Terms, tool: je.Tool, weight: je.Weight, at: at})
	}
	if len(kept) > s.opt.MaxEntries {
		// The strongest are kept, sorted once rather than evicted one
		// by one.
		slices.SortFunc(kept, func(a, b *entry) int { return cmp.Compare(s.rank(b), s.rank(a)) })
		kept = kept[:s.opt.MaxEntries]
	}
	for _, e := range kept {
		s.add(e)
	}
	s.changed = false
	return s, nil
}

// Load reads the store saved at path with options opt. A file that does
// not exist is an empty store; one that cannot be read or is refused by
// Decode is an error naming the path.
func Load(path string, opt Options) (*Store, error) {
	data, err := safefile.ReadFile(path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return New(opt)
	}
	if err != nil {
		return nil, fmt.Errorf("load learned usage: %w", err)
	}
	s, err := Decode(data, opt, time.Now())
	if err != nil {
		return nil, fmt.Errorf("load learned usage from %s: %w", path, err)
	}
	return s, nil
}

// Save writes the store to path atomically (a temporary file beside it,
// then a rename), creating the directory when needed, and marks the
// store as saved.
func (s *Store) Save(path string) error {
	data, err := s.Encode()
	if err != nil {
		return fmt.Errorf("save learned usage: %w", err)
	}
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("save learned usage: %w", err)
	}
	s.mu.Lock()
	s.changed = false
	s.mu.Unlock()
	return nil
}

// writeAtomic writes data to path through a temporary file and a rename,
// so that a reader sees the old file or the new one, never part of one;
// the file and a folder it makes are the user's alone.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return safefile.WriteFile(path, data, 0o600)
}

// Remove deletes the file at path; a file that does not exist is not an
// error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reset learned usage: %w", err)
	}
	return nil
}
