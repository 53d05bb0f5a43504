package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/toolsearch/toolsearch/internal/sharedtest"
	porter2 "github.com/toolsearch/toolsearch/internal/stem"
)

// TestStemCacheBounded checks that the shared stem cache keeps short words
// and not long ones, which only queries bring.
func TestStemCacheBounded(t *testing.T) {
	short := "zorblaxification"
	long := strings.Repeat("quux", 20) + "ing"
	before := stemCount.Load()
	if got := stem(short); got != stem(short) || got == "" {
		t.Fatalf("stem(%q) = %q", short, got)
	}
	if _, ok := stemCache.Load(short); !ok {
		t.Errorf("%q was not kept", short)
	}
	if got := stem(long); !strings.HasPrefix(got, "quux") {
		t.Fatalf("stem of a long word = %q", got)
	}
	if _, ok := stemCache.Load(long); ok {
		t.Errorf("a %d-byte word was kept; the limit is %d", len(long), maxStemLen)
	}
	if n := stemCount.Load() - before; n < 1 {
		t.Errorf("the count grew by %d after keeping a new word", n)
	}
}

// TestStemsMatchSnowball holds the Porter2 stemmer of internal/stem, which stems the index, to
// the Snowball library the index was stemmed with before, on every word
// analysis meets in the shared catalog, the dev queries and the ToolRet
// set: each part of an identifier, each joined identifier and each
// abbreviation's expansion, from every string and key of those files.
// These are more words than reach the stemmer, which only sees words of
// three or more lower-case letters; those are counted apart.
func TestStemsMatchSnowball(t *testing.T) {
	t.Parallel()
	paths := []string{
		sharedtest.CatalogPath(t),
		sharedtest.QueriesPath(t),
		sharedtest.ToolRetPath(t, "catalog.json"),
		sharedtest.ToolRetPath(t, "queries.jsonl"),
		sharedtest.ToolRetPath(t, "queries_inst.jsonl"),
	}
	seen := map[string]bool{}
	add := func(w string) { seen[w] = true }
	for _, p := range paths {
		if err := eachJSONString(p, func(text string) { analysedWords(text, add) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range synonymGroups {
		for _, w := range g {
			analysedWords(w, add)
		}
	}
	stemmed := 0
	for w := range seen {
		if len(w) > 2 && isAlpha(w) {
			stemmed++
		}
		if got, want := porter2.English(w), english.Stem(w, false); got != want {
			t.Errorf("English(%q) = %q, the library gives %q", w, got, want)
		}
	}
	t.Logf("compared %d distinct words, %d of them of three or more lower-case letters", len(seen), stemmed)
	if stemmed < 1000 {
		t.Errorf("only %d words to stem in the shared files; are they complete?", stemmed)
	}
}

// analysedWords calls add with the words analysis could stem in text,
// split as analyzeWith splits them.
func analysedWords(text string, add func(string)) {
	for i := wordStart(text, 0); i < len(text); {
		j := wordEnd(text, i)
		parts := splitIdentifier(text[i:j], nil)
		i = wordStart(text, j)
		for _, p := range parts {
			add(p)
			for _, e := range abbreviations[p] {
				add(e)
			}
		}
		if len(parts) > 1 {
			add(strings.Join(parts, ""))
		}
	}
}

// eachJSONString calls f with every string and object key in the JSON
// file at path, which holds one value or one value a line.
func eachJSONString(path string, f func(string)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	dec := json.NewDecoder(bufio.NewReader(file))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if s, ok := tok.(string); ok {
			f(s)
		}
	}
}
