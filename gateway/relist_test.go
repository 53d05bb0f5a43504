package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSearchWaitsForTheClientsNewList checks that in dynamic exposure a
// search that adds tools answers after the client has listed them (when
// it acts on list_changed), and that a client which does not list again
// is waited for once, up to relistWait, and not after.
func TestSearchWaitsForTheClientsNewList(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	search := func(cs *mcp.ClientSession, query string) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": query}})
		if err != nil || res.IsError {
			t.Fatalf("search %q: %v %v", query, err, res)
		}
		return time.Since(start)
	}
	t.Run("a client that lists again", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var listed []time.Time
		var cs *mcp.ClientSession
		ready := make(chan struct{})
		cs = connectAs(t, g, "dynamic", "relisting-client", &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				go func() {
					<-ready
					if _, err := cs.ListTools(context.Background(), nil); err == nil {
						mu.Lock()
						listed = append(listed, time.Now())
						mu.Unlock()
					}
				}()
			}})
		close(ready)
		search(cs, "select:echo__echo")
		answered := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if len(listed) == 0 || listed[0].After(answered) {
			t.Errorf("the search answered at %v, before the client's new list (%v)", answered, listed)
		}
	})
	t.Run("a client that does not", func(t *testing.T) {
		t.Parallel()
		cs := connectAs(t, g, "dynamic", "deaf-client", nil)
		if took := search(cs, "select:echo__echo"); took < relistWait-100*time.Millisecond || took > relistWait+5*time.Second {
			t.Errorf("the first search took %v, want about %v (waiting for a new list that never comes)", took, relistWait)
		}
		if took := search(cs, "select:echo__deploy"); took > relistWait/2 {
			t.Errorf("the second search took %v: it waited again for a client that does not list", took)
		}
		// Nor does a later session of a client of the same name wait.
		again := connectAs(t, g, "dynamic", "deaf-client", nil)
		if took := search(again, "select:echo__echo"); took > relistWait/2 {
			t.Errorf("a new session's search took %v: it waited for a client known not to list", took)
		}
	})
}
