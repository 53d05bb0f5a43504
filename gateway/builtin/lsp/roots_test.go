package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocationsStayInRoots: a language server may name any file; the lines
// shown with its locations are read through the roots, so a link inside a
// root that leads out shows no line from outside, while a file inside does.
func TestLocationsStayInRoots(t *testing.T) {
	t.Parallel()
	dir, roots := writeTree(t, map[string]string{"a.go": "package a // inside\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.go"), []byte("TOPSECRET line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	at := func(p string) map[string]any {
		return map[string]any{"uri": fileURI(p), "range": map[string]any{"start": map[string]any{"line": 0, "character": 0}}}
	}
	raw, err := json.Marshal([]any{at(filepath.Join(dir, "a.go")), at(filepath.Join(dir, "out", "secret.go"))})
	if err != nil {
		t.Fatal(err)
	}
	r := &render{roots: roots, files: map[string][]string{}}
	got, err := r.locations(raw, "definition")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "TOPSECRET") {
		t.Errorf("a line from outside the roots was shown:\n%s", got)
	}
	if !strings.Contains(got, "a.go:1:1: package a // inside") || !strings.Contains(got, "out/secret.go:1:1") {
		t.Errorf("locations:\n%s", got)
	}
}
