// Package bench compares toolsearch with bleve (scorch backend, BM25
// scoring) on the same documents and queries. It is a separate Go module so
// that the main module never depends on bleve.
//
// # Data
//
// The real catalog and the query set are read at run time from the shared
// folder beside the repository (../shared relative to the repository root,
// or the folder named by $TOOLSEARCH_SHARED): core/catalog/catalog.json and
// eval/dev.jsonl. Nothing of them is copied into the repository; without
// them the benchmarks and tests skip.
//
// # Sizes
//
// "real" is the catalog as it is (3,601 tools). "10k" and "100k" grow it to
// exactly 10,000 and 100,000 tools with perturbed copies, see Grow.
//
// # What each engine indexes
//
// Both engines index, per tool: its name, its server (key, title, package),
// its title, search hint and operator keywords, its description, and its
// parameter names and descriptions. toolsearch does this itself in
// search.Build, from the catalog snapshot. bleve gets one document per tool
// made from the same snapshot inside the timed build (see BleveDoc): the
// five texts joined in one field ("bleve") or as five fields
// ("bleve-fields"), analysed with bleve's "en" analyzer (see Bleve).
package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Size is one corpus size a benchmark runs at.
type Size struct {
	Name  string // "real", "10k", "100k"
	Tools int    // 0 for the real catalog as it is
}

// Sizes are the corpus sizes of the benchmarks, smallest first.
var Sizes = []Size{{"real", 0}, {"10k", 10_000}, {"100k", 100_000}}

// SharedDir returns the shared folder: $TOOLSEARCH_SHARED, or ../shared
// relative to the repository root (the parent of this module's folder, so
// ../../shared from here, where go test runs).
func SharedDir() string {
	if d := os.Getenv("TOOLSEARCH_SHARED"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared")
}

// CatalogPath and QueriesPath are where the real catalog and the queries
// are read from.
func CatalogPath() string { return filepath.Join(SharedDir(), "catalog", "catalog.json") }

// QueriesPath is the path of the dev query set.
func QueriesPath() string { return filepath.Join(SharedDir(), "eval", "dev.jsonl") }

// ErrNoData is returned, wrapped, when the shared catalog or queries are not
// there; benchmarks and tests skip on it.
var ErrNoData = fmt.Errorf("shared benchmark data not found (want %s and %s; set TOOLSEARCH_SHARED to the shared folder)",
	filepath.Join("<shared>", "catalog", "catalog.json"), filepath.Join("<shared>", "eval", "dev.jsonl"))

// LoadReal loads the real catalog.
func LoadReal() (*catalog.Snapshot, error) {
	p := CatalogPath()
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoData, err)
	}
	return catalog.LoadFile(p)
}

// Query is one query of the dev set.
type Query struct {
	Text string
	Gold []string // tool IDs that answer it, "server/name"
}

// LoadQueries reads the dev query set.
func LoadQueries() ([]Query, error) {
	p := QueriesPath()
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoData, err)
	}
	defer f.Close()
	var out []Query
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q struct {
			Query string   `json:"query"`
			Gold  []string `json:"gold"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", p, line, err)
		}
		if strings.TrimSpace(q.Query) != "" {
			out = append(out, Query{Text: q.Query, Gold: q.Gold})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", p)
	}
	return out, nil
}

// Grow returns a snapshot of exactly n tools made from base (base itself
// when n <= its size). Replica 0 is base unchanged. Replicas 1, 2, ... copy
// base's servers in key order until n tools are reached (the last server
// copied may be cut short). In replica r:
//
//   - the server key gets the suffix "-r<r>" ("github" → "github-r7"); its
//     title, package and keywords are kept;
//   - each tool name gets the suffix "_r<r>" ("create_issue" →
//     "create_issue_r7"), so names stay unique and exact-name lookups of the
//     original name still find one tool;
//   - each description is perturbed by a math/rand PCG generator seeded
//     with (seed, r), used in a fixed order: every word is dropped with
//     probability 1/8, then a few random pairs of adjacent words (one per
//     eight words, at least one) are swapped. So copies are near, not exact,
//     duplicates: term frequencies and field lengths differ, as they do
//     between real servers that wrap the same product.
//
// Title, search hint, input schema (so parameters), annotations and _meta
// are shared with the original tool; Raw is left empty. The result is the
// same for the same base, n and seed.
func Grow(base *catalog.Snapshot, n int, seed uint64) (*catalog.Snapshot, error) {
	have := len(base.Tools())
	if n <= have || have == 0 {
		return base, nil
	}
	servers := append([]*catalog.Server(nil), base.Servers()...)
	for r := 1; have < n; r++ {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		rs := "r" + strconv.Itoa(r)
		for _, s := range base.Servers() {
			if have >= n {
				break
			}
			ns := &catalog.Server{
				Key: s.Key + "-" + rs, Title: s.Title, Package: s.Package, Version: s.Version,
				Keywords: s.Keywords, AlwaysLoad: s.AlwaysLoad,
			}
			for _, t := range s.Tools {
				if have >= n {
					break
				}
				ns.Tools = append(ns.Tools, &catalog.Tool{
					Server:       ns.Key,
					Name:         t.Name + "_" + rs,
					Title:        t.Title,
					Description:  perturb(t.Description, rng),
					InputSchema:  t.InputSchema,
					OutputSchema: t.OutputSchema,
					Annotations:  t.Annotations,
					Meta:         t.Meta,
					Keywords:     t.Keywords,
					AlwaysLoad:   t.AlwaysLoad,
					SearchHint:   t.SearchHint,
				})
				have++
			}
			if len(ns.Tools) > 0 {
				servers = append(servers, ns)
			}
		}
	}
	return catalog.NewSnapshot(servers...)
}

// perturb drops about one word in eight of text and swaps a few adjacent
// pairs, as Grow describes.
func perturb(text string, rng *rand.Rand) string {
	ws := strings.Fields(text)
	if len(ws) == 0 {
		return text
	}
	kept := ws[:0]
	for _, w := range ws {
		if rng.IntN(8) != 0 {
			kept = append(kept, w)
		}
	}
	if len(kept) >= 2 {
		for range max(1, len(kept)/8) {
			i := rng.IntN(len(kept) - 1)
			kept[i], kept[i+1] = kept[i+1], kept[i]
		}
	}
	return strings.Join(kept, " ")
}

// Corpus is one benchmark corpus.
type Corpus struct {
	Size    Size
	Snap    *catalog.Snapshot
	Queries []Query
}

// growSeed seeds Grow for every corpus, so all runs see the same documents.
const growSeed = 20240601

// Load returns the corpus of the given size.
func Load(sz Size) (*Corpus, error) {
	real, err := LoadReal()
	if err != nil {
		return nil, err
	}
	qs, err := LoadQueries()
	if err != nil {
		return nil, err
	}
	snap, err := Grow(real, sz.Tools, growSeed)
	if err != nil {
		return nil, err
	}
	// Both engines read each tool's parameters. Read them once here, so
	// that where the catalog caches them neither engine's timed build pays
	// for parsing the schemas, whichever engine runs first.
	for _, t := range snap.Tools() {
		_ = t.Params()
	}
	return &Corpus{Size: sz, Snap: snap, Queries: qs}, nil
}
