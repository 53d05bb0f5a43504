package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

const bm25Tool = `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`

// largeToolList is a server-side search request whose n deferred tools of
// about size bytes each differ from those of every other seed.
func largeToolList(t testing.TB, seed, n, size int) []byte {
	words := []string{"archive", "billing", "calendar", "deploy", "email", "forecast", "graph", "invoice", "ledger", "metric"}
	tools := make([]json.RawMessage, 0, n+1)
	tools = append(tools, json.RawMessage(bm25Tool))
	var b strings.Builder
	for i := range n {
		b.Reset()
		fmt.Fprintf(&b, "Tool %d of list %d: ", i, seed)
		for j := 0; b.Len() < size-160; j++ {
			fmt.Fprintf(&b, "%s%d ", words[(i*7+j*3+seed)%len(words)], (i+j*seed)%89)
		}
		tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":"mcp__srv%d__tool_%d_%d","description":%q,"input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"defer_loading":true}`,
			i%16, seed, i, b.String())))
	}
	return mustMarshal(t, map[string]any{
		"model": "claude-test", "max_tokens": 64, "tools": tools,
		"messages": []json.RawMessage{json.RawMessage(`{"role":"user","content":"send the invoice by email"}`)},
	})
}

// TestAttackManyLargeToolLists: clients sending request after request,
// each with a different list of 2,000 deferred tools of 2 KB, make the
// proxy build an index per list. The cache of indexes stays within its
// bound (32 indexes, 16 MiB of definitions: about 64 MiB of heap), so the
// heap after GC grows by less than 128 MiB (the cache and what the proxy and
// the stand-in hold besides) however many lists go by (it
// grew by some 15 MB per list when only the count was bounded); and a
// client with a small list of its own is answered within a second (p99)
// all along.
func TestAttackManyLargeToolLists(t *testing.T) {
	// Not parallel: it measures the heap.
	lists, attackers := 16, 2
	if raceEnabled {
		lists = 6
	}
	const heapBound = 128 << 20
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true}})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	small := mustMarshal(t, map[string]any{
		"model": "claude-test", "max_tokens": 64,
		"tools":    []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(bm25Tool), json.RawMessage(deferredTools[0]), json.RawMessage(deferredTools[1])},
		"messages": []json.RawMessage{json.RawMessage(`{"role":"user","content":"post hello to the slack channel"}`)},
	})
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc

	done := make(chan struct{})
	var latencies []time.Duration
	var smallErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			status, _, out := postJSON(ctx, t, url+"/v1/messages", nil, small)
			latencies = append(latencies, time.Since(start))
			if status != http.StatusOK {
				smallErr = fmt.Errorf("the small client got %d: %.300s", status, out)
				return
			}
		}
	}()
	var attack sync.WaitGroup
	errs := make(chan error, lists)
	for a := range attackers {
		attack.Add(1)
		go func() {
			defer attack.Done()
			for seed := a; seed < lists; seed += attackers {
				status, _, out := postJSON(ctx, t, url+"/v1/messages", nil, largeToolList(t, seed, 2000, 2048))
				if status != http.StatusOK {
					errs <- fmt.Errorf("list %d: status %d: %.300s", seed, status, out)
				}
			}
		}()
	}
	attack.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if smallErr != nil {
		t.Fatal(smallErr)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	growth := int64(ms.HeapAlloc) - int64(base)
	slices.Sort(latencies)
	if len(latencies) < 10 {
		t.Fatalf("the small client made %d requests during the attack, want at least 10", len(latencies))
	}
	p99 := latencies[len(latencies)*99/100]
	t.Logf("%d lists of 2,000 tools × 2 KB; heap growth after GC %d MiB (bound %d MiB); small client: %d requests, p50 %v, p99 %v, max %v",
		lists, growth>>20, heapBound>>20, len(latencies), latencies[len(latencies)/2], p99, latencies[len(latencies)-1])
	if growth > heapBound {
		t.Errorf("the heap grew by %d MiB after %d distinct lists, want under %d MiB: the cache of indexes is not bounded by size", growth>>20, lists, heapBound>>20)
	}
	// The race detector slows every goroutine several times over: there
	// the latency is logged, not held to the bound.
	if p99 > time.Second && !raceEnabled {
		t.Errorf("the small client's p99 was %v during the attack, want at most 1s", p99)
	}
}

// TestAttackDeferredToolBounds: a request with more deferred tools, or
// more bytes of them, than the proxy indexes is refused with a 400 naming
// the bound, before anything is indexed, on both routes.
func TestAttackDeferredToolBounds(t *testing.T) {
	t.Parallel()
	tiny := func(n, descSize int) []byte {
		tools := []json.RawMessage{json.RawMessage(bm25Tool)}
		desc := strings.Repeat("d", descSize)
		for i := range n {
			tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":"t%d","description":"%s","input_schema":{"type":"object"},"defer_loading":true}`, i, desc)))
		}
		return mustMarshal(t, map[string]any{"model": "claude-test", "max_tokens": 64, "tools": tools,
			"messages": []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`)}})
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"one tool more than the bound", tiny(proxy.MaxDeferredTools+1, 0), fmt.Sprintf("%d deferred tools, the proxy indexes at most %d", proxy.MaxDeferredTools+1, proxy.MaxDeferredTools)},
		{"definitions past the byte bound", tiny(2100, 8<<10), fmt.Sprintf("bytes of deferred tool definitions, the proxy indexes at most %d", proxy.MaxDeferredBytes)},
	}
	up := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: true}})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	for _, tt := range tests {
		for _, route := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			t.Run(tt.name+" "+route, func(t *testing.T) {
				t.Parallel()
				// 17 MiB bodies take long to read under the race detector.
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				status, _, out := postJSON(ctx, t, url+route, nil, tt.body)
				if status != http.StatusBadRequest || !strings.Contains(string(out), "invalid_request_error") || !strings.Contains(string(out), tt.want) {
					t.Fatalf("status %d: %.300s; want 400 invalid_request_error naming %q", status, out, tt.want)
				}
			})
		}
	}
	t.Cleanup(func() {
		for _, r := range up.Requests() {
			t.Errorf("a refused request went upstream: %s", r.URI)
		}
	})
}
