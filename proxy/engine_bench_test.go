package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchTools returns n deferred MCP tools of about size bytes each.
func benchTools(n, size int) ([]json.RawMessage, []toolInfo) {
	words := []string{"archive", "billing", "calendar", "deploy", "email", "forecast", "graph", "invoice", "ledger", "metric"}
	tools := make([]json.RawMessage, n)
	info := make([]toolInfo, n)
	var b strings.Builder
	for i := range tools {
		b.Reset()
		fmt.Fprintf(&b, "Tool %d: ", i)
		for j := 0; b.Len() < size-160; j++ {
			fmt.Fprintf(&b, "%s%d ", words[(i*7+j*3)%len(words)], (i+j)%89)
		}
		name := fmt.Sprintf("mcp__srv%d__tool_%d", i%16, i)
		tools[i] = json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"defer_loading":true}`, name, b.String()))
		info[i] = toolInfo{Name: name, DeferLoading: true}
	}
	return tools, info
}

// BenchmarkBuildEngine measures what one distinct tools array costs the
// proxy: the index of its deferred tools (ns per build, bytes allocated,
// and ns per byte of definitions, flat from 100 to 2,000 tools).
func BenchmarkBuildEngine(b *testing.B) {
	for _, bc := range []struct{ n, size int }{{100, 2048}, {2000, 512}, {2000, 2048}} {
		b.Run(fmt.Sprintf("%d×%dB", bc.n, bc.size), func(b *testing.B) {
			tools, info := benchTools(bc.n, bc.size)
			_, size := deferredSize(tools, info)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := buildEngine(tools, info); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/byte")
		})
	}
}
