package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// defaultEndpoint is where spans go when neither the configuration nor
// the environment says.
const defaultEndpoint = "http://localhost:4318/v1/traces"

// defaultTimeout bounds one export when OTEL_EXPORTER_OTLP_TIMEOUT does
// not say.
const defaultTimeout = 10 * time.Second

// exporter posts spans to an OTLP/HTTP collector as protobuf: the
// ExportTraceServiceRequest of the OTLP specification, one POST a batch,
// retried with backoff on the statuses the specification calls
// retryable. It is the one piece of the OpenTelemetry exporter the
// gateway needs, written against the protocol's messages so that the
// command links no gRPC.
type exporter struct {
	url     string
	header  http.Header
	gzip    bool
	client  *http.Client
	stopped atomic.Bool
}

// exporterSettings says where and how spans are posted.
type exporterSettings struct {
	url     string
	header  http.Header
	gzip    bool
	timeout time.Duration
	tls     *tls.Config
}

// settings reads the configured endpoint and headers, and the
// OTEL_EXPORTER_OTLP_* variables for what the configuration leaves out:
// the endpoint (TRACES_ENDPOINT as it is, ENDPOINT with /v1/traces
// joined), headers, timeout (milliseconds), compression (gzip or none),
// and certificates (CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY: PEM
// files). A TRACES_ variable wins over its general form.
func settings(endpoint string, headers map[string]string, getenv func(string) string) (exporterSettings, error) {
	env := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	s := exporterSettings{header: http.Header{}, timeout: defaultTimeout}
	switch {
	case endpoint != "":
		u, err := url.Parse(endpoint)
		if err != nil {
			return s, fmt.Errorf("the endpoint %q: %w", endpoint, err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		s.url = u.String()
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		s.url = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		s.url = strings.TrimRight(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	default:
		s.url = defaultEndpoint
	}
	if u, err := url.Parse(s.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("the endpoint %q is not an http:// or https:// URL with a host", s.url)
	}
	if len(headers) > 0 {
		for k, v := range headers {
			s.header.Set(k, v)
		}
	} else if h := env("HEADERS"); h != "" {
		for _, pair := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(pair, "=")
			key, kerr := url.PathUnescape(strings.TrimSpace(k))
			val, verr := url.PathUnescape(strings.TrimSpace(v))
			if !ok || key == "" || kerr != nil || verr != nil {
				// The value may be a secret: name the position, not the text.
				return s, errors.New("OTEL_EXPORTER_OTLP_HEADERS: a header is not key=value (percent-encoded)")
			}
			s.header.Set(key, val)
		}
	}
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return s, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: want milliseconds, above zero", v)
		}
		s.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := env("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		s.gzip = true
	default:
		return s, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%q: want gzip or none", v)
	}
	tlsCfg, err := tlsConfig(env("CERTIFICATE"), env("CLIENT_CERTIFICATE"), env("CLIENT_KEY"))
	if err != nil {
		return s, err
	}
	s.tls = tlsCfg
	return s, nil
}

// tlsConfig reads the certificate files named, nil when none is.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// newExporter returns an exporter posting as s says.
func newExporter(s exporterSettings) *exporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.tls != nil {
		tr.TLSClientConfig = s.tls
	}
	return &exporter{url: s.url, header: s.header, gzip: s.gzip, client: &http.Client{Transport: tr, Timeout: s.timeout}}
}

// ExportSpans posts spans as one request, retrying while ctx lasts when
// the collector answers 429, 502, 503 or 504 or cannot be reached.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errors.New("otlp: the exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := exportRequest(spans)
	if err != nil {
		return fmt.Errorf("otlp: encoding %d spans: %w", len(spans), err)
	}
	if e.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("otlp: compressing: %w", err)
		}
		body = b.Bytes()
	}
	wait := time.Second
	for {
		retry, after, err := e.post(ctx, body)
		if err == nil || !retry {
			return err
		}
		if after > 0 {
			wait = after
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// post sends one request; it says whether a failure is worth a retry and
// how long the collector asked to wait.
func (e *exporter) post(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("otlp: %w", err)
	}
	req.Header = e.header.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("otlp: posting to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: the collector at %s answered %s", e.url, resp.Status)
	if len(msg) > 0 && !strings.Contains(resp.Header.Get("Content-Type"), "protobuf") {
		err = fmt.Errorf("%w: %s", err, strings.Join(strings.Fields(utf8cut.Prefix(string(msg), 200)), " "))
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(min(s, 300)) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// Shutdown stops the exporter: later exports fail at once.
func (e *exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}

// exportRequest encodes an ExportTraceServiceRequest: its one field,
// resource_spans (1), repeated, each the spans of one resource grouped by
// instrumentation scope.
func exportRequest(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type scopeKey struct {
		name, version, schema string
		attrs                 attribute.Distinct
	}
	var order []*tracepb.ResourceSpans
	byResource := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[attribute.Distinct]map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		rs := byResource[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: resourceProto(res), SchemaUrl: res.SchemaURL()}
			byResource[rk], byScope[rk] = rs, map[scopeKey]*tracepb.ScopeSpans{}
			order = append(order, rs)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{sc.Name, sc.Version, sc.SchemaURL, sc.Attributes.Equivalent()}
		ss := byScope[rk][sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: scopeProto(sc), SchemaUrl: sc.SchemaURL}
			byScope[rk][sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	var out []byte
	for _, rs := range order {
		b, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

func resourceProto(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: attributes(r.Attributes())}
}

func scopeProto(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: attributes(s.Attributes.ToSlice())}
}

// spanProto is one span as OTLP has it.
func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   spanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attributes(s.Attributes()),
		DroppedAttributesCount: uint32(max(0, s.DroppedAttributes())),
		DroppedEventsCount:     uint32(max(0, s.DroppedEvents())),
		DroppedLinksCount:      uint32(max(0, s.DroppedLinks())),
		Status:                 statusProto(s.Status()),
	}
	if parent := s.Parent(); parent.SpanID().IsValid() {
		pid := parent.SpanID()
		p.ParentSpanId = pid[:]
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			Name:                   ev.Name,
			TimeUnixNano:           unixNano(ev.Time),
			Attributes:             attributes(ev.Attributes),
			DroppedAttributesCount: uint32(max(0, ev.DroppedAttributeCount)),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             attributes(l.Attributes),
			DroppedAttributesCount: uint32(max(0, l.DroppedAttributeCount)),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return p
}

// spanFlags carries the W3C trace flags and whether the parent (or the
// linked span) came from another process.
func spanFlags(tf trace.TraceFlags, other trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if other.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func statusProto(s sdktrace.Status) *tracepb.Status {
	switch s.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return &tracepb.Status{}
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(0, t.UnixNano()))
}

// attributes converts attributes, each value to its OTLP kind.
func attributes(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), func(b bool) *commonpb.AnyValue { return anyValue(attribute.BoolValue(b)) })
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), func(i int64) *commonpb.AnyValue { return anyValue(attribute.Int64Value(i)) })
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), func(f float64) *commonpb.AnyValue { return anyValue(attribute.Float64Value(f)) })
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), func(s string) *commonpb.AnyValue { return anyValue(attribute.StringValue(s)) })
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}

func array[T any](xs []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue {
	vals := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vals[i] = one(x)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
}
