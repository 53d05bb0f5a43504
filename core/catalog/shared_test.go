package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sharedCatalog is the project's collected catalog, relative to this
// package's directory in a checkout at /work/main (so /work/shared/...). It
// is not part of the repository; tests that need it skip without it.
var sharedCatalog = filepath.Join("..", "..", "..", "shared", "catalog", "catalog.json")

func TestSharedCatalog(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sharedCatalog); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("skipping: the shared catalog %s is not there (it lives outside the repository, beside a checkout at /work/main)", sharedCatalog)
	} else if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := LoadFile(sharedCatalog)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	t.Logf("loaded %s in %v", sharedCatalog, time.Since(start).Round(time.Millisecond))
	const wantServers, wantTools = 113, 3601
	if got := len(s.Servers()); got != wantServers {
		t.Errorf("%d servers, want %d", got, wantServers)
	}
	if got := len(s.Tools()); got != wantTools {
		t.Errorf("%d tools, want %d", got, wantTools)
	}
	if err := checkConsistent(s); err != nil {
		t.Error(err)
	}
	for _, tool := range s.Tools() {
		if tool.Name == "" || len(tool.Raw) == 0 {
			t.Errorf("%s: empty name or definition", tool.ID())
		}
	}

	// Counting the tokens of every definition takes under a second, but
	// several seconds under the race detector: -short skips it then.
	if testing.Short() && raceEnabled {
		t.Skip("skipping the token count of the shared catalog in -short mode under -race")
	}
	start = time.Now()
	total := 0
	for _, tool := range s.Tools() {
		total += tool.Tokens()
	}
	t.Logf("%d o200k tokens in %v", total, time.Since(start).Round(time.Millisecond))
	if total < 1_000_000 || total > 1_100_000 {
		t.Errorf("the tool definitions total %d tokens, want between 1.0M and 1.1M", total)
	}
}
