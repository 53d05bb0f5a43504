package tracing

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	traceHex   = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex    = "00f067aa0ba902b7"
	goodParent = "00-" + traceHex + "-" + spanHex + "-01"
)

func TestExtract(t *testing.T) {
	t.Parallel()
	const headerTrace = "0af7651916cd43dd8448eb211c80319c"
	header := http.Header{"Traceparent": {"00-" + headerTrace + "-b7ad6b7169203331-01"}}
	for _, tc := range []struct {
		name      string
		meta      map[string]any
		header    http.Header
		wantTrace string // "" for no remote parent
		wantState string
	}{
		{name: "meta", meta: map[string]any{"traceparent": goodParent, "tracestate": "a=1,b=2"}, wantTrace: traceHex, wantState: "a=1,b=2"},
		{name: "header", header: header, wantTrace: headerTrace},
		{name: "meta first", meta: map[string]any{"traceparent": goodParent}, header: header, wantTrace: traceHex},
		{name: "bad meta, good header", meta: map[string]any{"traceparent": "garbage"}, header: header, wantTrace: headerTrace},
		{name: "nothing", wantTrace: ""},
		{name: "unsampled", meta: map[string]any{"traceparent": "00-" + traceHex + "-" + spanHex + "-00"}, wantTrace: traceHex},
		{name: "future version with more fields", meta: map[string]any{"traceparent": "01-" + traceHex + "-" + spanHex + "-01-extra"}, wantTrace: traceHex},
		{name: "version ff", meta: map[string]any{"traceparent": "ff-" + traceHex + "-" + spanHex + "-01"}},
		{name: "uppercase hex", meta: map[string]any{"traceparent": "00-" + strings.ToUpper(traceHex) + "-" + spanHex + "-01"}},
		{name: "zero trace", meta: map[string]any{"traceparent": "00-" + strings.Repeat("0", 32) + "-" + spanHex + "-01"}},
		{name: "number", meta: map[string]any{"traceparent": 42.0}},
		{name: "nil value", meta: map[string]any{"traceparent": nil}},
		{name: "tracestate alone", meta: map[string]any{"tracestate": "a=1"}},
		{name: "bad tracestate keeps the parent", meta: map[string]any{"traceparent": goodParent, "tracestate": "=,,==bad"}, wantTrace: traceHex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := SpanContextFromContext(Extract(context.Background(), tc.meta, tc.header))
			if tc.wantTrace == "" {
				if sc.IsValid() {
					t.Fatalf("extracted %v, want nothing", sc)
				}
				return
			}
			if !sc.Remote || sc.TraceID.String() != tc.wantTrace {
				t.Fatalf("extracted %v, want remote trace %s", sc, tc.wantTrace)
			}
			if got := sc.TraceState; got != tc.wantState {
				t.Errorf("tracestate %q, want %q", got, tc.wantState)
			}
		})
	}
}

func TestInject(t *testing.T) {
	t.Parallel()
	client := map[string]any{"traceparent": "00-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01", "other": "kept", "tracestate": "old=1"}
	ctx := Extract(context.Background(), map[string]any{"traceparent": goodParent, "tracestate": "v=1"}, nil)
	out := Inject(ctx, client)
	if out["traceparent"] != goodParent || out["tracestate"] != "v=1" || out["other"] != "kept" {
		t.Errorf("Inject = %v, want the context's traceparent and tracestate and the other keys", out)
	}
	if client["traceparent"] == goodParent || client["tracestate"] != "old=1" {
		t.Errorf("Inject changed the map it was given: %v", client)
	}
	if got := Inject(context.Background(), client); got["traceparent"] != client["traceparent"] {
		t.Errorf("without a span context Inject gave %v, want the map as it was", got)
	}
	if got := Inject(context.Background(), nil); got != nil {
		t.Errorf("Inject(nil) without a span context = %v, want nil", got)
	}
}

// TestTracerSpans: the spans a Tracer starts, with their attributes and
// statuses, and that error messages go through Redact.
func TestTracerSpans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		queries bool
	}{{"lengths only", false}, {"query text", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &Recorder{}
			tr := New(NewProvider(ProviderOptions{Processor: rec}), Options{RecordQueries: tc.queries,
				Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "[redacted]") }})
			ctx, req := tr.StartRequest(context.Background(), Request{Method: "tools/call", Tool: "search_tools", Protocol: "2025-11-25", Era: "session",
				Meta: map[string]any{"traceparent": goodParent}})
			sctx, search := tr.StartSearch(ctx, "find issues", []string{"abc"})
			tr.EndSearch(search, "ranked", 3, 7, nil)
			_, call, meta := tr.StartCall(sctx, "github", "create_issue", false, map[string]any{"k": "v"})
			tr.End(call, false, errors.New("token hunter2 refused"), "")
			tr.End(req, true, nil, "")

			spans := map[string]*Span{}
			for _, s := range rec.Ended() {
				spans[s.Name()] = s
			}
			r, s, c := spans["tools/call search_tools"], spans["search"], spans["tools/call create_issue"]
			if r == nil || s == nil || c == nil {
				t.Fatalf("spans %v", spans)
			}
			if r.Parent().TraceID.String() != traceHex || s.Parent().SpanID != r.SpanContext().SpanID || c.Parent().SpanID != s.SpanContext().SpanID {
				t.Errorf("the spans do not form request → search → call under the client's trace")
			}
			if meta["k"] != "v" || meta["traceparent"] != "00-"+traceHex+"-"+c.SpanContext().SpanID.String()+"-01" {
				t.Errorf("the call's _meta %v lacks the call span's traceparent", meta)
			}
			want := map[string]string{"toolsearch.search.query_length": "14", "toolsearch.search.queries": "2",
				"toolsearch.search.form": "ranked", "toolsearch.search.results": "3", "toolsearch.search.total": "7"}
			for _, kv := range s.Attributes() {
				if w, ok := want[string(kv.Key)]; ok && kv.Value.String() != w {
					t.Errorf("search %s = %s, want %s", kv.Key, kv.Value.String(), w)
				}
				delete(want, string(kv.Key))
				if kv.Key == KeyQueryText && !tc.queries {
					t.Errorf("the query text is recorded: %v", kv.Value.String())
				}
				if kv.Key == KeyQueryText && kv.Value.String() != `["find issues","abc"]` {
					t.Errorf("query text %s", kv.Value.String())
				}
			}
			if len(want) > 0 {
				t.Errorf("the search span lacks %v", want)
			}
			if c.Status().Code != StatusError || c.Status().Description != "token [redacted] refused" {
				t.Errorf("call status %v, want the error, redacted", c.Status())
			}
			if r.Status().Code != StatusError || r.Status().Description != ToolError {
				t.Errorf("request status %v, want a tool error", r.Status())
			}
		})
	}
}

// TestNilTracer: a nil Tracer does nothing, and allocates nothing.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	if New(nil, Options{}) != nil {
		t.Fatal("New(nil) is not nil")
	}
	ctx := context.Background()
	meta := map[string]any{"traceparent": goodParent}
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tr.StartRequest(ctx, Request{Method: "tools/call", Meta: meta})
		c, s := tr.StartSearch(c, "query", nil)
		tr.EndSearch(s, "ranked", 1, 1, nil)
		c2, call, m := tr.StartCall(c, "a", "b", false, meta)
		tr.End(call, false, nil, "")
		tr.End(span, false, nil, "")
		if c2 != ctx || span != nil || m["traceparent"] != goodParent {
			t.Fatal("a nil Tracer changed something")
		}
	})
	if allocs != 0 {
		t.Errorf("a nil Tracer allocates %v times a request", allocs)
	}
}

// FuzzExtract: any _meta value and header give a context, never a
// panic; what is extracted is a valid remote span context.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{goodParent, "", "00-", "ff-" + traceHex + "-" + spanHex + "-01", "00-" + traceHex + "-" + spanHex + "-zz",
		"01-" + traceHex + "-" + spanHex + "-01-", strings.Repeat("0", 55), "\x00\xff"} {
		f.Add(s, "a=1", s)
	}
	f.Fuzz(func(t *testing.T, parent, state, header string) {
		ctx := Extract(context.Background(), map[string]any{"traceparent": parent, "tracestate": state}, http.Header{"Traceparent": {header}})
		sc := SpanContextFromContext(ctx)
		if sc.IsValid() != sc.Remote {
			t.Fatalf("extracted %v: valid but not remote, or the reverse", sc)
		}
		out := Inject(ctx, nil)
		if sc.IsValid() {
			back := SpanContextFromContext(Extract(context.Background(), out, nil))
			if back.TraceID != sc.TraceID || back.SpanID != sc.SpanID || back.Flags != sc.Flags || back.TraceState != sc.TraceState {
				t.Fatalf("%v injected and read back as %v", sc, back)
			}
		}
	})
}

// TestClientTextClipped: what a client writes (the tool it names, its
// method and protocol version, its queries, an error that echoes them)
// reaches spans within the stated bounds, valid UTF-8, whatever its size:
// a megabyte-long tool name is not copied into span names nor into
// gen_ai.tool.name.
func TestClientTextClipped(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	for _, tc := range []struct {
		name, text string
	}{
		{"short", "create_issue"},
		{"at the bound", strings.Repeat("a", MaxNameBytes)},
		{"a megabyte", strings.Repeat("a", mb)},
		{"multi-byte", strings.Repeat("é", mb/2)},
		{"four-byte runes", strings.Repeat("𝄞", MaxNameBytes)},
		{"invalid UTF-8", strings.Repeat("\xff\xfe", mb/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &Recorder{}
			tr := New(NewProvider(ProviderOptions{Processor: rec}), Options{RecordQueries: true})
			ctx, req := tr.StartRequest(context.Background(), Request{Method: "tools/" + tc.text, Tool: tc.text, Protocol: tc.text})
			queries := make([]string, 100)
			for i := range queries {
				queries[i] = tc.text
			}
			_, search := tr.StartSearch(ctx, tc.text, queries)
			tr.EndSearch(search, "keyword", 0, 0, errors.New("no tool "+tc.text))
			_, call, _ := tr.StartCall(ctx, "srv", tc.text, false, nil)
			tr.End(call, false, errors.New("unknown tool "+tc.text), tc.text)
			tr.End(req, false, nil, "")

			spans := rec.Ended()
			if len(spans) != 3 {
				t.Fatalf("%d spans", len(spans))
			}
			check := func(what, s string, bound int) {
				t.Helper()
				if len(s) > bound || !utf8.ValidString(s) {
					t.Errorf("%s: %d bytes (valid UTF-8: %v), want at most %d, valid", what, len(s), utf8.ValidString(s), bound)
				}
			}
			intact := len(tc.text) <= MaxNameBytes && utf8.ValidString(tc.text)
			for _, s := range spans {
				check("span name", s.Name(), 2*MaxNameBytes+1) // a method and a tool
				for _, kv := range s.Attributes() {
					if kv.Key == KeyTool && intact && kv.Value.AsString() != tc.text {
						t.Errorf("%s = %q, want the name within the bound as it is", kv.Key, kv.Value.AsString())
					}
				}
				check("status", s.Status().Description, MaxStatusBytes)
				for _, kv := range s.Attributes() {
					switch kv.Value.Type() {
					case TypeString:
						check(string(kv.Key), kv.Value.AsString(), MaxNameBytes)
					case TypeStringSlice:
						list := kv.Value.AsStringSlice()
						if len(list) > MaxQueries {
							t.Errorf("%s: %d queries recorded, want at most %d", kv.Key, len(list), MaxQueries)
						}
						for _, q := range list {
							check(string(kv.Key), q, MaxQueryBytes)
						}
					}
				}
			}
		})
	}
}
