package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// strictUpstream is a 2026-07-28 server over stateless HTTP on loopback
// that holds the gateway to the protocol's rules: a tool that needs the
// client's sampling capability (-32021 without it), a tool that asks for
// input and counts the retries it gets, and a tool whose parameters travel
// in Mcp-Param headers too, counting the calls it serves.
type strictUpstream struct {
	url     string
	retries atomic.Int64 // retries of ask that reached the server
	tagged  atomic.Int64 // calls of tagged that reached the server
	mu      sync.Mutex
	caps    []string // the sampling capability each call of needs_sampling came with
}

const taggedSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"n":{"type":"integer","x-mcp-header":"N"},
	"opts":{"type":"object","properties":{"deep":{"type":"boolean","x-mcp-header":"Deep"}}}}}`

func startStrictUpstream(t *testing.T) *strictUpstream {
	t.Helper()
	u := &strictUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "strict", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cc := req.ClientCapabilities()
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			has := cc != nil && cc.Sampling != nil
			u.mu.Lock()
			u.caps = append(u.caps, fmt.Sprint(has))
			u.mu.Unlock()
			if !has {
				data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{
					//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
					RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
					Message: "needs_sampling needs the sampling capability", Data: data}
			}
			return text("sampling declared"), nil
		})
	var seq atomic.Int64
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{RequestState: fmt.Sprintf("st-%d", seq.Add(1)),
					InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
						RequestedSchema: &map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil
			}
			u.retries.Add(1)
			return text("answered " + req.Params.RequestState), nil
		})
	s.AddTool(&mcp.Tool{Name: "tagged", InputSchema: json.RawMessage(taggedSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.tagged.Add(1)
			return text("tagged " + string(req.Params.Arguments)), nil
		})
	u.url = serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true})).URL
	return u
}

// startStrictGateway serves strictUpstream through the gateway in full
// exposure over HTTP on loopback and returns the gateway's /mcp URL.
func startStrictGateway(t *testing.T) (*strictUpstream, string) {
	t.Helper()
	u := startStrictUpstream(t)
	g := startGateway(t, writeConfig(t, map[string]any{"strict": map[string]any{"type": "http", "url": u.url}},
		map[string]any{"exposure": "full"}))
	waitState(t, g, "strict", 20*time.Second, StateReady)
	return u, serveHTTP(t, g.Handler("")).URL + "/mcp"
}

// connectAt connects a Go SDK client at version over streamable HTTP.
func connectAt(t *testing.T, url, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "strict-client", Version: "1"}, opts)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

// rpcCode is the JSON-RPC error code of err, or 0.
func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// TestEraParamHeaders: a 2026-07-28 tools/call of a tool of full exposure
// whose Mcp-Param headers do not say what its arguments say is refused
// with HTTP 400 and -32020 before any server sees it, as the MCP library
// refuses it for its own tools; headers that match pass, and the Go SDK
// client, which sets them from the listed schema, is served.
func TestEraParamHeaders(t *testing.T) {
	u, url := startStrictGateway(t)
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	cases := []struct {
		name    string
		args    string
		headers map[string]string
		ok      bool
	}{
		{"plain match", `{"region":"eu-west"}`, map[string]string{"Mcp-Param-Region": "eu-west"}, true},
		{"base64 match", `{"region":"Zürich"}`, map[string]string{"Mcp-Param-Region": b64("Zürich")}, true},
		{"no base64 suffix is literal", `{"region":"=?base64?SGk"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGk"}, true},
		{"integer", `{"n":42}`, map[string]string{"Mcp-Param-N": "42"}, true},
		{"nested boolean", `{"opts":{"deep":true}}`, map[string]string{"Mcp-Param-Deep": "true"}, true},
		{"no x-mcp-header argument given", `{}`, nil, true},
		{"forged region", `{"region":"eu-west"}`, map[string]string{"Mcp-Param-Region": "us-east"}, false},
		{"missing header", `{"region":"eu-west"}`, nil, false},
		{"header without argument", `{}`, map[string]string{"Mcp-Param-Region": "eu-west"}, false},
		{"header for a null argument", `{"region":null}`, map[string]string{"Mcp-Param-Region": "null"}, false},
		{"invalid base64 characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, false},
		{"invalid base64 padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, false},
		{"base64 of another value", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": b64("Bye")}, false},
		{"wrong integer", `{"n":42}`, map[string]string{"Mcp-Param-N": "43"}, false},
		{"integer header not a number", `{"n":42}`, map[string]string{"Mcp-Param-N": "forty-two"}, false},
		{"wrong nested boolean", `{"opts":{"deep":true}}`, map[string]string{"Mcp-Param-Deep": "false"}, false},
		{"argument not a primitive", `{"region":{"a":1}}`, map[string]string{"Mcp-Param-Region": "[object Object]"}, false},
	}
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := modernHeader("tools/call", "tagged", clientera.PerRequestVersion)
				for k, v := range c.headers {
					h[k] = v
				}
				status, res := post(t, url, h, modernBody("tools/call", `{"name":"tagged","arguments":`+c.args+`}`, clientera.PerRequestVersion))
				if c.ok {
					r, _ := res["result"].(map[string]any)
					if status != http.StatusOK || r == nil || r["isError"] == true {
						t.Fatalf("refused: %d %v", status, res)
					}
					return
				}
				if status != http.StatusBadRequest || errCode(res) != int(mcp.CodeHeaderMismatch) || !strings.Contains(errMessage(res), "Mcp-Param-") {
					t.Fatalf("got %d %v, want 400 with %d naming the header", status, res, mcp.CodeHeaderMismatch)
				}
				if id, _ := res["id"].(float64); id != 1 {
					t.Errorf("the error answers id %v, want 1", res["id"])
				}
			})
		}
	})
	t.Run("the server saw only the calls that matched", func(t *testing.T) {
		want := int64(0)
		for _, c := range cases {
			if c.ok {
				want++
			}
		}
		if got := u.tagged.Load(); got != want {
			t.Errorf("the server got %d calls of tagged, want %d (one per matching case)", got, want)
		}
	})

	t.Run("Go SDK client", func(t *testing.T) {
		cs := connectAt(t, url, clientera.PerRequestVersion, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tagged",
			Arguments: map[string]any{"region": "  padded  ", "n": 7, "opts": map[string]any{"deep": false}}})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "padded") {
			t.Fatalf("tagged through the Go SDK client: %v %v", res, err)
		}
	})
}

// TestEraRetryUnknownState: a 2026-07-28 client's retry whose
// requestState the gateway did not hand out (forged, tampered with, used
// already) is refused with a JSON-RPC error, as the server itself refuses
// a state it did not make, and never reaches the server; the rightful
// retry does. Every result a 2026-07-28 client gets says its resultType.
func TestEraRetryUnknownState(t *testing.T) {
	u, url := startStrictGateway(t)
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}
	cs := connectAt(t, url, clientera.PerRequestVersion, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	answer := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
	first := func(t *testing.T) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
		if err != nil || !res.NeedsInput() || res.RequestState == "" {
			t.Fatalf("first call: %v %v", res, err)
		}
		return res.RequestState
	}
	retry := func(state string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", InputResponses: answer, RequestState: state})
	}
	cases := []struct {
		name  string
		state func(t *testing.T) string
	}{
		{"tampered", func(t *testing.T) string { return first(t) + "x" }},
		{"forged", func(*testing.T) string { return "st-999" }},
		{"used already", func(t *testing.T) string {
			s := first(t)
			if res, err := retry(s); err != nil || resultText(res) != "answered "+s {
				t.Fatalf("the rightful retry: %v %v", res, err)
			}
			return s
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := c.state(t)
			before := u.retries.Load()
			res, err := retry(state)
			if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "requestState") {
				t.Fatalf("retry with state %q = %v, %v; want a JSON-RPC error of invalid params", state, res, err)
			}
			if got := u.retries.Load(); got != before {
				t.Errorf("the refused retry reached the server")
			}
		})
	}
	t.Run("raw wire", func(t *testing.T) {
		// The refusal over the wire: HTTP 400 with -32602 (the MCP
		// library's status for invalid params).
		status, res := post(t, url, modernHeader("tools/call", "ask", clientera.PerRequestVersion),
			modernBody("tools/call", `{"name":"ask","requestState":"st-1x","inputResponses":{"name":{"action":"accept"}}}`, clientera.PerRequestVersion))
		if status != http.StatusBadRequest || errCode(res) != int(jsonrpc.CodeInvalidParams) {
			t.Errorf("a forged state over the wire: %d %v", status, res)
		}
		// A result the gateway makes itself (a tool error) and one of the
		// server both carry resultType.
		for _, body := range []string{`{"name":"tagged","arguments":{"opts":"not an object"}}`, `{"name":"tagged","arguments":{}}`} {
			status, res := post(t, url, modernHeader("tools/call", "tagged", clientera.PerRequestVersion), modernBody("tools/call", body, clientera.PerRequestVersion))
			r, _ := res["result"].(map[string]any)
			if status != http.StatusOK || r == nil || r["resultType"] != "complete" {
				t.Errorf("%s: %d %v, want a result with resultType complete", body, status, res)
			}
		}
	})
}

// TestEraClientCapabilitiesRelayed: the server is told the capabilities of
// the client of each request, not the gateway's: a call of a tool that
// needs sampling from a client that did not declare it is refused by the
// server (-32021), and the refusal reaches the client as it came, with
// HTTP 400; a client that declared it, at the same moment, is served.
// A session client of 2025-11-25 is held to its session's capabilities.
func TestEraClientCapabilitiesRelayed(t *testing.T) {
	u, url := startStrictGateway(t)
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	sampling := &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
	}}
	cases := []struct {
		name    string
		version string
		opts    *mcp.ClientOptions
		served  bool
	}{
		{"2026 without sampling", clientera.PerRequestVersion, nil, false},
		{"2026 with sampling", clientera.PerRequestVersion, sampling, true},
		{"2025 session without sampling", upstream.LegacyProtocol, nil, false},
		{"2025 session with sampling", upstream.LegacyProtocol, sampling, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs := connectAt(t, url, c.version, c.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "needs_sampling"})
			if c.served {
				if err != nil || res.IsError || resultText(res) != "sampling declared" {
					t.Fatalf("a client with sampling: %v %v", res, err)
				}
				return
			}
			if rpcCode(err) != mcp.CodeMissingRequiredClientCapabilities {
				t.Fatalf("a client without sampling: %v %v; want the server's -32021", res, err)
			}
			var je *jsonrpc.Error
			errors.As(err, &je)
			var data mcp.MissingRequiredClientCapabilityData
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			if json.Unmarshal(je.Data, &data) != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Sampling == nil {
				t.Errorf("the error's data lost what is required: %s", je.Data)
			}
		})
	}
	t.Run("raw wire", func(t *testing.T) {
		// modernBody declares no capabilities at all.
		status, res := post(t, url, modernHeader("tools/call", "needs_sampling", clientera.PerRequestVersion),
			modernBody("tools/call", `{"name":"needs_sampling"}`, clientera.PerRequestVersion))
		if status != http.StatusBadRequest || errCode(res) != int(mcp.CodeMissingRequiredClientCapabilities) {
			t.Errorf("a client with no capabilities over the wire: %d %v, want 400 with -32021", status, res)
		}
	})
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.caps) == 0 {
		t.Error("the server saw no call of needs_sampling")
	}
}

// TestParamHeaderParsing checks the header rules one by one, without a
// server, as the MCP library applies them.
func TestParamHeaderParsing(t *testing.T) {
	t.Parallel()
	b := paramBindings(json.RawMessage(taggedSchema))
	if len(b) != 3 {
		t.Fatalf("bindings of the tagged schema: %+v, want 3", b)
	}
	cases := []struct {
		args, header, value string
		ok                  bool
	}{
		{`{"n":1}`, "N", "1", true},
		{`{"n":1}`, "N", "1.0", true},
		{`{"n":1}`, "N", "1.5", false},
		{`{"n":1.5}`, "N", "1.5", false},
		{`{"n":9007199254740993}`, "N", "9007199254740993", false},
		{`{"region":""}`, "Region", "", false}, // present, so its header is needed
		{`{"region":" a "}`, "Region", "=?base64?IGEg?=", true},
		{`{"region":"true"}`, "Region", "true", true},
		{`{"opts":{"deep":false}}`, "Deep", "false", true},
		{`{"opts":"deep"}`, "Deep", "", true}, // no nested value: no header
		{`[1,2]`, "Region", "x", false},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.value != "" {
			h.Set("Mcp-Param-"+c.header, c.value)
		}
		err := checkParamHeaders(h, json.RawMessage(c.args), b)
		if (err == nil) != c.ok {
			t.Errorf("args %s, %s: %q: err %v, want ok %v", c.args, c.header, c.value, err, c.ok)
		}
		if err != nil && !errors.Is(err, errHeaderMismatch) {
			t.Errorf("args %s: the error %v is not a header mismatch", c.args, err)
		}
	}
}

// FuzzParamHeaders: whatever the arguments, schema and header, the check
// neither panics nor accepts a header for an argument that is absent.
func FuzzParamHeaders(f *testing.F) {
	f.Add(taggedSchema, `{"region":"a"}`, "a")
	f.Add(taggedSchema, `{}`, "=?base64?YQ==?=")
	f.Add(`{"properties":{"x":{"x-mcp-header":"Region","properties":{"y":{"x-mcp-header":"Region"}}}}}`, `{"x":{"y":1}}`, "1")
	f.Add(`{"properties":{"region":{"x-mcp-header":7}}}`, `null`, "")
	f.Fuzz(func(t *testing.T, schema, args, value string) {
		b := paramBindings(json.RawMessage(schema))
		h := http.Header{}
		h.Set("Mcp-Param-Region", value)
		err := checkParamHeaders(h, json.RawMessage(args), b)
		if err != nil || strings.TrimSpace(value) == "" {
			return
		}
		var obj map[string]json.RawMessage
		_ = json.Unmarshal([]byte(args), &obj)
		for _, bd := range b {
			if strings.EqualFold(bd.header, "Region") {
				if raw, ok := lookupArg(obj, bd.path); !ok || string(raw) == "null" {
					t.Fatalf("a Region header was accepted for an absent argument: schema %s args %s", schema, args)
				}
			}
		}
	})
}
