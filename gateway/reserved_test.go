package gateway

import (
	"testing"

	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestReservedKey: the server key config refuses is the built-in tools'.
func TestReservedKey(t *testing.T) {
	if config.ReservedKey != builtin.Key {
		t.Fatalf("config reserves %q, the built-in tools are %q", config.ReservedKey, builtin.Key)
	}
}
