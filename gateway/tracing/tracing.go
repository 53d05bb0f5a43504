// Package tracing gives the gateway OpenTelemetry traces: the tracer
// provider serve builds from toolsearch.tracing (an OTLP/HTTP exporter,
// batched, sampled), the W3C trace context carried in an MCP request's
// _meta, and the spans the gateway starts.
//
// A client request gets a server span named for its MCP method (and tool,
// for tools/call); a search under it gets a span with the query form, the
// query length and the result count; a tool call the gateway makes to an
// upstream server (or to a built-in tool) gets a span of its own, whose
// context goes to the server in the _meta of the call. The trace context
// of a request is read from its _meta ("traceparent", "tracestate", as
// MCP clients put them), else from the HTTP headers of a streamable HTTP
// request; a malformed one is ignored and the request starts a new trace.
//
// What a client writes reaches spans clipped: the tool it names, its MCP
// method and protocol version to MaxNameBytes, the text of each recorded
// query to MaxQueryBytes (at most MaxQueries of them), an error message to
// MaxStatusBytes, each cut at a rune boundary and made valid UTF-8. Spans
// wait in memory while a collector is slow and are all sent to it, so a
// client's megabyte-long tool name must not be copied into either.
//
// A nil *Tracer is tracing turned off: every method is a no-op that
// returns its context unchanged, and allocates nothing.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// ScopeName is the instrumentation scope of the gateway's spans.
const ScopeName = "github.com/toolsearch/toolsearch/gateway"

// Attribute keys of the gateway's spans. The MCP and tool keys are those
// of the OpenTelemetry semantic conventions; the others are toolsearch's.
const (
	KeyMethod      = semconv.McpMethodNameKey      // mcp.method.name
	KeyProtocol    = semconv.McpProtocolVersionKey // mcp.protocol.version
	KeyTool        = semconv.GenAIToolNameKey      // gen_ai.tool.name
	KeyErrorType   = semconv.ErrorTypeKey          // error.type
	KeyEra         = attribute.Key("toolsearch.era")
	KeyServer      = attribute.Key("toolsearch.server")
	KeyBuiltin     = attribute.Key("toolsearch.builtin")
	KeyQueryCount  = attribute.Key("toolsearch.search.queries")
	KeyQueryLength = attribute.Key("toolsearch.search.query_length")
	KeyQueryText   = attribute.Key("toolsearch.search.query")
	KeyForm        = attribute.Key("toolsearch.search.form")
	KeyResults     = attribute.Key("toolsearch.search.results")
	KeyTotal       = attribute.Key("toolsearch.search.total")
)

// Bounds on the client's text a span holds, in bytes, "…" included.
const (
	// MaxNameBytes bounds a tool name, an MCP method and a protocol
	// version, in span names and attributes.
	MaxNameBytes = 128
	// MaxQueryBytes bounds the text of one query recorded in a search span
	// (RecordQueries).
	MaxQueryBytes = 256
	// MaxQueries bounds how many queries' text a search span records.
	MaxQueries = 16
	// MaxStatusBytes bounds the error message of a failed span's status.
	MaxStatusBytes = 1024
)

// clip returns s valid UTF-8 within n bytes: cut at a rune boundary and
// ended with "…" when it was longer.
func clip(s string, n int) string {
	if len(s) <= n {
		if utf8.ValidString(s) {
			return s
		}
		return clip(strings.ToValidUTF8(s, "\uFFFD"), n)
	}
	const more = "…"
	return strings.ToValidUTF8(utf8cut.Prefix(s, n-len(more)), "") + more
}

// ToolError is the error.type of a call whose result is a tool error
// (isError), as the semantic conventions name it.
const ToolError = "tool_error"

// propagator reads and writes W3C trace context (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// Tracer starts the gateway's spans. Make it with New; nil is off.
type Tracer struct {
	tracer  trace.Tracer
	queries bool
	redact  func(string) string
}

// Options configure a Tracer.
type Options struct {
	// RecordQueries puts the text of search queries in search spans.
	RecordQueries bool
	// Redact, when set, is applied to every error message a span records
	// (an upstream's error may echo a secret of the configuration).
	Redact func(string) string
}

// New returns a Tracer over tp, or nil (off) when tp is nil.
func New(tp trace.TracerProvider, opts Options) *Tracer {
	if tp == nil {
		return nil
	}
	red := opts.Redact
	if red == nil {
		red = func(s string) string { return s }
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), queries: opts.RecordQueries, redact: red}
}

// Request is one client request: method, the tool of a tools/call (""
// otherwise), the protocol version the request speaks and the era it
// belongs to ("session" or "per-request"), and where its trace context may
// come from.
type Request struct {
	Method   string
	Tool     string
	Protocol string
	Era      string
	Meta     map[string]any
	Header   http.Header
}

// StartRequest starts the server span of a client request, a child of the
// trace context the request carries (else a new root).
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	ctx = Extract(ctx, r.Meta, r.Header)
	method := clip(r.Method, MaxNameBytes)
	name := method
	attrs := []attribute.KeyValue{KeyMethod.String(method)}
	if r.Tool != "" {
		tool := clip(r.Tool, MaxNameBytes)
		name += " " + tool
		attrs = append(attrs, KeyTool.String(tool))
	}
	if r.Protocol != "" {
		attrs = append(attrs, KeyProtocol.String(clip(r.Protocol, MaxNameBytes)))
	}
	if r.Era != "" {
		attrs = append(attrs, KeyEra.String(r.Era))
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// StartSearch starts the span of one search: query and the further
// queries of a multi-query search. Only their lengths are recorded unless
// the tracer records queries; then the text of the first MaxQueries, each
// clipped to MaxQueryBytes.
func (t *Tracer) StartSearch(ctx context.Context, query string, queries []string) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	n := len(query)
	for _, q := range queries {
		n += len(q)
	}
	attrs := []attribute.KeyValue{KeyQueryLength.Int(n), KeyQueryCount.Int(len(queries) + min(1, len(query)))}
	if t.queries {
		texts := make([]string, 0, min(MaxQueries, len(queries)+1))
		for i, q := range append([]string{query}, queries...) {
			if i == MaxQueries {
				break
			}
			texts = append(texts, clip(q, MaxQueryBytes))
		}
		attrs = append(attrs, KeyQueryText.StringSlice(texts))
	}
	return t.tracer.Start(ctx, "search", trace.WithAttributes(attrs...))
}

// EndSearch ends a search span with the form the query took, the hits
// returned and the total matched, or the error.
func (t *Tracer) EndSearch(span trace.Span, form string, results, total int, err error) {
	if t == nil || span == nil {
		return
	}
	span.SetAttributes(KeyForm.String(form), KeyResults.Int(results), KeyTotal.Int(total))
	t.fail(span, err, "")
	span.End()
}

// StartCall starts the span of one tool call to server (the gateway's
// built-in tools when builtin), and returns meta with the span's trace
// context in it (traceparent, tracestate), for the _meta of the call: a
// copy when meta is not nil, so that the client's map is left alone.
func (t *Tracer) StartCall(ctx context.Context, server, tool string, builtin bool, meta map[string]any) (context.Context, trace.Span, map[string]any) {
	if t == nil {
		return ctx, nil, meta
	}
	kind := trace.SpanKindClient
	if builtin {
		kind = trace.SpanKindInternal
	}
	tool = clip(tool, MaxNameBytes)
	ctx, span := t.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(kind), trace.WithAttributes(
		KeyMethod.String("tools/call"), KeyTool.String(tool), KeyServer.String(server), KeyBuiltin.Bool(builtin)))
	if builtin {
		return ctx, span, meta
	}
	return ctx, span, Inject(ctx, meta)
}

// End ends a request or call span: an error, or a tool error (isError),
// marks it failed. errType is the error.type of a failure ("" for the
// error's Go type, or ToolError for a tool error).
func (t *Tracer) End(span trace.Span, isToolError bool, err error, errType string) {
	if t == nil || span == nil {
		return
	}
	switch {
	case err != nil:
		t.fail(span, err, errType)
	case isToolError:
		span.SetAttributes(KeyErrorType.String(ToolError))
		span.SetStatus(codes.Error, ToolError)
	}
	span.End()
}

// fail marks span failed with err (nothing when err is nil).
func (t *Tracer) fail(span trace.Span, err error, errType string) {
	if err == nil {
		return
	}
	if errType == "" {
		errType = fmt.Sprintf("%T", err)
	}
	span.SetAttributes(KeyErrorType.String(clip(errType, MaxNameBytes)))
	span.SetStatus(codes.Error, clip(t.redact(err.Error()), MaxStatusBytes))
}

// Extract returns ctx with the remote span context a request carries: its
// _meta's traceparent and tracestate when they are valid, else those of
// the HTTP headers (nil for stdio). A missing or malformed trace context
// leaves ctx unchanged.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if meta != nil {
		if c := propagator.Extract(ctx, MetaCarrier(meta)); trace.SpanContextFromContext(c).IsRemote() {
			return c
		}
	}
	if header != nil {
		return propagator.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

// Inject returns meta with ctx's span context written into it
// (traceparent, and tracestate when it has one), replacing any the client
// sent. meta is copied first, never changed; a ctx without a valid span
// context returns meta as it was.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		if k != traceparent && k != tracestate {
			out[k] = v
		}
	}
	propagator.Inject(ctx, MetaCarrier(out))
	return out
}

// The _meta keys of W3C trace context.
const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
)

// MetaCarrier reads and writes trace context in an MCP _meta, whose
// values are JSON: a value that is not a string reads as absent.
type MetaCarrier map[string]any

// Get returns the string value of key, or "".
func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set sets key to value.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys whose values are strings.
func (m MetaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if _, ok := v.(string); ok {
			out = append(out, k)
		}
	}
	return out
}
