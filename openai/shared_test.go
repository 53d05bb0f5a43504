package openai_test

import (
	"os"
	"testing"

	"github.com/toolsearch/toolsearch/catalog"
)

// sharedCatalog loads ../shared/catalog/catalog.json (or $TOOLSEARCH_CATALOG)
// or skips the test.
func sharedCatalog(t testing.TB) *catalog.Snapshot {
	t.Helper()
	path := os.Getenv("TOOLSEARCH_CATALOG")
	if path == "" {
		for _, p := range []string{"../../shared/catalog/catalog.json", "../shared/catalog/catalog.json", "/work/shared/catalog/catalog.json"} {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Skip("the shared catalog (../shared/catalog/catalog.json) is absent; set TOOLSEARCH_CATALOG to use another")
	}
	snap, err := catalog.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
