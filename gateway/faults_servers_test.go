package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fault servers of the fault matrix (faults_matrix_test.go). Like the
// roles of main_test.go they are the test binary run again, here with
// faultRoleEnv set; init runs the role before TestMain, so that these
// servers need nothing from the shared role table.
const (
	faultRoleEnv = "TOOLSEARCH_FAULT_ROLE"
	// faultHealEnv names a file: once it exists, a role that fails at start
	// serves the echo server instead (the fault is "fixed").
	faultHealEnv = "TOOLSEARCH_FAULT_HEAL"
)

func init() {
	if role := os.Getenv(faultRoleEnv); role != "" {
		os.Exit(runFaultRole(role))
	}
}

func runFaultRole(role string) int {
	if p := os.Getenv(faultHealEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(os.Stderr, "%s: healed, serving echo\n", role)
			return serveEcho(context.Background(), false)
		}
	}
	switch role {
	case "crash-init":
		// Reads the initialize request (or server/discover, which a
		// 2026-07-28 client sends first), starts an answer, and dies.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"initialize"`)) || bytes.Contains(sc.Bytes(), []byte(`"server/discover"`)) {
				fmt.Fprintln(os.Stderr, "crash-init: dying during initialize")
				os.Stdout.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"protocolVer`)
				return 9
			}
		}
		return 0
	case "hang-init":
		fmt.Fprintln(os.Stderr, "hang-init: reading stdin and never answering")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "garbage-init":
		for i := 0; ; i++ {
			if _, err := fmt.Printf("this is not JSON-RPC, line %d\n", i); err != nil {
				return 1
			}
			time.Sleep(50 * time.Millisecond)
		}
	case "exit-init":
		fmt.Fprintln(os.Stderr, "fatal: API_TOKEN is not set")
		return 3
	case "stall":
		return serveStall()
	case "partial", "flood":
		return serveRawFault(role)
	}
	fmt.Fprintf(os.Stderr, "unknown fault role %q\n", role)
	return 2
}

// faultServer is a config entry for a fault role; heal makes its next start
// a working echo server.
func faultServer(t testing.TB, role string) (entry map[string]any, heal func()) {
	t.Helper()
	healed := t.TempDir() + "/healed"
	entry = map[string]any{"command": self(t), "env": map[string]string{faultRoleEnv: role, faultHealEnv: healed}}
	return entry, func() {
		if err := os.WriteFile(healed, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// serveStall is a Go SDK server whose stall tool never answers (it ignores
// cancellation too) and whose echo tool works.
func serveStall() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "stall", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back unchanged."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stall", Description: "Never answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "stall: called, never answering")
			select {}
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		return 1
	}
	return 0
}

// serveRawFault is a hand-written stdio server whose bytes on stdout are
// exactly what the test wants:
//
//   - partial: tool echo works; truncated answers with a JSON line cut in
//     the middle; unterminated writes half a line and no line end, then
//     goes on serving.
//   - flood: once initialized, sends log messages, progress notifications
//     for unknown tokens and tools/list_changed without pause (thousands a
//     second, as fast as the gateway reads them), and reports on stderr
//     how many it sent; tool echo works meanwhile.
func serveRawFault(kind string) int {
	var mu sync.Mutex
	write := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.WriteString(s); err != nil {
			os.Exit(1)
		}
	}
	answer := func(id json.RawMessage, result string) {
		write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n")
	}
	tools := `[{"name":"echo","description":"Echo the text back unchanged.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`
	if kind == "partial" {
		tools += `,{"name":"truncated","description":"Answer with half a JSON line.","inputSchema":{"type":"object"}}` +
			`,{"name":"unterminated","description":"Answer with half a line and no line end.","inputSchema":{"type":"object"}}`
	}
	tools += `]`
	var flooding atomic.Bool
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
				Arguments       struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		switch req.Method {
		case "initialize":
			answer(req.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"%s","version":"1"}}`,
				req.Params.ProtocolVersion, kind))
		case "notifications/initialized":
			if kind == "flood" && !flooding.Swap(true) {
				go flood(write)
			}
		case "tools/list":
			answer(req.ID, `{"tools":`+tools+`}`)
		case "tools/call":
			switch req.Params.Name {
			case "truncated":
				fmt.Fprintln(os.Stderr, "partial: answering with a truncated line")
				write(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"cut of` + "\n")
			case "unterminated":
				fmt.Fprintln(os.Stderr, "partial: answering with half a line")
				write(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"con`)
			default:
				text, _ := json.Marshal(req.Params.Arguments.Text)
				answer(req.ID, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
			}
		case "ping", "logging/setLevel":
			answer(req.ID, `{}`)
		default:
			if len(req.ID) > 0 {
				write(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"method not found"}}` + "\n")
			}
		}
	}
	return 0
}

// flood writes notifications for ever, in batches, and reports its rate on
// stderr every half second.
func flood(write func(string)) {
	start := time.Now()
	last := start
	var b strings.Builder
	for n := 0; ; {
		b.Reset()
		for range 20 {
			n++
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":"flood %d"}}`+"\n", n)
			n++
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"nobody-%d","progress":%d}}`+"\n", n, n)
			n++
			b.WriteString(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
		}
		write(b.String())
		if now := time.Now(); now.Sub(last) > 500*time.Millisecond {
			last = now
			fmt.Fprintf(os.Stderr, "flood: sent %d notifications in %.1fs (%.0f/s)\n", n, now.Sub(start).Seconds(), float64(n)/now.Sub(start).Seconds())
		}
	}
}

// faultyHTTP is a streamable HTTP upstream (a Go SDK server in process)
// behind a switch of faults: answering 500 to every request, or dropping
// the connection in the middle of the event stream that answers a call of
// the tool drop (before any event, or after an event with an id, which
// the client tries to resume).
type faultyHTTP struct {
	failing  atomic.Bool
	status   atomic.Int32 // the status of a failing answer
	dropMode atomic.Int32 // 0: before any event; 1: after an event with an id
	inner    http.Handler
}

func newFaultyHTTP() *faultyHTTP {
	s := mcp.NewServer(&mcp.Implementation{Name: "faulty-http", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back unchanged."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "drop", Description: "The connection drops in the middle of the answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not dropped?"}}}, nil, nil
		})
	f := &faultyHTTP{inner: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	f.status.Store(http.StatusInternalServerError)
	return f
}

func (f *faultyHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.failing.Load() {
		http.Error(w, "upstream exploded", int(f.status.Load()))
		return
	}
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"drop"`)) {
			f.drop(w, body)
			return
		}
	}
	f.inner.ServeHTTP(w, r)
}

// drop answers with the start of an event stream and closes the
// connection under it.
func (f *faultyHTTP) drop(w http.ResponseWriter, body []byte) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &req)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	// No Content-Length and no chunking: the body ends when the
	// connection does.
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
	if f.dropMode.Load() == 1 {
		buf.WriteString("id: ev-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"about to drop\"}}\n\n")
	}
	buf.WriteString("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(req.ID) + ",\"result\":{\"cont")
	_ = buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not a clean close
	}
}
