// Package tracing gives the gateway OpenTelemetry traces: spans with
// W3C trace context, carried in an MCP request's _meta or its HTTP
// headers; a Provider that samples them (by trace id ratio, following a
// parent's decision) and hands them to a Batcher, which sends them to an
// Exporter in bounded batches; and the Tracer that starts the gateway's
// spans. It is the small part of the OpenTelemetry API and SDK the
// gateway uses, written here so that the command links neither (package
// otlp holds the exporter serve uses).
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

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// ScopeName is the instrumentation scope of the gateway's spans.
const ScopeName = "github.com/toolsearch/toolsearch/gateway"

// SchemaURL names the version of the OpenTelemetry semantic conventions
// whose keys the gateway's spans and resource use.
const SchemaURL = "https://opentelemetry.io/schemas/1.41.0"

// Attribute keys of the gateway's spans. The MCP and tool keys are those
// of the OpenTelemetry semantic conventions; the others are toolsearch's.
const (
	KeyMethod      Key = "mcp.method.name"
	KeyProtocol    Key = "mcp.protocol.version"
	KeyTool        Key = "gen_ai.tool.name"
	KeyErrorType   Key = "error.type"
	KeyEra         Key = "toolsearch.era"
	KeyServer      Key = "toolsearch.server"
	KeyBuiltin     Key = "toolsearch.builtin"
	KeyQueryCount  Key = "toolsearch.search.queries"
	KeyQueryLength Key = "toolsearch.search.query_length"
	KeyQueryText   Key = "toolsearch.search.query"
	KeyForm        Key = "toolsearch.search.form"
	KeyResults     Key = "toolsearch.search.results"
	KeyTotal       Key = "toolsearch.search.total"
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

// Tracer starts the gateway's spans. Make it with New; nil is off.
type Tracer struct {
	p       *Provider
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
func New(tp *Provider, opts Options) *Tracer {
	if tp == nil {
		return nil
	}
	red := opts.Redact
	if red == nil {
		red = func(s string) string { return s }
	}
	return &Tracer{p: tp, queries: opts.RecordQueries, redact: red}
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
func (t *Tracer) StartRequest(ctx context.Context, r Request) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	ctx = Extract(ctx, r.Meta, r.Header)
	method := clip(r.Method, MaxNameBytes)
	name := method
	var tool string
	if r.Tool != "" {
		tool = clip(r.Tool, MaxNameBytes)
		name += " " + tool
	}
	ctx, span := t.p.Start(ctx, name, KindServer)
	if span.p == nil {
		return ctx, span
	}
	attrs := [4]Attr{KeyMethod.String(method)}
	n := 1
	if tool != "" {
		attrs[n] = KeyTool.String(tool)
		n++
	}
	if r.Protocol != "" {
		attrs[n] = KeyProtocol.String(clip(r.Protocol, MaxNameBytes))
		n++
	}
	if r.Era != "" {
		attrs[n] = KeyEra.String(r.Era)
		n++
	}
	span.SetAttributes(attrs[:n]...)
	return ctx, span
}

// StartSearch starts the span of one search: query and the further
// queries of a multi-query search. Only their lengths are recorded unless
// the tracer records queries; then the text of the first MaxQueries, each
// clipped to MaxQueryBytes.
func (t *Tracer) StartSearch(ctx context.Context, query string, queries []string) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	ctx, span := t.p.Start(ctx, "search", KindInternal)
	if span.p == nil {
		return ctx, span
	}
	n := len(query)
	for _, q := range queries {
		n += len(q)
	}
	span.SetAttributes(KeyQueryLength.Int(n), KeyQueryCount.Int(len(queries)+min(1, len(query))))
	if t.queries {
		texts := make([]string, 0, min(MaxQueries, len(queries)+1))
		for i, q := range append([]string{query}, queries...) {
			if i == MaxQueries {
				break
			}
			texts = append(texts, clip(q, MaxQueryBytes))
		}
		span.SetAttributes(KeyQueryText.StringSlice(texts))
	}
	return ctx, span
}

// EndSearch ends a search span with the form the query took, the hits
// returned and the total matched, or the error.
func (t *Tracer) EndSearch(span *Span, form string, results, total int, err error) {
	if t == nil || span == nil {
		return
	}
	if span.p != nil {
		span.SetAttributes(KeyForm.String(form), KeyResults.Int(results), KeyTotal.Int(total))
		t.fail(span, err, "")
	}
	span.End()
}

// StartCall starts the span of one tool call to server (the gateway's
// built-in tools when builtin), and returns meta with the span's trace
// context in it (traceparent, tracestate), for the _meta of the call: a
// copy when meta is not nil, so that the client's map is left alone.
func (t *Tracer) StartCall(ctx context.Context, server, tool string, builtin bool, meta map[string]any) (context.Context, *Span, map[string]any) {
	if t == nil {
		return ctx, nil, meta
	}
	kind := KindClient
	if builtin {
		kind = KindInternal
	}
	tool = clip(tool, MaxNameBytes)
	ctx, span := t.p.Start(ctx, "tools/call "+tool, kind)
	span.SetAttributes(KeyMethod.String("tools/call"), KeyTool.String(tool), KeyServer.String(server), KeyBuiltin.Bool(builtin))
	if builtin {
		return ctx, span, meta
	}
	return ctx, span, Inject(ctx, meta)
}

// End ends a request or call span: an error, or a tool error (isError),
// marks it failed. errType is the error.type of a failure ("" for the
// error's Go type, or ToolError for a tool error).
func (t *Tracer) End(span *Span, isToolError bool, err error, errType string) {
	if t == nil || span == nil {
		return
	}
	switch {
	case span.p == nil:
	case err != nil:
		t.fail(span, err, errType)
	case isToolError:
		span.SetAttributes(KeyErrorType.String(ToolError))
		span.SetStatus(StatusError, ToolError)
	}
	span.End()
}

// fail marks span failed with err (nothing when err is nil).
func (t *Tracer) fail(span *Span, err error, errType string) {
	if err == nil {
		return
	}
	if errType == "" {
		errType = fmt.Sprintf("%T", err)
	}
	span.SetAttributes(KeyErrorType.String(clip(errType, MaxNameBytes)))
	span.SetStatus(StatusError, clip(t.redact(err.Error()), MaxStatusBytes))
}
