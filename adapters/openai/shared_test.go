package openai_test

import (
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// sharedCatalog loads the real catalog (or $TOOLSEARCH_CATALOG), or skips.
func sharedCatalog(t testing.TB) *catalog.Snapshot { return sharedtest.Catalog(t) }
