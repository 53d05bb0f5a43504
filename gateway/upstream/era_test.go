package upstream

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCacheHintsFold: the hints of a list's pages fold to the smallest
// TTL, public when every page said public, private when any page did, and
// no scope when a page said nothing.
func TestCacheHintsFold(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		name  string
		pages []mcp.Cacheable
		want  ListCache
	}{
		{"two public pages", []mcp.Cacheable{{TTLMs: 8000, CacheScope: "public"}, {TTLMs: 4000, CacheScope: "public"}},
			ListCache{TTL: 4 * time.Second, Scope: "public", ListedAt: now}},
		{"one private page", []mcp.Cacheable{{TTLMs: 8000, CacheScope: "public"}, {TTLMs: 9000, CacheScope: "private"}},
			ListCache{TTL: 8 * time.Second, Scope: "private", ListedAt: now}},
		{"a page that says nothing", []mcp.Cacheable{{TTLMs: 8000, CacheScope: "public"}, {}},
			ListCache{ListedAt: now}},
		{"a negative ttl", []mcp.Cacheable{{TTLMs: -5, CacheScope: "public"}},
			ListCache{Scope: "public", ListedAt: now}},
	} {
		var h cacheHints
		for _, p := range c.pages {
			h.add(p)
		}
		if got := h.result(now); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
