package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFile: the file is replaced whole, its folder made, no
// temporary file left behind, and a path that cannot be written is an
// error naming it.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "state.json")
	for _, data := range []string{`{"a":1}`, `{"b":2}`} {
		if err := WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != data {
			t.Fatalf("read back %q, %v; want %q", got, err, data)
		}
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only the file", len(entries))
	}
	if err := WriteFile(filepath.Join(p, "under-a-file"), []byte("x"), 0o644); err == nil {
		t.Error("writing under a regular file succeeded")
	}
}
