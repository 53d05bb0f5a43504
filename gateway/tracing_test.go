package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/tracing"
)

// upstreamSecret is a header value the gateway sends its upstream: a
// secret of the configuration, which no span may show.
const upstreamSecret = "upstream-key-4f9d2a61c7"

// tracedUpstream is a Go SDK server on loopback whose tools record the
// _meta of each call, keyed by the "id" argument: echo answers, fail
// answers a tool error, broken a JSON-RPC error.
type tracedUpstream struct {
	url  string
	mu   sync.Mutex
	meta map[string]map[string]any
}

func startTracedUpstream(t testing.TB) *tracedUpstream {
	t.Helper()
	u := &tracedUpstream{meta: map[string]map[string]any{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "traced-upstream", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
	record := func(req *mcp.CallToolRequest) string {
		var args struct{ ID string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		u.mu.Lock()
		u.meta[args.ID] = req.Params.Meta
		u.mu.Unlock()
		return args.ID
	}
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the id back.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("echo " + record(req)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", Description: "Always a tool error.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			return toolError("it failed"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "leak", Description: "A protocol error that echoes the gateway's secret.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused: Authorization=Bearer " + upstreamSecret + " and key " + upstreamSecret}
		})
	srv.AddTool(&mcp.Tool{Name: "broken", Description: "Always a protocol error.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "broken inside"}
		})
	u.url = serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)).URL
	return u
}

// seen is the _meta the upstream received with the call of id.
func (u *tracedUpstream) seen(id string) (map[string]any, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	m, ok := u.meta[id]
	return m, ok
}

// tracedGateway is a gateway with tracing into rec, over the upstream
// "up" and the built-in tools, served over streamable HTTP.
type tracedGateway struct {
	g    *Gateway
	rec  *tracing.Recorder
	base string
	up   *tracedUpstream
}

func startTracedGateway(t testing.TB, gw map[string]any) *tracedGateway {
	t.Helper()
	up := startTracedUpstream(t)
	if gw == nil {
		gw = map[string]any{}
	}
	gw["exposure"] = "search"
	gw["builtins"] = map[string]any{"roots": []string{workspace(t)}, "lsp": false, "web_fetch": false}
	cfg, err := config.Load(writeConfig(t, map[string]any{"up": map[string]any{"type": "http", "url": up.url,
		"headers": map[string]string{"X-Upstream-Key": upstreamSecret}}}, gw))
	if err != nil {
		t.Fatal(err)
	}
	rec := &tracing.Recorder{}
	tp := tracing.NewProvider(tracing.ProviderOptions{Processor: rec})
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	g, err := New(cfg, Options{TracerProvider: tp, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "up", 20*time.Second, StateReady)
	return &tracedGateway{g: g, rec: rec, base: serveHTTP(t, g.Handler("")).URL, up: up}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct{ header http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects a Go SDK client of version to the gateway's search
// endpoint, sending header with every HTTP request.
func (f *tracedGateway) connect(t testing.TB, version string, header http.Header) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: f.base + "/mcp/search"}
	if header != nil {
		tr.HTTPClient = &http.Client{Transport: headerTransport{header}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "trace-client", Version: "1"}, nil).
		Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

// spansOf returns the ended spans of trace id, by name.
func (f *tracedGateway) spansOf(id tracing.TraceID) map[string][]*tracing.Span {
	out := map[string][]*tracing.Span{}
	for _, s := range f.rec.Ended() {
		if s.SpanContext().TraceID == id {
			out[s.Name()] = append(out[s.Name()], s)
		}
	}
	return out
}

// spanByID returns the ended span of id.
func (f *tracedGateway) spanByID(t testing.TB, id tracing.SpanID) *tracing.Span {
	t.Helper()
	for _, s := range f.rec.Ended() {
		if s.SpanContext().SpanID == id {
			return s
		}
	}
	t.Fatalf("no span %v ended", id)
	return nil
}

// one returns the single span named name, failing the test otherwise.
func one(t testing.TB, spans map[string][]*tracing.Span, name string) *tracing.Span {
	t.Helper()
	if len(spans[name]) != 1 {
		names := []string{}
		for n, ss := range spans {
			names = append(names, fmt.Sprintf("%s×%d", n, len(ss)))
		}
		t.Fatalf("want one span %q, have %v", name, names)
	}
	return spans[name][0]
}

// attrOf is the value of the span's attribute k (an empty value when it
// has none).
func attrOf(s *tracing.Span, k tracing.Key) tracing.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return tracing.Value{}
}

// traceparentOf reads the trace and parent span ids of a W3C traceparent.
func traceparentOf(t testing.TB, meta map[string]any) (tracing.TraceID, tracing.SpanID) {
	t.Helper()
	tp, _ := meta["traceparent"].(string)
	sc := tracing.SpanContextFromContext(tracing.Extract(context.Background(), map[string]any{"traceparent": tp}, nil))
	if !sc.IsValid() {
		t.Fatalf("the upstream received no valid traceparent: _meta %v", meta)
	}
	return sc.TraceID, sc.SpanID
}

// traceIDFromHex and spanIDFromHex read the ids of a traceparent.
func traceIDFromHex(s string) (tracing.TraceID, error) {
	var id tracing.TraceID
	_, err := hex.Decode(id[:], []byte(s))
	return id, err
}

func spanIDFromHex(s string) (tracing.SpanID, error) {
	var id tracing.SpanID
	_, err := hex.Decode(id[:], []byte(s))
	return id, err
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// TestTracingSpanTree: a Go SDK client's traced calls through the gateway
// to a Go SDK upstream give one span tree in the client's trace, and the
// upstream receives a traceparent of that trace whose parent is the
// gateway's call span.
func TestTracingSpanTree(t *testing.T) {
	t.Parallel()
	f := startTracedGateway(t, nil)
	wantTrace, _ := traceIDFromHex(clientTraceID)
	wantParent, _ := spanIDFromHex(clientSpanID)

	for _, tc := range []struct {
		name, version, tool, wantEra string
		errType                      string // "" for a call that succeeds
		wantStatus                   tracing.StatusCode
	}{
		{name: "session echo", version: era2025, tool: "echo", wantEra: "session"},
		{name: "per-request echo", version: era2026, tool: "echo", wantEra: "per-request"},
		{name: "tool error", version: era2025, tool: "fail", wantEra: "session", errType: tracing.ToolError, wantStatus: tracing.StatusError},
		{name: "protocol error", version: era2025, tool: "broken", wantEra: "session", errType: "-32603", wantStatus: tracing.StatusError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := f.connect(t, tc.version, nil)
			// A trace id of this case's own: the recorder holds every case's spans.
			tid := wantTrace
			tid[0] = byte(len(tc.name))
			tid[1] = tc.tool[0]
			tid[2] = tc.version[len(tc.version)-1]
			parent := "00-" + tid.String() + "-" + clientSpanID + "-01"
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			id := "id-" + strings.ReplaceAll(tc.name, " ", "-")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Meta: mcp.Meta{"traceparent": parent, "tracestate": "vendor=abc"},
				Arguments: map[string]any{"name": "up__" + tc.tool, "arguments": map[string]any{"id": id}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != (tc.errType != "") {
				t.Fatalf("the call's isError is %v: %s", res.IsError, resultText(res))
			}
			spans := f.spansOf(tid)
			req := one(t, spans, "tools/call "+callToolName)
			call := one(t, spans, "tools/call "+tc.tool)
			if req.Parent().TraceID != tid || req.Parent().SpanID != wantParent || !req.Parent().Remote {
				t.Errorf("the request span's parent is %v, want the client's span %s", req.Parent(), clientSpanID)
			}
			if req.Kind() != tracing.KindServer || call.Kind() != tracing.KindClient {
				t.Errorf("span kinds: request %v, call %v; want server and client", req.Kind(), call.Kind())
			}
			if call.Parent().SpanID != req.SpanContext().SpanID {
				t.Errorf("the call span's parent is %v, want the request span %v", call.Parent().SpanID, req.SpanContext().SpanID)
			}
			for k, want := range map[tracing.Key]string{tracing.KeyMethod: "tools/call", tracing.KeyTool: callToolName,
				tracing.KeyEra: tc.wantEra, tracing.KeyProtocol: tc.version} {
				if got := attrOf(req, k).String(); got != want {
					t.Errorf("request span %s = %q, want %q", k, got, want)
				}
			}
			for k, want := range map[tracing.Key]string{tracing.KeyServer: "up", tracing.KeyTool: tc.tool, tracing.KeyErrorType: tc.errType} {
				if got := attrOf(call, k).String(); got != want {
					t.Errorf("call span %s = %q, want %q", k, got, want)
				}
			}
			if call.Status().Code != tc.wantStatus || req.Status().Code != tc.wantStatus {
				t.Errorf("status: call %v, request %v; want %v for both", call.Status(), req.Status(), tc.wantStatus)
			}
			if tc.errType == "-32603" && !strings.Contains(call.Status().Description, "broken inside") {
				t.Errorf("the call span's status %q does not say what failed", call.Status().Description)
			}
			meta, ok := f.up.seen(id)
			if !ok {
				t.Fatal("the upstream saw no call")
			}
			gotTrace, gotParent := traceparentOf(t, meta)
			if gotTrace != tid || gotParent != call.SpanContext().SpanID {
				t.Errorf("the upstream's traceparent %v names trace %v span %v, want trace %v span %v (the gateway's call span)",
					meta["traceparent"], gotTrace, gotParent, tid, call.SpanContext().SpanID)
			}
			if meta["tracestate"] != "vendor=abc" {
				t.Errorf("the upstream's tracestate is %v, want the client's", meta["tracestate"])
			}
		})
	}

	t.Run("search", func(t *testing.T) {
		cs := f.connect(t, era2025, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		tid := wantTrace
		tid[0] = 0xee
		const query = "echo the id back"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Meta: mcp.Meta{"traceparent": "00-" + tid.String() + "-" + clientSpanID + "-01"},
			Arguments: map[string]any{"query": query, "max_results": 2}})
		if err != nil || res.IsError {
			t.Fatalf("search: %v %v", err, res)
		}
		var out searchOutput
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatal(err)
		}
		spans := f.spansOf(tid)
		req := one(t, spans, "tools/call "+searchToolName)
		s := one(t, spans, "search")
		if s.Parent().SpanID != req.SpanContext().SpanID {
			t.Errorf("the search span's parent is %v, want the request span", s.Parent())
		}
		if got := attrOf(s, tracing.KeyQueryLength).AsInt64(); got != int64(len(query)) {
			t.Errorf("query length %d, want %d", got, len(query))
		}
		if got := attrOf(s, tracing.KeyResults).AsInt64(); got != int64(len(out.Tools)+len(out.More)) || got == 0 {
			t.Errorf("results %d, want the %d tools returned", got, len(out.Tools)+len(out.More))
		}
		if got := attrOf(s, tracing.KeyForm).String(); got != out.Matched {
			t.Errorf("form %q, want %q", got, out.Matched)
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), query) {
				t.Errorf("the search span holds the query text in %s, which is not configured", kv.Key)
			}
		}
	})

	t.Run("built-in", func(t *testing.T) {
		cs := f.connect(t, era2025, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		tid := wantTrace
		tid[0] = 0xbb
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "builtin__glob", Meta: mcp.Meta{"traceparent": "00-" + tid.String() + "-" + clientSpanID + "-01"},
			Arguments: map[string]any{"pattern": "**/*.go"}})
		if err != nil || res.IsError {
			t.Fatalf("glob: %v %v", err, res)
		}
		spans := f.spansOf(tid)
		req := one(t, spans, "tools/call builtin__glob")
		call := one(t, spans, "tools/call glob")
		if call.Parent().SpanID != req.SpanContext().SpanID || call.Kind() != tracing.KindInternal {
			t.Errorf("the built-in call span: parent %v kind %v, want the request span and internal", call.Parent(), call.Kind())
		}
		if !attrOf(call, tracing.KeyBuiltin).AsBool() || attrOf(call, tracing.KeyServer).String() != "builtin" {
			t.Errorf("the built-in call span's attributes %v", call.Attributes())
		}
	})
}

// TestTracingRedactsErrors: an upstream that echoes a secret of the
// configuration in its error does not put it in a span.
func TestTracingRedactsErrors(t *testing.T) {
	t.Parallel()
	f := startTracedGateway(t, nil)
	cs := f.connect(t, era2025, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Meta: mcp.Meta{"traceparent": clientParent},
		Arguments: map[string]any{"name": "up__leak", "arguments": map[string]any{"id": "leak"}}})
	if err != nil || !res.IsError {
		t.Fatalf("call: %v %v, want a tool error", err, res)
	}
	tid, _ := traceIDFromHex(clientTraceID)
	spans := f.spansOf(tid)
	call := one(t, spans, "tools/call leak")
	if call.Status().Code != tracing.StatusError || !strings.Contains(call.Status().Description, "refused") {
		t.Errorf("the call span's status %v, want the error", call.Status())
	}
	for _, s := range f.rec.Ended() {
		desc := s.Status().Description
		for _, kv := range s.Attributes() {
			desc += " " + kv.Value.String()
		}
		if strings.Contains(desc, upstreamSecret) {
			t.Errorf("span %q shows the secret: %s", s.Name(), desc)
		}
	}
}

// TestTracingContextSources: the trace context comes from _meta, else
// from the HTTP headers; a malformed one, wherever it is, starts a new
// trace (and the upstream gets that trace).
func TestTracingContextSources(t *testing.T) {
	t.Parallel()
	f := startTracedGateway(t, nil)
	const headerTrace = "0af7651916cd43dd8448eb211c80319c"
	headerParent := "00-" + headerTrace + "-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name      string
		meta      mcp.Meta
		header    string
		wantTrace string // "" for a new root
	}{
		{name: "meta", meta: mcp.Meta{"traceparent": clientParent}, wantTrace: clientTraceID},
		{name: "header", header: headerParent, wantTrace: headerTrace},
		{name: "meta wins over header", meta: mcp.Meta{"traceparent": clientParent}, header: headerParent, wantTrace: clientTraceID},
		{name: "malformed meta falls back to header", meta: mcp.Meta{"traceparent": "00-xyz-b7ad6b7169203331-01"}, header: headerParent, wantTrace: headerTrace},
		{name: "none", wantTrace: ""},
		{name: "not hex", meta: mcp.Meta{"traceparent": "00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		{name: "zero trace id", meta: mcp.Meta{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}},
		{name: "zero span id", meta: mcp.Meta{"traceparent": "00-" + clientTraceID + "-0000000000000000-01"}},
		{name: "version ff", meta: mcp.Meta{"traceparent": "ff-" + clientTraceID + "-" + clientSpanID + "-01"}},
		{name: "short", meta: mcp.Meta{"traceparent": "00-4bf92f35-00f067aa-01"}},
		{name: "not a string", meta: mcp.Meta{"traceparent": map[string]any{"traceId": clientTraceID}}},
		{name: "huge", meta: mcp.Meta{"traceparent": strings.Repeat("00-", 2000)}},
		{name: "malformed header", header: "00-" + headerTrace + "-b7ad6b7169203331"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h http.Header
			if tc.header != "" {
				h = http.Header{"Traceparent": {tc.header}}
			}
			cs := f.connect(t, era2025, h)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			id := "src-" + strings.ReplaceAll(tc.name, " ", "-")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Meta: tc.meta,
				Arguments: map[string]any{"name": "up__echo", "arguments": map[string]any{"id": id}}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", err, res)
			}
			meta, ok := f.up.seen(id)
			if !ok {
				t.Fatal("the upstream saw no call")
			}
			// Cases share trace ids: the spans are found from the
			// upstream's parent, the gateway's call span.
			got, callID := traceparentOf(t, meta)
			call := f.spanByID(t, callID)
			req := f.spanByID(t, call.Parent().SpanID)
			if req.Name() != "tools/call "+callToolName || req.SpanContext().TraceID != got {
				t.Fatalf("the call span's parent is %q of trace %v, want the request span of trace %v", req.Name(), req.SpanContext().TraceID, got)
			}
			if tc.wantTrace != "" {
				if got.String() != tc.wantTrace || !req.Parent().Remote {
					t.Errorf("trace %v (parent %v), want %s, the client's", got, req.Parent(), tc.wantTrace)
				}
				return
			}
			if got.String() == clientTraceID || got.String() == headerTrace || req.Parent().IsValid() {
				t.Errorf("trace %v with parent %v, want a new root", got, req.Parent())
			}
		})
	}
}

// searchGateway is a gateway over the demo catalog (no servers), traced
// into tp when it is not nil.
func searchGateway(tb testing.TB, tp *tracing.Provider) *Gateway {
	tb.Helper()
	g, err := New(nil, Options{Static: demo.Snapshot(), TracerProvider: tp})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

const benchQuery = "create an issue in a repository"

// TestTracingOffCostsNothing: with tracing off the gateway's search path
// makes no span and allocates less than with tracing on, even when no
// span is sampled (the hooks return before any work: the nil Tracer's
// zero allocations are checked in package tracing). Under the race
// detector sync.Pool drops items at random, and the counts vary by more
// than the two allocations an unsampled span costs: the test is a
// measurement, run without -race (.ci/run does).
func TestTracingOffCostsNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("a measurement of allocations: run without -race (.ci/run does)")
	}
	ctx := context.Background()
	allocs := func(g *Gateway) float64 {
		return testing.AllocsPerRun(200, func() {
			if res, err := g.Search(ctx, benchQuery, 5); err != nil || len(res.Hits) == 0 {
				t.Fatalf("search: %v, %d hits", err, len(res.Hits))
			}
		})
	}
	off := allocs(searchGateway(t, nil))
	rec := &tracing.Recorder{}
	unsampled := allocs(searchGateway(t, tracing.NewProvider(tracing.ProviderOptions{Sampler: tracing.NeverSample, Processor: rec})))
	if len(rec.Ended()) != 0 {
		t.Fatalf("%d spans recorded with a sampler that samples none", len(rec.Ended()))
	}
	recorded := allocs(searchGateway(t, tracing.NewProvider(tracing.ProviderOptions{Processor: &tracing.Recorder{}})))
	t.Logf("allocations per search: off %v, on but unsampled %v, on and recorded %v", off, unsampled, recorded)
	if off >= unsampled || unsampled >= recorded {
		t.Errorf("allocations per search: off %v, unsampled %v, recorded %v; want off < unsampled < recorded", off, unsampled, recorded)
	}
}

// BenchmarkSearchTracing: one ranked search through the gateway with
// tracing off, on with nothing sampled, and on with every span recorded.
func BenchmarkSearchTracing(b *testing.B) {
	for _, bc := range []struct {
		name string
		tp   *tracing.Provider
	}{
		{"off", nil},
		{"unsampled", tracing.NewProvider(tracing.ProviderOptions{Sampler: tracing.NeverSample})},
		{"recorded", tracing.NewProvider(tracing.ProviderOptions{Processor: &tracing.Recorder{}})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := searchGateway(b, bc.tp)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Search(ctx, benchQuery, 5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
