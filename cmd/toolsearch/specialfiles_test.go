//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesRefused: a FIFO or a device named as the config, a
// catalog, a query set or a token file gets one clear error and exit 2 at
// once; nothing blocks on the FIFO or reads /dev/zero for ever.
func TestSpecialFilesRefused(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "ts.json", `{"mcpServers": {}}`)
	client := writeFile(t, "client.json", `{"mcpServers": {"a": {"command": "a-mcp"}}}`)
	for _, special := range []string{fifo, "/dev/zero"} {
		for _, args := range [][]string{
			{"serve", "-c", special},
			{"status", "-c", special},
			{"search", "--catalog", special, "x"},
			{"eval", "--catalog", special, "--queries", cfg},
			{"eval", "--queries", special},
			{"serve", "-c", cfg, "--http", "127.0.0.1:0", "--auth-token-file", special},
			{"proxy", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0", "--auth-token-file", special},
			{"import", "--from", special, "-o", filepath.Join(t.TempDir(), "out.json")},
			{"import", "--from", client, "-o", special, "--merge"},
		} {
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, _, stderr = runCLI(t, args...)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%v hangs", args)
			}
			if code != exitUsage || !strings.Contains(stderr, special) ||
				!(strings.Contains(stderr, "named pipe") || strings.Contains(stderr, "character device")) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the file and what it is", args, code, stderr)
			}
		}
	}
}
