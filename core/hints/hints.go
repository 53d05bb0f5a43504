// Package hints reads, checks, applies and writes hints files: search
// phrasings written for each tool ahead of time, which the search index
// gives a field of their own (catalog.Tool.Hints).
//
// A hints file is JSON Lines, one object a line:
//
//	{"id": "github/create_issue", "hints": ["open a bug report", "file a ticket on my repo"]}
//	{"id": "slack/post_message", "hints": ["..."], "digest": "sha256:3f1c…"}
//
// "id" is the tool's ID, "<server key>/<tool name>". "hints" is a list of
// 1 to MaxPerTool non-empty strings of at most MaxHintBytes bytes each,
// without control characters (white space around a hint is trimmed).
// "digest", which toolsearch enrich writes, is Digest of the definition
// the hints were written from: when the tool's definition changes, the
// digest no longer matches, and the entry is stale: it is not applied,
// and enrich writes it anew. An entry without a digest (one written by
// hand) applies to whatever the tool's definition is. Blank lines are
// skipped; other members of a line are ignored; an ID may appear once.
// A file is at most MaxFileBytes.
//
// An ID that names no tool of the catalog is not an error (a file may
// cover servers that are not configured here): Apply reports it.
//
// A tool author can give a tool search words too, through
// _meta["anthropic/searchHint"] in its definition; the catalog reads that
// into Tool.SearchHint, and it needs no hints file.
//
// The package imports no transport or SDK.
package hints

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/internal/safefile"
)

// Bounds of a hints file.
const (
	// MaxHintBytes is the longest hint, in bytes.
	MaxHintBytes = 200
	// MaxPerTool is the most hints one tool may have.
	MaxPerTool = 16
	// MaxFileBytes is the largest hints file read.
	MaxFileBytes = 64 << 20
	// maxLineBytes bounds one line: an id, MaxPerTool hints and a digest
	// fit many times over.
	maxLineBytes = 64 << 10
)

// Entry is one line of a hints file.
type Entry struct {
	// ID is the tool's ID, "<server key>/<tool name>".
	ID string `json:"id"`
	// Hints are the tool's search phrasings.
	Hints []string `json:"hints"`
	// Digest is Digest of the definition the hints were written from;
	// empty for hints that apply whatever the definition is.
	Digest string `json:"digest,omitempty"`
}

// Set is the entries of a hints file, by ID. The zero value is not
// usable; make one with New, Parse or Load. A Set is not safe for
// concurrent modification; readers may share one that no one modifies.
type Set struct {
	entries []Entry // in file order, then in the order Put added them
	byID    map[string]int
}

// New returns an empty set.
func New() *Set { return &Set{byID: map[string]int{}} }

// Len is the number of entries.
func (s *Set) Len() int { return len(s.entries) }

// Get returns the entry for a tool ID.
func (s *Set) Get(id string) (Entry, bool) {
	i, ok := s.byID[id]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i], true
}

// Entries returns the entries in order. The slice must not be modified.
func (s *Set) Entries() []Entry { return s.entries }

// Put adds an entry, or replaces the entry with the same ID in its place.
// The entry is checked as a line of a file is.
func (s *Set) Put(e Entry) error {
	e, err := checkEntry(e)
	if err != nil {
		return err
	}
	if i, ok := s.byID[e.ID]; ok {
		s.entries[i] = e
		return nil
	}
	s.byID[e.ID] = len(s.entries)
	s.entries = append(s.entries, e)
	return nil
}

// Merge puts every entry of o into s, o's replacing s's for the same ID.
func (s *Set) Merge(o *Set) {
	for _, e := range o.entries {
		_ = s.Put(e) // o's entries were checked when they went in
	}
}

// Clone returns a copy of s that can be modified on its own.
func (s *Set) Clone() *Set {
	c := New()
	c.Merge(s)
	return c
}

// LineError is a problem with one line of a hints file.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// ID is the line's tool ID, when it could be read.
	ID  string
	Err error
}

func (e *LineError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("line %d (%s): %v", e.Line, e.ID, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrTooLarge is returned for a file over MaxFileBytes.
var ErrTooLarge = fmt.Errorf("hints file larger than %d bytes", MaxFileBytes)

// maxFileBytes is MaxFileBytes; tests lower it.
var maxFileBytes = MaxFileBytes

// LoadFile reads the hints file at path.
func LoadFile(path string) (*Set, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hints: %w", err)
	}
	defer f.Close()
	s, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("hints %s: %w", path, err)
	}
	return s, nil
}

// Load reads a hints file from r. The first bad line is the error.
func Load(r io.Reader) (*Set, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(maxFileBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, ErrTooLarge
	}
	return Parse(data)
}

// Parse reads a hints file's contents. Every error is a *LineError.
func Parse(data []byte) (*Set, error) {
	s := New()
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := parseLine(b)
		if err != nil {
			return nil, &LineError{Line: line, ID: e.ID, Err: err}
		}
		if _, dup := s.byID[e.ID]; dup {
			return nil, &LineError{Line: line, ID: e.ID, Err: fmt.Errorf("duplicate id: line %d has it too", s.lineOf(data, e.ID))}
		}
		s.byID[e.ID] = len(s.entries)
		s.entries = append(s.entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Line: line + 1, Err: fmt.Errorf("line longer than %d bytes", maxLineBytes)}
		}
		return nil, &LineError{Line: line + 1, Err: err}
	}
	return s, nil
}

// lineOf finds the line of the first entry with id, for the duplicate
// error (rare, so it reads the file again rather than keeping line
// numbers).
func (s *Set) lineOf(data []byte, id string) int {
	line := 0
	for l := range bytes.Lines(data) {
		line++
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(bytes.TrimSpace(l), &e) == nil && e.ID == id {
			return line
		}
	}
	return 0
}

// parseLine reads one line. The returned entry carries the ID when it
// could be read, so the error can name it.
func parseLine(b []byte) (Entry, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		if err == nil {
			err = errors.New("null")
		}
		return Entry{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var e Entry
	idRaw, ok := raw["id"]
	if !ok {
		return e, errors.New(`missing "id"`)
	}
	if err := json.Unmarshal(idRaw, &e.ID); err != nil {
		return e, fmt.Errorf(`"id" is not a string (%s)`, jsonKind(idRaw))
	}
	hRaw, ok := raw["hints"]
	if !ok {
		return e, errors.New(`missing "hints"`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(hRaw, &items); err != nil || bytes.Equal(bytes.TrimSpace(hRaw), []byte("null")) {
		return e, fmt.Errorf(`"hints" is not a list (%s)`, jsonKind(hRaw))
	}
	if len(items) > MaxPerTool {
		return e, fmt.Errorf("%d hints; at most %d", len(items), MaxPerTool)
	}
	for i, it := range items {
		var h string
		if err := json.Unmarshal(it, &h); err != nil {
			return e, fmt.Errorf("hint %d is not a string (%s)", i+1, jsonKind(it))
		}
		e.Hints = append(e.Hints, h)
	}
	if d, ok := raw["digest"]; ok && !bytes.Equal(bytes.TrimSpace(d), []byte("null")) {
		if err := json.Unmarshal(d, &e.Digest); err != nil {
			return e, fmt.Errorf(`"digest" is not a string (%s)`, jsonKind(d))
		}
	}
	return checkEntry(e)
}

// checkEntry checks an entry and trims its hints.
func checkEntry(e Entry) (Entry, error) {
	if err := checkID(e.ID); err != nil {
		return e, err
	}
	if len(e.Hints) == 0 {
		return e, errors.New("no hints")
	}
	if len(e.Hints) > MaxPerTool {
		return e, fmt.Errorf("%d hints; at most %d", len(e.Hints), MaxPerTool)
	}
	out := make([]string, len(e.Hints))
	for i, h := range e.Hints {
		h, err := CheckHint(h)
		if err != nil {
			return e, fmt.Errorf("hint %d: %w", i+1, err)
		}
		out[i] = h
	}
	e.Hints = out
	if e.Digest != "" && !validDigest(e.Digest) {
		return e, fmt.Errorf("digest %q is not %s followed by 64 hex digits", clip(e.Digest, 80), digestPrefix)
	}
	return e, nil
}

// checkID checks the form "<server>/<tool>".
func checkID(id string) error {
	server, name, ok := strings.Cut(id, "/")
	switch {
	case id == "":
		return errors.New(`"id" is empty`)
	case len(id) > 512:
		return fmt.Errorf(`"id" is %d bytes; at most 512`, len(id))
	case !utf8.ValidString(id):
		return errors.New(`"id" is not valid UTF-8`)
	case !ok || server == "" || name == "":
		return fmt.Errorf(`"id" %q is not "<server>/<tool>"`, id)
	}
	return nil
}

// CheckHint checks one hint, as a file line's or a model's reply: it
// returns the hint with surrounding white space trimmed, or an error that
// says what is wrong with it.
func CheckHint(h string) (string, error) {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return "", errors.New("empty")
	case len(h) > MaxHintBytes:
		return "", fmt.Errorf("%d bytes; at most %d", len(h), MaxHintBytes)
	case !utf8.ValidString(h):
		return "", errors.New("not valid UTF-8")
	}
	for _, r := range h {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return "", fmt.Errorf("contains the control character %U", r)
		}
	}
	return h, nil
}

// jsonKind names the kind of a JSON value, for errors.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
