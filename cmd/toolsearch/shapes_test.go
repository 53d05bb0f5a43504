package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusHidesUnnamedSecrets: secrets the configuration never marked as
// secret (a key passed as a server argument, a bearer token a server
// prints on stderr as it fails) are hidden from status by their shape.
func TestStatusHidesUnnamedSecrets(t *testing.T) {
	t.Parallel()
	argKey := "sk-ant-api03-ArgKey0123456789abcdefXYZ"
	stderrTok := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJlLXZhbHVlLTEyMzQ"
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"failing": map[string]any{"command": "sh", "args": []string{"-c", `echo "login refused for Authorization: Bearer $1" >&2; exit 3`, "sh", stderrTok, "--api-key", argKey}},
		},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state"), "limits": map[string]any{"maxRestarts": 0, "startTimeout": "60s"}},
	}
	path := writeConfigJSON(t, filepath.Join(dir, "ts.json"), cfg)
	for _, args := range [][]string{
		{"status", "-c", path, "--timeout", "60s"},
		{"status", "-c", path, "--timeout", "60s", "--json"},
	} {
		var out, errb syncBuffer
		run(context.Background(), args, &out, &errb)
		all := out.String() + errb.String()
		if !strings.Contains(all, "login refused") {
			t.Fatalf("%v: the server's stderr is not shown, so the test proves nothing:\n%s", args, all)
		}
		for _, secret := range []string{argKey, stderrTok} {
			if strings.Contains(all, secret) {
				t.Errorf("%v shows %q:\n%s", args, secret, all)
			}
		}
	}
}
