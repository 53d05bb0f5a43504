//go:build unix

package gateway

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestStateFilesThatAreNotFiles: a cached manifest that is a FIFO and a
// saved index that is /dev/zero do not hang or fill the gateway's start:
// each is refused with a warning naming it, and the gateway starts as if
// there were no cache.
func TestStateFilesThatAreNotFiles(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(manifestPath(state, "echo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", indexPath(state)); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"stateDir": state}))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	done := make(chan struct{})
	var g *Gateway
	go func() {
		defer close(done)
		g, err = New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's start hangs on a FIFO or /dev/zero in its state directory")
	}
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "named pipe") || !strings.Contains(out, "character device") {
		t.Errorf("the log does not say what was wrong with the state files:\n%s", out)
	}
	if n := len(g.Snapshot().Tools()); n == 0 {
		t.Errorf("no built-in tools: the gateway did not start normally")
	}
}
