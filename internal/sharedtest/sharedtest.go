// Package sharedtest finds the real catalog and query set that live in a
// folder named shared beside the repository, for tests and benchmarks that
// measure on them. Nothing of that folder is copied into the repository;
// when it is absent the caller's test is skipped with a message.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Dir returns the shared folder beside the repository root (the folder
// holding go.mod, found upward from the working directory), or "" when
// there is none.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(dir, "..", "shared")
			if _, err := os.Stat(shared); err == nil {
				return shared
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// CatalogPath returns the real catalog's path, $TOOLSEARCH_CATALOG when set,
// or skips the test.
func CatalogPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TOOLSEARCH_CATALOG"); p != "" {
		return p
	}
	return file(t, "catalog", "catalog.json")
}

// Catalog loads the real catalog, or skips the test.
func Catalog(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.LoadFile(CatalogPath(t))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// QueriesPath returns the dev query set's path, or skips the test.
func QueriesPath(t testing.TB) string {
	t.Helper()
	return file(t, "eval", "dev.jsonl")
}

func file(t testing.TB, elem ...string) string {
	t.Helper()
	dir := Dir()
	if dir == "" {
		t.Skip("the shared folder beside the repository (../shared) is absent; set TOOLSEARCH_CATALOG to use another catalog")
	}
	p := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent: %v", p, err)
	}
	return p
}

// ToolRetPath returns the path of a file of the ToolRet set converted to
// this project's formats (catalog.json, queries.jsonl, queries_inst.jsonl),
// or skips the test.
func ToolRetPath(t testing.TB, name string) string {
	t.Helper()
	return file(t, "eval", "external", "toolret", name)
}

// HintsPath returns the path of the shared catalog's hints file, or skips
// the test.
func HintsPath(t testing.TB) string {
	t.Helper()
	return file(t, "catalog", "hints.jsonl")
}
