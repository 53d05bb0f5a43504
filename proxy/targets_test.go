package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/proxy"
)

// streamUpstream streams n bytes of text_delta events from one reused
// buffer, so that its own memory stays flat.
func streamUpstream(t testing.TB, n int) string {
	return newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		text := strings.Repeat("a", 32<<10)
		ev := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n")
		for sent := 0; sent < n; sent += len(ev) {
			if _, err := w.Write(ev); err != nil {
				return
			}
		}
	})
}

// TestPassthroughMemoryFlat streams 50 MB through passthrough, reading it
// incrementally, and checks that the heap does not grow with the body.
func TestPassthroughMemoryFlat(t *testing.T) {
	const total = 50 << 20
	const bound = 16 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	_, url := startProxy(t, proxy.Config{Upstream: streamUpstream(t, total), Mode: proxy.ModePassthrough})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	buf := make([]byte, 64<<10)
	read, next := 0, 0
	for {
		n, err := resp.Body.Read(buf)
		read += n
		if read >= next {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			next += 5 << 20
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", read, err)
		}
	}
	if read < total {
		t.Fatalf("read %d bytes, want %d", read, total)
	}
	growth := int64(peak) - int64(base)
	t.Logf("streamed %d MB; heap %d KB before, peak %d KB (growth %d KB, bound %d KB)", read>>20, base>>10, peak>>10, growth>>10, bound>>10)
	if growth > bound {
		t.Fatalf("heap grew by %d KB streaming %d MB: the body is buffered", growth>>10, read>>20)
	}
}

// latencyBody is a request the size of a Claude Code turn with tool
// search (about 12 KB).
var latencyBody = []byte(`{"model":"m","max_tokens":512,"stream":false,"tools":[` + strings.Repeat(bashTool+",", 40) + bashTool + `],"messages":[{"role":"user","content":"hi"}]}`)

const latencyAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`

func latencyUpstream(t testing.TB) string {
	return newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, latencyAnswer)
	})
}

func roundTrip(ctx context.Context, client *http.Client, url string) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", bytes.NewReader(latencyBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("x-api-key", "sk-test-secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), err
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkPassthroughLatency measures a request straight to a stand-in
// upstream and the same request through the proxy in passthrough, side by
// side; it reports the median of each (p50-µs).
func BenchmarkPassthroughLatency(b *testing.B) {
	up := latencyUpstream(b)
	_, via := startProxy(b, proxy.Config{Upstream: up, Mode: proxy.ModePassthrough, Logger: quietLogger()})
	for _, tc := range []struct{ name, url string }{{"direct", up}, {"proxy", via}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			client := &http.Client{}
			var ds []time.Duration
			for b.Loop() {
				d, err := roundTrip(ctx, client, tc.url)
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, d)
			}
			b.ReportMetric(float64(median(ds).Microseconds()), "p50-µs")
		})
	}
}

// TestPassthroughAddedLatency interleaves direct and proxied requests and
// reports the added median latency. The bound checked is loose (the race
// detector and a loaded CI machine slow everything); the benchmark gives
// the figure.
func TestPassthroughAddedLatency(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	up := latencyUpstream(t)
	_, via := startProxy(t, proxy.Config{Upstream: up, Mode: proxy.ModePassthrough, Logger: quietLogger()})
	client := &http.Client{}
	var direct, proxied []time.Duration
	for range 300 {
		d, err := roundTrip(ctx, client, up)
		if err != nil {
			t.Fatal(err)
		}
		p, err := roundTrip(ctx, client, via)
		if err != nil {
			t.Fatal(err)
		}
		direct, proxied = append(direct, d), append(proxied, p)
	}
	added := median(proxied) - median(direct)
	t.Logf("median direct %v, through the proxy %v: added %v", median(direct), median(proxied), added)
	if added > 10*time.Millisecond {
		t.Fatalf("the proxy adds %v per request", added)
	}
}
