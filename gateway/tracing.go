package gateway

// Traces (package tracing). With Options.TracerProvider set, every client
// request gets a span (traceMiddleware), every search one below it
// (searchMany), and every tool call the gateway makes one more: to an
// upstream server (callOnce), whose trace context goes in the call's
// _meta, or to a built-in tool (callBuiltin). With it unset g.tracer is nil,
// the middleware is not installed, and the other hooks return at once.

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/tracing"
)

// newTracer is the gateway's tracer for opts (nil: tracing off). Error
// messages in spans go through the configuration's redaction.
func (g *Gateway) newTracer(opts Options) *tracing.Tracer {
	return tracing.New(opts.TracerProvider, tracing.Options{
		RecordQueries: g.cfg.Gateway.Tracing.RecordQueries,
		Redact:        func(s string) string { return g.secrets().String(s) },
	})
}

// traceMiddleware starts the span of each client request, a child of the
// trace context the request carries in its _meta or HTTP headers. It is
// installed only when tracing is on.
func (s *session) traceMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	tr := s.g.tracer
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if clientera.IsNotification(method) {
			return next(ctx, method, req)
		}
		meta := clientera.Meta(req)
		r := tracing.Request{Method: method, Meta: meta, Protocol: clientera.Version(meta)}
		if r.Protocol == "" {
			s.mu.Lock()
			r.Protocol = s.era
			s.mu.Unlock()
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil && method == "initialize" {
				r.Protocol = p.ProtocolVersion
			}
		}
		if r.Protocol != "" {
			r.Era = clientera.Era(r.Protocol)
		}
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
			r.Tool = p.Name
		}
		if extra := req.GetExtra(); extra != nil {
			r.Header = extra.Header
		}
		ctx, span := tr.StartRequest(ctx, r)
		res, err := next(ctx, method, req)
		ctr, _ := res.(*mcp.CallToolResult)
		tr.End(span, ctr != nil && ctr.IsError, err, errorType(err))
		return res, err
	}
}

// errorType is the error.type of a failed request or call: the JSON-RPC
// error code, "timeout" or "cancelled", else "_OTHER" (as the semantic
// conventions have it).
func errorType(err error) string {
	var je *jsonrpc.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &je):
		return strconv.FormatInt(je.Code, 10)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}
