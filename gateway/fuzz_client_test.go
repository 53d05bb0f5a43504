package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// The client fuzz targets feed arbitrary bytes to the gateway as a client's
// messages, over stdio (FuzzClientMessages) and over streamable HTTP
// (FuzzClientHTTP), and check that it never panics, never hangs, and keeps
// answering: a valid request after the bytes is answered.

// fuzzGateway is one gateway shared by every input of a fuzz process: an
// in-process streamable HTTP upstream with tools, a resource, a resource
// template and a prompt; built-in file tools confined to an empty folder;
// no tool that reaches the network or starts a program.
type fuzzGateway struct {
	g    *Gateway
	http *httptest.Server
	stop func()
}

// startFuzzGateway starts a fuzzGateway for the inputs of one fuzz target
// and stops it after them.
func startFuzzGateway(f *testing.F) *fuzzGateway {
	fx, err := newFuzzGateway(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(fx.stop)
	return fx
}

func newFuzzGateway(dir string) (*fuzzGateway, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fuzz-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back unchanged."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(ctx context.Context, req *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(a.A + a.B)}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "fuzz://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "readme"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fuzz://items/{id}", Name: "item"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	doc := map[string]any{
		"mcpServers": map[string]any{"up": map[string]any{"type": "http", "url": up.URL}},
		"toolsearch": map[string]any{
			"limits":   map[string]any{"startTimeout": "10s", "callTimeout": "5s"},
			"policy":   map[string]any{"deny": []string{"up/add"}},
			"builtins": map[string]any{"roots": []string{dir}, "lsp": false, "web_fetch": false, "resources": true},
		},
	}
	data, _ := json.Marshal(doc)
	cfg, err := config.Parse("fuzz.json", data, nil)
	if err != nil {
		up.Close()
		return nil, err
	}
	g, err := New(cfg, Options{})
	if err != nil {
		up.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := g.WaitSettled(wctx); err != nil || g.Statuses()[0].State != StateReady {
		cancel()
		up.Close()
		return nil, fmt.Errorf("the fuzz upstream did not start: %v %+v", err, g.Statuses())
	}
	gw := httptest.NewServer(g.Handler("search"))
	return &fuzzGateway{g: g, http: gw, stop: func() {
		gw.CloseClientConnections()
		gw.Close()
		cancel()
		g.Close()
		up.CloseClientConnections()
		up.Close()
	}}, nil
}

// clientSeeds are client messages of every kind the gateway serves, and a
// few broken ones.
var clientSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"echo text","max_results":3}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"up__echo","arguments":{"text":"hi"}}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"up__add","arguments":{"a":1,"b":2}}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"direct"},"_meta":{"progressToken":"p1"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"select:up__echo,up__add"}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"(ech|ad)o?.*"}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"builtin__read_resource","arguments":{"server":"up","uri":"fuzz://items/7"}}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"resources/list"}`,
	`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"fuzz://readme"}}`,
	`{"jsonrpc":"2.0","id":11,"method":"resources/templates/list"}`,
	`{"jsonrpc":"2.0","id":12,"method":"prompts/list"}`,
	`{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":{"name":"up__greet","arguments":{"who":"bob"}}}`,
	`{"jsonrpc":"2.0","id":14,"method":"logging/setLevel","params":{"level":"debug"}}`,
	`{"jsonrpc":"2.0","id":15,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"up__greet"},"argument":{"name":"who","value":"b"}}}`,
	`{"jsonrpc":"2.0","id":16,"method":"resources/subscribe","params":{"uri":"fuzz://readme"}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"no"}}`,
	`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
	`{"jsonrpc":"2.0","id":17,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"again","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":99,"result":{}}`,
	`{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":18,"method":"no/such/method"}`,
	`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"call_tool","arguments":"not an object"}}`,
	`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":""}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":21,"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":22,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	`{"jsonrpc":"2.0","id":23,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":24,"method":"prompts/list"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
	`not json at all`,
	`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"up__echo","arguments":{"text":"` + strings.Repeat("\\u00e9", 50) + `"}}}}`,
	strings.Repeat("[", 200),
	"\xff\xfe{}",
	``,
}

// probe is a request no input can answer for the gateway: its id is not
// one a fuzz input would guess.
const probeID = "probe-7f3a9c"

var probeMsg = []byte(`{"jsonrpc":"2.0","id":"` + probeID + `","method":"ping"}` + "\n")

// wellFormed reports whether data is a sequence of lines each empty or one
// JSON-RPC message (no batch), which a client may send on stdio without
// breaking the connection.
func wellFormed(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.Trim(line, " \t\r")
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || !json.Valid(line) {
			return false
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return false
		}
		if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "initialize" {
			return false // a second initialize may end the session
		}
	}
	return true
}

// swallowsPing reports whether data leaves a JSON value open that the ping
// after it only continues (an unclosed "[" or "{"): the session reads on,
// waiting for the value's end, as a stream of JSON values is read. Any
// other input ends the session or lets the ping through.
func swallowsPing(data []byte) bool {
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte("\n")), bytes.NewReader(probeMsg)))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return true
		case err != nil:
			return false
		case bytes.Contains(raw, []byte(probeID)):
			return !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(probeMsg))
		}
	}
}

// FuzzClientMessages sends arbitrary bytes as a client's messages to a
// gateway session over stdio (pipes), after a valid initialize, then a
// ping. The gateway must not panic; the ping must be answered, or, when
// the bytes are not well-formed JSON-RPC, the session may end instead (the
// SDK closes a stdio connection it cannot read), within seconds either way;
// and a new session must work afterwards.
func FuzzClientMessages(f *testing.F) {
	for _, s := range clientSeeds {
		f.Add([]byte(s))
	}
	fx := startFuzzGateway(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		modes := []string{"search", "dynamic", "full", "auto"}
		mode := modes[len(data)%len(modes)]
		// Bytes that leave a JSON value open swallow the ping: the
		// client then hangs up, and the session must end.
		swallowed := swallowsPing(data)
		answered, ended := stdioExchange(t, fx.g, mode, data, swallowed)
		switch {
		case answered:
			return
		case swallowed && !ended:
			t.Fatalf("the session did not end when its client hung up after %q", data)
		case !ended:
			t.Fatalf("the session neither answered the ping nor ended after %q", data)
		case wellFormed(data):
			t.Fatalf("the session ended after well-formed messages %q", data)
		}
		// The gateway keeps serving: a new session answers.
		if answered, _ := stdioExchange(t, fx.g, mode, nil, false); !answered {
			t.Fatalf("a new session did not answer after %q", data)
		}
	})
}

// stdioExchange runs one stdio session: initialize, data, ping, and, with
// hangUp, the end of the client's input. It reports whether the ping was
// answered and whether the session ended first.
func stdioExchange(t *testing.T, g *Gateway, mode string, data []byte, hangUp bool) (answered, ended bool) {
	cr, cw := io.Pipe() // client → gateway
	sr, sw := io.Pipe() // gateway → client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := g.Connect(ctx, mode, &mcp.IOTransport{Reader: cr, Writer: sw})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	sessionDone := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(sessionDone)
	}()
	ids := make(chan string, 64)
	go func() {
		defer close(ids)
		rd := bufio.NewReaderSize(sr, 64<<10)
		for {
			line, err := rd.ReadBytes('\n')
			if len(line) > 0 {
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
					var id string
					if json.Unmarshal(m.ID, &id) == nil {
						select {
						case ids <- id:
						default:
						}
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	// Writes go through a goroutine: a session that stopped reading must
	// not block the test.
	writes := make(chan []byte, 4)
	go func(writes <-chan []byte) {
		defer cw.Close()
		for b := range writes {
			if _, err := cw.Write(b); err != nil {
				for range writes {
				}
				return
			}
		}
	}(writes)
	defer func() {
		if writes != nil {
			close(writes)
		}
		_ = cr.CloseWithError(io.EOF)
		_ = sr.Close()
		select {
		case <-sessionDone:
		case <-time.After(10 * time.Second):
			t.Errorf("the session did not end after its client closed")
		}
	}()
	await := func(id string, d time.Duration) (bool, bool) {
		deadline := time.After(d)
		for {
			select {
			case got, ok := <-ids:
				if !ok {
					return false, true
				}
				if got == id {
					return true, false
				}
			case <-sessionDone:
				// Drain what was already written.
				for got := range ids {
					if got == id {
						return true, true
					}
				}
				return false, true
			case <-deadline:
				return false, false
			}
		}
	}
	writes <- []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}` + "\n")
	if ok, _ := await("init", 10*time.Second); !ok {
		t.Fatal("initialize was not answered")
	}
	writes <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	if len(data) > 0 {
		writes <- append(append([]byte(nil), data...), '\n')
	}
	writes <- probeMsg
	if hangUp {
		close(writes)
		writes = nil
	}
	return await(probeID, 10*time.Second)
}

// FuzzClientHTTP posts arbitrary bytes to a gateway session over
// streamable HTTP, with and without the session's id, with the content
// type and accept headers varied, then pings the session. No request may
// get a 5xx, hang, or panic the gateway, and the session must answer the
// ping: over HTTP one bad message cannot end a session.
func FuzzClientHTTP(f *testing.F) {
	for i, s := range clientSeeds {
		f.Add([]byte(s), byte(i))
	}
	fx := startFuzzGateway(f)
	client := &http.Client{Timeout: 15 * time.Second}
	f.Fuzz(func(t *testing.T, body []byte, variant byte) {
		url := fx.http.URL + "/mcp"
		post := func(session string, b []byte, ctype, accept string) (*http.Response, []byte) {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", ctype)
			req.Header.Set("Accept", accept)
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("POST %q: %v", b, err)
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("POST %q: reading the answer: %v", b, err)
			}
			if resp.StatusCode >= 500 {
				t.Fatalf("POST %q: %d %s", b, resp.StatusCode, out)
			}
			return resp, out
		}
		closeSession := func(id string) {
			req, _ := http.NewRequest(http.MethodDelete, url, nil)
			req.Header.Set("Mcp-Session-Id", id)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		both := "application/json, text/event-stream"
		resp, out := post("", []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`), "application/json", both)
		session := resp.Header.Get("Mcp-Session-Id")
		if session == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, out)
		}
		defer closeSession(session)
		post(session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "application/json", both)

		ctype, accept := "application/json", both
		if variant&2 != 0 {
			ctype = "text/plain"
		}
		if variant&4 != 0 {
			accept = "application/json"
		}
		if variant&1 != 0 {
			// Without a session id: the bytes may open a session of
			// their own, which is closed again.
			resp, _ := post("", body, ctype, accept)
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" && id != session {
				closeSession(id)
			}
		} else {
			post(session, body, ctype, accept)
		}
		resp, out = post(session, probeMsg, "application/json", both)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(probeID)) {
			t.Fatalf("after %q (variant %d) the session answered the ping with %d %s", body, variant, resp.StatusCode, out)
		}
	})
}
