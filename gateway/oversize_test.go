package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/gateway/wire"
)

// bigRoleEnv makes the test binary the raw server of large messages.
const bigRoleEnv = "TOOLSEARCH_BIG_ROLE"

func init() {
	if os.Getenv(bigRoleEnv) != "" {
		os.Exit(serveBigStdio())
	}
}

const bigTools = `{"tools":[` +
	`{"name":"echo","description":"Echo the text back.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},` +
	`{"name":"huge","description":"Answer a text of the given size.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}},` +
	`{"name":"shout","description":"Send a log message of the given size, then answer.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}},` +
	`{"name":"derail","description":"Write a message of the given size with no id, then answer.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}}]}`

// bigAnswer is a minimal MCP server of large messages, written by hand
// (ids first, as the Go SDK writes them): the lines that answer one
// message, in order. huge answers a text of the given size; shout first
// sends a log notification that large, derail a JSON object with no id.
func bigAnswer(msg []byte) [][]byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Name            string `json:"name"`
			Arguments       struct {
				Text  string `json:"text"`
				Bytes int    `json:"bytes"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || len(req.ID) == 0 {
		return nil
	}
	reply := func(result string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
	}
	text := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"content":[{"type":"text","text":` + string(b) + `}]}`
	}
	xs := strings.Repeat("x", req.Params.Arguments.Bytes)
	switch req.Method {
	case "initialize":
		return [][]byte{reply(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}`, req.Params.ProtocolVersion))}
	case "tools/list":
		return [][]byte{reply(bigTools)}
	case "ping":
		return [][]byte{reply(`{}`)}
	case "tools/call":
		switch req.Params.Name {
		case "echo":
			return [][]byte{reply(text(req.Params.Arguments.Text))}
		case "huge":
			return [][]byte{reply(`{"content":[{"type":"text","text":"` + xs + `"}]}`)}
		case "shout":
			return [][]byte{[]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + xs + `"}}`), reply(text("shout done"))}
		case "derail":
			return [][]byte{[]byte(`{"junk":"` + xs + `"}`), reply(text("derail done"))}
		}
	}
	return [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"not found"}}`)}
}

// serveBigStdio runs bigAnswer over stdin and stdout.
func serveBigStdio() int {
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		for _, out := range bigAnswer(line) {
			if _, werr := os.Stdout.Write(append(out, '\n')); werr != nil {
				return 1
			}
		}
		if err != nil {
			return 0
		}
	}
}

// bigStreamable serves bigAnswer over streamable HTTP, as JSON or as an
// event stream.
func bigStreamable(sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out := bigAnswer(body)
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			for i, line := range out {
				fmt.Fprintf(w, "id: %d\nevent: message\ndata: %s\n\n", i+1, line)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out[len(out)-1])
	})
}

// callWithin calls a tool by its name, within d.
func callWithin(c *client, name string, args any, d time.Duration) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestOversizedMessage: an upstream server that sends one message over the
// 16 MiB bound does not wedge: the call it answered fails at once with a
// clear error, the next call works, and status, /healthz and /metrics
// tell. Over stdio (a server written by hand, whose ids come first, and
// one written with the TypeScript SDK, whose ids come last) a large
// notification is dropped and a large message with no id restarts the
// server; over streamable HTTP, JSON answers and event streams are bounded
// the same way.
func TestOversizedMessage(t *testing.T) {
	t.Parallel()
	const size = 20 << 20
	type step struct {
		tool    string
		args    map[string]any
		wantErr bool
		want    string // alternatives separated by |
		action  string // recorded in status, or ""
	}
	huge := []step{
		{tool: "huge", args: map[string]any{"bytes": size}, wantErr: true, want: "more than the 16 MiB the gateway accepts in one message", action: wire.OversizeFailedCall},
		{tool: "echo", args: map[string]any{"text": "after the large one"}, want: "after the large one"},
	}
	stdioSteps := append(append([]step(nil), huge...),
		step{tool: "shout", args: map[string]any{"bytes": size}, want: "shout", action: wire.OversizeDropped},
		step{tool: "echo", args: map[string]any{"text": "after the notification"}, want: "after the notification"},
		step{tool: "derail", args: map[string]any{"bytes": size}, wantErr: true, want: "over the size limit|stopped while the call", action: wire.OversizeRestarted},
		step{tool: "echo", args: map[string]any{"text": "after the restart"}, want: "after the restart"},
	)
	node, nodeErr := exec.LookPath("node")
	for _, tc := range []struct {
		name   string
		server func(t *testing.T) map[string]any
		steps  []step
		// plainOnly skips the case under the race detector, which makes
		// scanning each 20 MiB line for its id ten times slower: the
		// gateway reads it as it reads the stdio case, and .ci/run runs
		// it without -race.
		plainOnly bool
	}{
		{"stdio", func(t *testing.T) map[string]any {
			return map[string]any{"command": self(t), "env": map[string]string{bigRoleEnv: "1"}}
		}, stdioSteps, false},
		{"typescript stdio", func(t *testing.T) map[string]any {
			if _, err := os.Stat(filepath.Join(repoRoot(t), "node_modules", "@modelcontextprotocol", "sdk")); err != nil || nodeErr != nil {
				t.Skip("node or node_modules/@modelcontextprotocol/sdk is absent: run `npm ci` at the repository root")
			}
			return map[string]any{"command": node, "args": []string{filepath.Join(repoRoot(t), "gateway", "testdata", "bigserver.mjs")}}
		}, stdioSteps, true},
		{"http json", func(t *testing.T) map[string]any {
			return map[string]any{"type": "http", "url": serveHTTP(t, bigStreamable(false)).URL}
		}, huge, false},
		{"http event stream", func(t *testing.T) map[string]any {
			return map[string]any{"type": "http", "url": serveHTTP(t, bigStreamable(true)).URL}
		}, append(append([]step(nil), huge...),
			step{tool: "shout", args: map[string]any{"bytes": size}, want: "shout done", action: wire.OversizeDropped},
			step{tool: "echo", args: map[string]any{"text": "after the notification"}, want: "after the notification"}), false},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if tc.plainOnly && raceEnabled {
				t.Skip("20 MiB lines under the race detector: run without -race (.ci/run does)")
			}
			t.Parallel()
			entry := tc.server(t)
			entry["naming"] = "prefixed"
			g := startGateway(t, writeConfig(t, map[string]any{"big": entry},
				map[string]any{"limits": map[string]any{"callTimeout": "120s"}}))
			waitState(t, g, "big", 20*time.Second, StateReady)
			srv := serveHTTP(t, g.Handler("full"))
			c := connectHTTP(t, srv.URL+"/mcp/full", nil)
			counted := 0
			for i, s := range tc.steps {
				if s.action == wire.OversizeRestarted || (i > 0 && tc.steps[i-1].action == wire.OversizeRestarted) {
					waitState(t, g, "big", 20*time.Second, StateReady)
				}
				// A wedged connection answers at the call timeout (120s)
				// or never; a 20 MiB message takes a few seconds, more
				// under the race detector on a busy machine.
				start := time.Now()
				text, isErr := callWithin(c, "big__"+s.tool, s.args, 90*time.Second)
				took := time.Since(start)
				if isErr != s.wantErr || !containsAny(text, strings.Split(s.want, "|")) {
					t.Fatalf("step %d: %s = %.300q (error %v) after %v, want %q (error %v)", i, s.tool, text, isErr, took, s.want, s.wantErr)
				}
				t.Logf("step %d: %s took %v", i, s.tool, took.Round(time.Millisecond))
				if s.action == "" {
					continue
				}
				counted++
				var st Status
				waitFor(t, "the status to count it", 10*time.Second, func() bool {
					for _, x := range g.Statuses() {
						if x.Key == "big" {
							st = x
						}
					}
					return st.Oversized == counted
				})
				if !strings.Contains(st.LastOversize, "over the 16 MiB limit") || st.LastOversizeAt.IsZero() {
					t.Errorf("step %d: status %+v", i, st)
				}
				resp, err := http.Get(srv.URL + "/healthz")
				if err != nil {
					t.Fatal(err)
				}
				var health struct {
					Servers []healthServer `json:"servers"`
				}
				err = json.NewDecoder(resp.Body).Decode(&health)
				resp.Body.Close()
				if err != nil || len(health.Servers) != 1 || health.Servers[0].Oversized != counted || health.Servers[0].LastOversize != st.LastOversize {
					t.Errorf("step %d: /healthz %+v (%v)", i, health, err)
				}
				labels := map[string]string{"server": "big", "action": s.action}
				if n, _ := sample(scrape(t, srv.URL), "toolsearch_upstream_oversized_messages_total", labels); n != 1 {
					t.Errorf("step %d: /metrics has toolsearch_upstream_oversized_messages_total%v = %v, want 1", i, labels, n)
				}
			}
		})
	}
}

// TestUpstreamDefinitionsBounded: a server's tools/list bounds what the
// gateway holds. A 10 MB description is cut to 64 KiB and marked, a
// definition over 1 MiB is left out, and the gateway's heap holds a
// bounded amount once the server is listed (without the bounds, it grew
// by 237 MiB). Not parallel: it reads the heap. Under the race detector
// the definitions are smaller (serveBloat).
func TestUpstreamDefinitionsBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, logs := newGatewayLogged(t, map[string]any{"bloat": attackServer(t, "bloat", "bloat")},
		map[string]any{"limits": map[string]any{"startTimeout": "60s"}, "builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "bloat", 60*time.Second, StateReady)

	snap := g.Snapshot()
	long, ok := snap.Tool("bloat/long_description")
	if !ok {
		t.Fatal("the tool with a long description is not in the catalog")
	}
	if n := len(long.Description); n > upstream.MaxDescriptionBytes+len(upstream.DescriptionCut) || !strings.HasSuffix(long.Description, upstream.DescriptionCut) ||
		!utf8.ValidString(long.Description) || !strings.HasPrefix(long.Description, "Summarise a document.") {
		t.Errorf("the long description is %d bytes, valid UTF-8 %v, ends %q", n, utf8.ValidString(long.Description), long.Description[max(0, n-80):])
	}
	if _, ok := snap.Tool("bloat/huge_schema"); ok {
		t.Error("a definition over 1 MiB is in the catalog")
	}
	if _, ok := snap.Tool("bloat/ordinary"); !ok {
		t.Error("the ordinary tool of the same server is missing")
	}
	for _, want := range []string{"cutting a tool's description to 64 KiB", "leaving out a tool whose definition is over 1 MiB"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// What stays is mostly the connection's: the MCP library keeps its
	// read buffer at the size of the longest line and the last message
	// read, decoded, until the next one comes (about 50 MiB for a 10 MB
	// message), and the token counter's vocabulary (9 MiB), loaded once.
	// The cut catalog and its index are under 1 MiB.
	const bound = 128 << 20
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > bound {
		t.Errorf("the gateway's heap grew by %d MiB, over %d MiB", grew>>20, bound>>20)
	} else {
		t.Logf("the gateway's heap grew by %d MiB", grew>>20)
	}
}

// TestUpstreamTooManyTools: a server that lists more tools than the
// gateway takes from one server fails with a reason that says so, and
// none of its tools are served.
func TestUpstreamTooManyTools(t *testing.T) {
	t.Parallel()
	g, _ := newGatewayLogged(t, map[string]any{"flood": attackServer(t, "flood", "flood"), "echo": roleServer(t, "echo")},
		map[string]any{"limits": map[string]any{"startTimeout": "60s"}, "builtins": map[string]any{"lsp": false}})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "echo", 30*time.Second, StateReady)
	c := connectHTTP(t, serveHTTP(t, g.Handler("")).URL+"/mcp/search", nil)
	// Another client is served meanwhile: each of its calls within a
	// second while flood lists, is refused and is started again.
	slowest, calls := time.Duration(0), 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		began := time.Now()
		if text, isErr := c.call(t, callToolName, map[string]any{"name": "echo__echo", "arguments": map[string]any{"text": "still here"}}); isErr || !strings.Contains(text, "still here") {
			t.Fatalf("another client's call during the flood: %q (error %v)", text, isErr)
		}
		slowest, calls = max(slowest, time.Since(began)), calls+1
		st := statusOf(g, "flood")
		if strings.Contains(st.Error, "more than 10000 tools") {
			if st.Tools != 0 {
				t.Errorf("flood's status counts %d tools", st.Tools)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flood is %s (%q); want it refused for listing too many tools", st.State, st.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := g.Snapshot().Tool("flood/tool_0"); ok {
		t.Error("a tool of the server that listed too many is in the catalog")
	}
	if slowest > time.Second {
		t.Errorf("another client's slowest call of %d took %v, over a second", calls, slowest)
	}
	t.Logf("another client's slowest call of %d took %v", calls, slowest)
}

// statusOf returns the status of server key.
func statusOf(g *Gateway, key string) Status {
	for _, st := range g.Statuses() {
		if st.Key == key {
			return st
		}
	}
	return Status{}
}
