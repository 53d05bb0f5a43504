package config

import (
	"strings"
	"testing"
)

// TestReservedKey: a server may not take the name of the gateway's
// built-in tools.
func TestReservedKey(t *testing.T) {
	_, err := Parse("f.json", []byte(`{"mcpServers": {"builtin": {"command": "x"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `server "builtin"`) || !strings.Contains(err.Error(), "built-in tools") {
		t.Fatalf("a server named builtin: %v", err)
	}
	if _, err := Parse("f.json", []byte(`{"mcpServers": {"builtins": {"command": "x"}}}`), nil); err != nil {
		t.Fatal(err)
	}
}
