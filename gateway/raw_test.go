package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/gateway/wire"
)

// rawTool is a definition whose bytes the gateway must keep: keys in an
// unusual order (name not first, the schema's type last), no white space,
// and properties whose order a reader may rely on. Any re-encoding by the
// SDK would reorder it.
const rawTool = `{"inputSchema":{"required":["zeta"],"properties":{"zeta":{"type":"string","description":"first"},"alpha":{"type":"integer"}},"type":"object"},"name":"odd","_meta":{"zz":1,"aa":2},"description":"Keys in an unusual order."}`

// rawAnswer is a minimal MCP server that answers one JSON-RPC message with
// hand-written bytes; it returns nil for a notification.
func rawAnswer(msg []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || len(req.ID) == 0 {
		return nil
	}
	var result string
	switch req.Method {
	case "initialize":
		result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`, req.Params.ProtocolVersion)
	case "tools/list":
		result = `{"tools":[` + rawTool + `]}`
	case "tools/call":
		result = `{"content":[{"type":"text","text":"raw ok"}]}`
	case "ping":
		result = `{}`
	default:
		return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"method not found"}}`)
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
}

// serveRawStdio runs rawAnswer over stdin and stdout (role "raw").
func serveRawStdio() int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if out := rawAnswer(sc.Bytes()); out != nil {
			fmt.Printf("%s\n", out)
		}
	}
	return 0
}

// rawStreamable serves rawAnswer over streamable HTTP, answering each call
// as JSON or as an event stream.
func rawStreamable(sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out := rawAnswer(body)
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: 1\nevent: message\ndata: %s\n\n", out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// rawSSE serves rawAnswer over the legacy SSE transport: GET /sse is the
// event stream, POST /messages the client's messages.
func rawSSE() http.Handler {
	var mu sync.Mutex
	streams := map[chan []byte]bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
		ch := make(chan []byte, 16)
		mu.Lock()
		streams[ch] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(streams, ch)
			mu.Unlock()
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: /messages\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case out := <-ch:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", out)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /messages", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if out := rawAnswer(body); out != nil {
			mu.Lock()
			for ch := range streams {
				select {
				case ch <- out:
				default:
				}
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return mux
}

// TestRawDefinitionsEveryTransport: a tool definition reaches the catalog
// byte for byte from every kind of upstream (stdio, streamable HTTP
// answering in JSON or in events, legacy SSE), and a client of the gateway
// receives its schema unchanged.
func TestRawDefinitionsEveryTransport(t *testing.T) {
	t.Parallel()
	servers := map[string]any{
		"stdio":    roleServer(t, "raw"),
		"httpjson": map[string]any{"type": "http", "url": serveHTTP(t, rawStreamable(false)).URL},
		"httpsse":  map[string]any{"type": "http", "url": serveHTTP(t, rawStreamable(true)).URL},
		"sse":      map[string]any{"type": "sse", "url": serveHTTP(t, rawSSE()).URL + "/sse"},
	}
	g := startGateway(t, writeConfig(t, servers, nil))
	for key := range servers {
		waitState(t, g, key, 20*time.Second, StateReady)
	}
	for key := range servers {
		tool, ok := g.Snapshot().Tool(key + "/odd")
		if !ok {
			t.Errorf("%s: no tool odd", key)
			continue
		}
		if !bytes.Equal(tool.Raw, []byte(rawTool)) {
			t.Errorf("%s: the definition changed on the way in:\n got %s\nwant %s", key, tool.Raw, rawTool)
		}
	}

	// A client in full mode gets the schema unchanged, whatever the
	// transport behind it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "full", st); err != nil {
		t.Fatal(err)
	}
	tap := wire.NewTap()
	var pages []json.RawMessage
	var mu sync.Mutex
	tap.SetCapture(func(r json.RawMessage) {
		mu.Lock()
		pages = append(pages, r)
		mu.Unlock()
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw-client"}, nil).Connect(ctx, tap.Wrap(ct), legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pages) != 1 {
		t.Fatalf("captured %d tools/list pages", len(pages))
	}
	schema := `"inputSchema":{"required":["zeta"],"properties":{"zeta":{"type":"string","description":"first"},"alpha":{"type":"integer"}},"type":"object"}`
	if n := strings.Count(string(pages[0]), schema); n != len(servers) {
		t.Errorf("the schema reached the client unchanged %d times, want %d:\n%s", n, len(servers), pages[0])
	}
	for key := range servers {
		text, isErr := (&client{cs: cs}).call(t, key+"__odd", map[string]any{"zeta": "z"})
		if isErr || text != "raw ok" {
			t.Errorf("call through %s = %q, %v", key, text, isErr)
		}
	}
	// Every session lasted: none ended with its start (the SSE client's
	// event stream lives on the context it was connected with).
	for _, st := range g.Statuses() {
		if st.State != StateReady || st.Restarts != 0 {
			t.Errorf("%s: %s after %d restarts (%s)", st.Key, st.State, st.Restarts, st.Error)
		}
	}
}

// TestProgressOverHTTPUpstream: the progress a streamable HTTP upstream
// sends before a call's result reaches the client, every time (the wire
// tap in the HTTP client holds the result until it is forwarded).
func TestProgressOverHTTPUpstream(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "progress-http"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "Report four steps of progress, then finish."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 4; i++ {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
					Progress: float64(i), Total: 4, Message: fmt.Sprintf("step %d", i)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	up := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	g := startGateway(t, writeConfig(t, map[string]any{"up": map[string]any{"type": "http", "url": up.URL}}, nil))
	waitState(t, g, "up", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("full"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 10 {
		c.mu.Lock()
		c.progress = nil
		c.mu.Unlock()
		p := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
		p.SetProgressToken(fmt.Sprintf("round-%d", round))
		if _, err := c.cs.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "four progress messages", 5*time.Second, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.progress) == 4
		})
	}
}
