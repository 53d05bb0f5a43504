package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// BenchmarkTake measures one shared rate-bucket request (one Lua script
// call on a loopback Redis).
func BenchmarkTake(b *testing.B) {
	srv := redistest.Start(b)
	c, _ := openB(b, srv.URL(0))
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Take(ctx, "bench", 1e9, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetBlob4MiB measures reading back a 4 MiB shared value (an
// index of about 13,000 tools), checksum included.
func BenchmarkGetBlob4MiB(b *testing.B) {
	srv := redistest.Start(b)
	c, _ := openB(b, srv.URL(0))
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16)
	if err := c.PutBlob(ctx, "index", "bench", data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		got, err := c.GetBlob(ctx, "index", "bench")
		if err != nil || len(got) != len(data) {
			b.Fatal(err, len(got))
		}
	}
}

func openB(b *testing.B, url string) (*Cluster, error) {
	c, err := Open(context.Background(), config.Cluster{Redis: url, Prefix: "bench", Replica: "b", TTL: time.Hour, MaxBlobBytes: 8 << 20, Key: testKey}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c, nil
}
