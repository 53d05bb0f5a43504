package web

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pathCounter counts requests by path.
type pathCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *pathCounter) add(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[path]++
}

func (c *pathCounter) get(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[path]
}

// pageServer serves /p/N as N's text/plain page of size bytes (?size=,
// default 100 KiB), or with ?space=1 a page of that many spaces around
// one word, counting requests by path.
func pageServer(t testing.TB) (string, *pathCounter) {
	hits := &pathCounter{m: map[string]int{}}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.add(r.URL.Path)
		size := 100 << 10
		if n, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil {
			size = n
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		line := r.URL.Path + " é\n" // a non-ASCII letter, so pages are cut by characters
		b := []byte(strings.Repeat(line, size/len(line)+1)[:size])
		if r.URL.Query().Get("space") != "" {
			b = []byte(strings.Repeat(" ", size/2) + "word" + strings.Repeat(" ", size/2))
		}
		w.Write(b)
	})
	return s.URL, hits
}

// TestFetchCacheBound: pages fetched past the cache's byte bound push out
// the least recently used ones, and the bytes held never pass the bound.
func TestFetchCacheBound(t *testing.T) {
	t.Parallel()
	base, hits := pageServer(t)
	const bound = 1 << 20
	f := NewFetcher(FetchOptions{AllowPrivate: true, CacheBytes: bound, CacheEntries: 1000})
	ctx := context.Background()
	fetch := func(path string) Page {
		t.Helper()
		p, err := f.Fetch(ctx, FetchArgs{URL: base + path})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := 1; i <= 40; i++ { // 4 MB of pages
		fetch(fmt.Sprintf("/p/%d", i))
		fetch("/p/hot") // used after every other page: never the least recent
		entries, held := f.cacheUse()
		if held > bound {
			t.Fatalf("after %d pages the cache holds %d bytes in %d entries, over its bound of %d", i, held, entries, bound)
		}
		if held < int64(entries)*(100<<10) {
			t.Fatalf("the cache counts %d bytes for %d pages of 100 KiB", held, entries)
		}
	}
	if entries, _ := f.cacheUse(); entries < 5 || entries > 10 {
		t.Errorf("%d pages of 100 KiB cached under a 1 MiB bound", entries)
	}
	if n := hits.get("/p/hot"); n != 1 {
		t.Errorf("the page used most often was fetched %d times", n)
	}
	if p := fetch("/p/1"); p.Cached {
		t.Error("the least recently used page is still cached")
	}
	if p := fetch("/p/40"); !p.Cached {
		t.Error("the last page fetched is not cached")
	}
	// A page larger than the bound is not cached and does not empty the
	// cache.
	for i := 0; i < 2; i++ {
		if p := fetch(fmt.Sprintf("/p/big?size=%d", 2*bound)); p.Cached || p.Total == 0 {
			t.Errorf("fetch %d of a page over the bound: cached %v, %d characters", i, p.Cached, p.Total)
		}
	}
	if p := fetch("/p/40"); !p.Cached {
		t.Error("a page over the bound pushed out the others")
	}
	if _, held := f.cacheUse(); held > bound {
		t.Errorf("the cache holds %d bytes", held)
	}
}

// TestFetchCacheMemory: the heap held after many large fetches stays near
// the cache's bound, for pages of text and for pages of mostly space (the
// cache counts only the text left, so it must not keep the space). It
// measures the heap, so it does not run in parallel.
func TestFetchCacheMemory(t *testing.T) {
	base, _ := pageServer(t)
	const bound = 4 << 20
	for _, query := range []string{"", "&space=1"} {
		f := NewFetcher(FetchOptions{AllowPrivate: true, CacheBytes: bound})
		ctx := context.Background()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < 60; i++ { // 30 MiB
			if _, err := f.Fetch(ctx, FetchArgs{URL: fmt.Sprintf("%s/p/%d?size=%d%s", base, i, 512<<10, query)}); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("pages %q: the heap grew by %.1f MiB", query, float64(grown)/(1<<20))
		if limit := int64(bound + 12<<20); grown > limit {
			t.Errorf("pages %q: after 60 fetches of 512 KiB the heap grew by %d MiB, over %d MiB (cache bound %d MiB)", query, grown>>20, limit>>20, bound>>20)
		}
		runtime.KeepAlive(f)
	}
}

// TestFetchEndlessBody: a body that never ends is read up to MaxBytes and
// no further; the connection is closed and the server stops.
func TestFetchEndlessBody(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	done := make(chan struct{})
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	const max = 1 << 20
	f := NewFetcher(FetchOptions{AllowPrivate: true, MaxBytes: max, Timeout: 5 * time.Second})
	p, err := f.Fetch(context.Background(), FetchArgs{URL: s.URL + "/"})
	if err != nil || !p.Truncated || p.Total != max {
		t.Fatalf("page: truncated %v, %d characters, err %v", p.Truncated, p.Total, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server is still writing 5s after the fetch returned")
	}
	// What the server wrote beyond MaxBytes sat in socket buffers.
	if n := written.Load(); n > max+64<<20 {
		t.Errorf("the server wrote %d MiB", n>>20)
	}
}

// BenchmarkFetchCached reads pages of a cached 2 MiB document.
func BenchmarkFetchCached(b *testing.B) {
	base, _ := pageServer(b)
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	ctx := context.Background()
	u := fmt.Sprintf("%s/p/bench?size=%d", base, 2<<20)
	p, err := f.Fetch(ctx, FetchArgs{URL: u})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := f.Fetch(ctx, FetchArgs{URL: u, Offset: (i * 20_000) % p.Total}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDocumentPage: pages cut by character offsets match cutting the
// text's runes, for ASCII text and for text of 1- to 4-byte characters
// longer than the distance between marks.
func TestDocumentPage(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"",
		strings.Repeat("abc", 5000),
		strings.Repeat("aé日😀", 3000),
		"é" + strings.Repeat("x", 2*markEvery),
	} {
		var d document
		d.setText(text)
		runes := []rune(text)
		if d.chars != len(runes) {
			t.Fatalf("%d characters counted, want %d", d.chars, len(runes))
		}
		for _, off := range []int{0, 1, 2, markEvery - 1, markEvery, markEvery + 1, 2*markEvery + 3, len(runes) - 1, len(runes)} {
			if off < 0 || off > len(runes) {
				continue
			}
			for _, n := range []int{0, 1, 3, markEvery + 7, 20_000} {
				want := string(runes[off:min(len(runes), off+n)])
				if got := d.page(off, n); got != want {
					t.Fatalf("page(%d, %d) of %d characters = %d bytes, want %d", off, n, len(runes), len(got), len(want))
				}
			}
		}
	}
}
