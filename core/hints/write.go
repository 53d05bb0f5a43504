package hints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// Marshal writes the set as a hints file, one entry a line, in order.
func (s *Set) Marshal() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range s.entries {
		_ = enc.Encode(e) // strings only: cannot fail
	}
	return b.Bytes()
}

// WriteFile writes the set to path atomically: into a temporary file in
// the same folder, flushed to disk, then renamed over path. A crash
// leaves either the old file or the new one, never a part of either.
// The folder is made when missing.
func WriteFile(path string, s *Set) error {
	if err := safefile.WriteFile(path, s.Marshal(), 0o644); err != nil {
		return fmt.Errorf("write hints: %w", err)
	}
	return nil
}

// Cache is a hints file that enrich adds to as it goes: every Put writes
// the whole file again, atomically, so that a run stopped at any moment
// keeps every batch it finished and never leaves a broken file. Its
// methods are safe for concurrent use.
type Cache struct {
	path string
	mu   sync.Mutex
	set  *Set
}

// OpenCache reads the hints file at path, or starts an empty one when
// there is no file yet. A file that cannot be read is an error: enrich
// does not write over what it cannot read.
func OpenCache(path string) (*Cache, error) {
	s, err := LoadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s = New()
	case err != nil:
		return nil, err
	}
	return &Cache{path: path, set: s}, nil
}

// Path is the file the cache writes.
func (c *Cache) Path() string { return c.path }

// Current reports whether the cache holds hints for t that need not be
// asked for again (see Set.Current).
func (c *Cache) Current(t *catalog.Tool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set.Current(t)
}

// Set returns a copy of the cache's entries.
func (c *Cache) Set() *Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set.Clone()
}

// Put adds or replaces entries and writes the file. Entries that do not
// pass the file's checks are refused, and nothing is written.
func (c *Cache) Put(entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.set.Clone()
	for _, e := range entries {
		if err := next.Put(e); err != nil {
			return fmt.Errorf("hints for %s: %w", e.ID, err)
		}
	}
	if err := WriteFile(c.path, next); err != nil {
		return err
	}
	c.set = next
	return nil
}
