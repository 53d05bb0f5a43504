package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// TestMsgHead reads the id and method of JSON-RPC messages as the MCP
// library would decode them.
func TestMsgHead(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name, msg string
		action    string
		id        string
	}{
		{"go order", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`, oversizeFailedCall, "7"},
		{"typescript order", `{"result":{"content":[{"type":"text","text":"` + long + `"}]},"jsonrpc":"2.0","id":7}`, oversizeFailedCall, "7"},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","result":{}}`, oversizeFailedCall, `"a-1"`},
		{"spaces", " {\"jsonrpc\" : \"2.0\" , \"id\" : 12 , \"result\" : {} }\r\n", oversizeFailedCall, "12"},
		{"ids inside the result do not count", `{"result":{"id":99,"items":[{"id":98}],"s":"\"id\":97"},"id":3}`, oversizeFailedCall, "3"},
		{"the last id counts", `{"id":1,"result":{},"id":2}`, oversizeFailedCall, "2"},
		{"keys fold case", `{"ID":5,"result":{}}`, oversizeFailedCall, "5"},
		{"escaped key", `{"\u0069d":6,"result":{}}`, oversizeFailedCall, "6"},
		{"escapes in strings", `{"result":{"t":"a\\\"b\"}"},"id":8}`, oversizeFailedCall, "8"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + long + `"}}`, oversizeDropped, ""},
		{"request of the server", `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}`, oversizeDropped, ""},
		{"no id", `{"junk":"` + long + `"}`, oversizeRestarted, ""},
		{"null id", `{"id":null,"error":{"code":1,"message":"x"}}`, oversizeRestarted, ""},
		{"fractional id", `{"id":1.5,"result":{}}`, oversizeRestarted, ""},
		{"exponent id", `{"id":1e3,"result":{}}`, oversizeRestarted, ""},
		{"id too large for a float", `{"id":9007199254740993,"result":{}}`, oversizeRestarted, ""},
		{"object id", `{"id":{"a":1},"result":{}}`, oversizeRestarted, ""},
		{"id longer than kept", `{"id":"` + long + `","result":{}}`, oversizeRestarted, ""},
		{"cut short", `{"jsonrpc":"2.0","id":7,"result":{"content":"` + long, oversizeRestarted, ""},
		{"an array", `[{"jsonrpc":"2.0","id":7,"result":{}}]`, oversizeRestarted, ""},
		{"not JSON", `hello`, oversizeRestarted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h msgHead
			// Written in pieces of every size, as reads come.
			for rest, n := []byte(tc.msg), 1; len(rest) > 0; n = n*2 + 1 {
				k := min(n, len(rest))
				_, _ = h.Write(rest[:k])
				rest = rest[k:]
			}
			ev := h.decide(int64(len(tc.msg)))
			if ev.Action != tc.action || ev.ID != tc.id {
				t.Errorf("decide = %s %q, want %s %q", ev.Action, ev.ID, tc.action, tc.id)
			}
		})
	}
}

// FuzzMsgHead checks msgHead against encoding/json, which the MCP library
// decodes messages with: for every complete JSON object, the same id and
// the same answer to whether there is a method.
func FuzzMsgHead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`, `{"result":{"id":1},"id":"x"}`, `{"ID":1,"Id":2}`,
		`{"method":"m","params":[1,{"id":3}]}`, `{"\u0069\u0064":[1, 2]}`, `{"id":"\"}"}`, `{}`, `[]`, `{"a":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h msgHead
		_, _ = h.Write(data)
		ev := h.decide(int64(len(data))) // never panics, whatever the bytes
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil || top == nil {
			// Not a JSON object: msgHead checks no more than it needs
			// (a stray comma passes), and what it decides for such
			// bytes from a server only ends a call early.
			if ev.Action == oversizeFailedCall && (len(ev.ID) == 0 || ev.ID[0] != '"' && ev.ID[0] != '-' && (ev.ID[0] < '0' || ev.ID[0] > '9')) {
				t.Fatalf("answered %q for %q", ev.ID, data)
			}
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			return // a JSON object whose id or method the library refuses
		}
		if !h.done {
			t.Fatalf("a JSON object read as incomplete: %q", data)
		}
		if h.method != (msg.Method != nil) {
			t.Fatalf("method = %v, encoding/json: %q, in %q", h.method, msg.Method, data)
		}
		if h.idLong {
			return
		}
		var a, b bytes.Buffer
		errA, errB := json.Compact(&a, h.id), json.Compact(&b, msg.ID)
		if len(h.id) == 0 && len(msg.ID) == 0 {
			return
		}
		if errA != nil || errB != nil || a.String() != b.String() {
			t.Fatalf("id = %q, encoding/json: %q, in %q", h.id, msg.ID, data)
		}
	})
}

// TestFilterStdout: a line over the bound is never passed on; in its place
// comes an error response for its id, or nothing (a notification), or the
// end of the output with errResetOversize (no id). It skips under the race
// detector, which makes scanning its 16 MiB lines slow (TestOversizedMessage
// runs the filter there, between processes); .ci/run runs it without.
func TestFilterStdout(t *testing.T) {
	if raceEnabled {
		t.Skip("16 MiB lines under the race detector: run without -race (.ci/run does)")
	}
	t.Parallel()
	big := strings.Repeat("y", maxMessageBytes)
	before, after := `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`
	for _, tc := range []struct {
		name    string
		line    string
		want    []string // what is read after before
		wantErr error
		action  string
	}{
		{"response", `{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":2}`, []string{`"id":2,"error"`, after}, nil, oversizeFailedCall},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`, []string{after}, nil, oversizeDropped},
		{"no id", `{"junk":"` + big + `"}`, nil, errResetOversize, oversizeRestarted},
		{"just under the bound", `{"id":2,"result":"` + big[:maxMessageBytes-30] + `"}`, []string{`"id":2,"result":"yyy`, after}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := strings.Join([]string{before, tc.line, after}, "\n") + "\n"
			pr, pw := io.Pipe()
			var events []oversizeEvent
			var tail bytes.Buffer
			go func() {
				err := filterStdout(strings.NewReader(in), pw, &tail, slog.New(slog.DiscardHandler), func(ev oversizeEvent) { events = append(events, ev) })
				pw.CloseWithError(err)
			}()
			out, err := io.ReadAll(pr)
			if !errors.Is(err, tc.wantErr) && !(tc.wantErr == nil && err == nil) {
				t.Fatalf("read error %v, want %v", err, tc.wantErr)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if lines[0] != before {
				t.Fatalf("first line %.80q", lines[0])
			}
			if len(lines)-1 != len(tc.want) {
				t.Fatalf("%d lines after the first, want %d: %.300q", len(lines)-1, len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i+1], w) || len(lines[i+1]) > maxMessageBytes {
					t.Errorf("line %d = %.200q, want %q in it", i+1, lines[i+1], w)
				}
			}
			if tc.action == "" {
				if len(events) != 0 {
					t.Errorf("events %+v for a line under the bound", events)
				}
				return
			}
			if len(events) != 1 || events[0].Action != tc.action || events[0].Size <= maxMessageBytes {
				t.Errorf("events %+v, want one %s", events, tc.action)
			}
			if !strings.Contains(tail.String(), "over the size limit") {
				t.Errorf("stderr tail %q does not tell", tail.String())
			}
		})
	}
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
		{tool: "huge", args: map[string]any{"bytes": size}, wantErr: true, want: "more than the 16 MiB the gateway accepts in one message", action: oversizeFailedCall},
		{tool: "echo", args: map[string]any{"text": "after the large one"}, want: "after the large one"},
	}
	stdioSteps := append(append([]step(nil), huge...),
		step{tool: "shout", args: map[string]any{"bytes": size}, want: "shout", action: oversizeDropped},
		step{tool: "echo", args: map[string]any{"text": "after the notification"}, want: "after the notification"},
		step{tool: "derail", args: map[string]any{"bytes": size}, wantErr: true, want: "over the size limit|stopped while the call", action: oversizeRestarted},
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
			step{tool: "shout", args: map[string]any{"bytes": size}, want: "shout done", action: oversizeDropped},
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
				if s.action == oversizeRestarted || (i > 0 && tc.steps[i-1].action == oversizeRestarted) {
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
	if n := len(long.Description); n > maxDescriptionBytes+len(descriptionCut) || !strings.HasSuffix(long.Description, descriptionCut) ||
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

// TestBoundDefinitions: what boundDefinitions keeps of each definition.
func TestBoundDefinitions(t *testing.T) {
	t.Parallel()
	tool := func(desc any, schema any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": "t", "description": desc, "inputSchema": schema})
		return b
	}
	obj := map[string]any{"type": "object"}
	long := strings.Repeat("é", maxDescriptionBytes) // two bytes each: a cut lands inside one
	bigSchema := map[string]any{"type": "object", "description": strings.Repeat("x", maxToolBytes)}
	for _, c := range []struct {
		name    string
		raw     json.RawMessage
		kept    bool
		cut     bool // the description was cut
		sameRaw bool // the bytes are the server's own
	}{
		{"short", tool("Read a file.", obj), true, false, true},
		{"long description", tool(long, obj), true, true, false},
		{"long description, number", tool(12345, bigSchema), false, false, false},
		{"schema over 1 MiB", tool("ok", bigSchema), false, false, false},
		{"long and not JSON", json.RawMessage(`{"name":"t","description":"` + strings.Repeat("x", maxDescriptionBytes+1)), true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var warned []string
			out := boundDefinitions([]json.RawMessage{tool("first", obj), c.raw}, func(msg string, _ ...any) { warned = append(warned, msg) })
			if !c.kept {
				if len(out) != 1 || len(warned) != 1 {
					t.Fatalf("kept %d of 2 definitions, warned %q; want the first alone, and a warning", len(out), warned)
				}
				return
			}
			if len(out) != 2 {
				t.Fatalf("kept %d of 2 definitions", len(out))
			}
			if same := string(out[1]) == string(c.raw); same != c.sameRaw {
				t.Errorf("the definition is the server's own bytes: %v, want %v", same, c.sameRaw)
			}
			if !c.cut {
				return
			}
			var got struct{ Description string }
			if err := json.Unmarshal(out[1], &got); err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(got.Description) || !strings.HasSuffix(got.Description, descriptionCut) ||
				len(got.Description) > maxDescriptionBytes+len(descriptionCut) {
				t.Errorf("the cut description is %d bytes, valid UTF-8 %v", len(got.Description), utf8.ValidString(got.Description))
			}
		})
	}
}
