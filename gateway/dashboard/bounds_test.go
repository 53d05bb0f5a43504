package dashboard_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

// TestFeedKeepsBoundedClientText is an attack: a local client sends
// searches of nearly the whole body limit and calls a tool whose name is
// a megabyte. The dashboard keeps each client text cut to its bound
// (valid UTF-8, marked as cut), so /ui/api/state stays small and the
// gateway's heap does not grow by what was sent. Not parallel: it reads
// the heap. .ci/run runs it at full size without -race.
func TestFeedKeepsBoundedClientText(t *testing.T) {
	r := newRig(t, rigOptions{})
	cs := r.client(t, strings.Repeat("c", 4096)) // a client name far past its bound
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A 2-byte rune at every other byte: a cut at an odd offset would
	// split one. Under -race, 4 searches instead of 12 (each costs seconds
	// of JSON there); the heap is measured at full size only.
	const querySize = 3_900_000
	searches := 12
	if raceEnabled {
		searches = 4
	}
	huge := strings.Repeat("é", querySize/2)
	callName := strings.Repeat("x", 1<<20)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	requests := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"many small queries", "search_tools", map[string]any{"queries": strings.Split(strings.Repeat("q,", 100_000), ",")}},
		{"a 1 MB tool name through call_tool", "call_tool", map[string]any{"name": callName}},
		{"a 1 MB tool name called directly", callName, map[string]any{}},
	}
	for i := range searches {
		args := map[string]any{"query": huge}
		if i%2 == 1 {
			args = map[string]any{"queries": []string{"note", huge[:querySize/2], huge[:querySize/2-2]}}
		}
		requests = append(requests, struct {
			name string
			tool string
			args map[string]any
		}{"a search of 3.9 MB", "search_tools", args})
	}
	for _, rq := range requests {
		// Refused or answered, it is told to the feed; only a broken
		// connection fails the test.
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: rq.tool, Arguments: rq.args}); err != nil && ctx.Err() != nil {
			t.Fatalf("%s: %v", rq.name, err)
		}
	}
	body := ""
	eventually(t, "the dashboard shows the searches and calls", 10*time.Second, func() bool {
		_, _, body = r.get(t, "/ui/api/state", nil)
		var st dashboard.State
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("/ui/api/state (%d bytes read, at most 8 MiB): %v", len(body), err)
		}
		return len(st.Searches) == searches+1
	})
	grown := int64(heap()) - int64(before)
	t.Logf("/ui/api/state: %d bytes; heap grew by %d KiB after %d requests of up to %d bytes", len(body), grown>>10, searches, querySize)

	const maxState = 512 << 10
	if len(body) > maxState {
		t.Errorf("/ui/api/state is %d bytes, want at most %d", len(body), maxState)
	}
	if !raceEnabled && grown > 32<<20 {
		t.Errorf("the heap grew by %d MiB, want at most 32 (the texts sent were %d MB)", grown>>20, searches*querySize>>20)
	}
	st := r.state(t)
	bounded := func(what, s string, n int) {
		t.Helper()
		if len(s) > n+len("… (18446744073709551615 bytes)") {
			t.Errorf("%s is %d bytes, want at most %d and the mark of a cut", what, len(s), n)
		}
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8", what)
		}
	}
	sawCut := false
	for _, s := range st.Searches {
		bounded("a search's query", s.Query, gateway.MaxFeedQuery)
		bounded("a search's client", s.Client, gateway.MaxFeedName)
		bounded("a search's error", s.Error, gateway.MaxFeedQuery)
		if len(s.Queries) > gateway.MaxFeedQueries+1 {
			t.Errorf("a search keeps %d queries, want at most %d and one saying how many were left out", len(s.Queries), gateway.MaxFeedQueries)
		}
		for _, q := range s.Queries {
			bounded("a search's query of queries", q, gateway.MaxFeedQuery)
		}
		if strings.HasSuffix(s.Query, " bytes)") {
			sawCut = true
		}
	}
	if !sawCut {
		t.Error("no query shown is marked as cut")
	}
	calls := st.Calls
	for _, s := range st.Searches {
		calls = append(calls, s.Called...)
	}
	if len(calls) == 0 {
		t.Fatal("the dashboard shows no call")
	}
	for _, c := range calls {
		bounded("a call's tool name", c.Tool, gateway.MaxFeedName)
		if !strings.HasPrefix(c.Tool, "xxxx") && !strings.HasPrefix(c.Tool, "call_tool") {
			t.Errorf("a call's tool %q: want the start of the name called", c.Tool)
		}
	}
	for _, m := range st.Misses {
		bounded("a miss's query", m.Query, (gateway.MaxFeedQueries+1)*(gateway.MaxFeedQuery+40))
	}
	for _, s := range st.Sessions {
		bounded("a session's client", s.Client, gateway.MaxFeedName)
	}
}
