//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cluster

import (
	"context"
	"testing"

	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestIdleConnectionsTheServerClosed: connections the server closed
// while they sat in the pool (its idle timeout, CLIENT KILL) are dropped
// when next taken, not used: no command fails, and Redis is not marked
// down for them.
func TestIdleConnectionsTheServerClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, lb := open(t, srv.URL(0), "a", "idle")
	ctx := context.Background()
	for range 3 {
		if err := c.PutBlob(ctx, "index", "d", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil { // every client but this one
		t.Fatal(err)
	}
	for i := range 5 {
		if got, err := c.GetBlob(ctx, "index", "d"); err != nil || string(got) != "v" {
			t.Fatalf("read %d after the server closed the idle connections: %q, %v", i, got, err)
		}
	}
	if !c.Up() || c.stats.outages.Load() != 0 || lb.count("Redis is unreachable") != 0 {
		t.Errorf("Redis taken for down: up %v, outages %d, log:\n%s", c.Up(), c.stats.outages.Load(), lb.String())
	}
}
