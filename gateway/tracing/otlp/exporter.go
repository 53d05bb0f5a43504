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
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/toolsearch/toolsearch/gateway/tracing"
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
// retryable. It encodes the protocol's messages field by field, so that
// the command links neither gRPC nor the protobuf runtime.
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
func (e *exporter) ExportSpans(ctx context.Context, spans []*tracing.Span) error {
	if e.stopped.Load() {
		return errors.New("otlp: the exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	body := exportRequest(spans)
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
// resource_spans (1), repeated, each the spans of one resource, in one
// scope (the gateway's). The field numbers are those of the OTLP protocol
// files (opentelemetry/proto/trace/v1/trace.proto, common/v1/common.proto,
// resource/v1/resource.proto); the tests decode the result with the
// protocol's generated messages.
func exportRequest(spans []*tracing.Span) []byte {
	type resourceSpans struct {
		res   *tracing.Resource
		spans pb
	}
	var order []*resourceSpans
	byResource := map[*tracing.Resource]*resourceSpans{}
	for _, s := range spans {
		rs := byResource[s.Resource()]
		if rs == nil {
			rs = &resourceSpans{res: s.Resource()}
			byResource[rs.res] = rs
			order = append(order, rs)
		}
		rs.spans = rs.spans.msg(2, spanProto(s)) // ScopeSpans.spans
	}
	var scope pb
	scope = scope.str(1, tracing.ScopeName) // InstrumentationScope.name
	var out pb
	for _, rs := range order {
		var res pb
		res = res.attributes(1, rs.res.Attributes()) // Resource.attributes
		var ss pb
		ss = ss.msg(1, scope).raw(rs.spans).str(3, tracing.SchemaURL) // ScopeSpans: scope, spans, schema_url
		var r pb
		r = r.msg(1, res).msg(2, ss).str(3, rs.res.SchemaURL()) // ResourceSpans: resource, scope_spans, schema_url
		out = out.msg(1, r)                                     // ExportTraceServiceRequest.resource_spans
	}
	return out
}

// spanProto encodes one span (opentelemetry.proto.trace.v1.Span).
func spanProto(s *tracing.Span) pb {
	sc, parent := s.SpanContext(), s.Parent()
	var p pb
	p = p.bytes(1, sc.TraceID[:]).bytes(2, sc.SpanID[:]).str(3, sc.TraceState)
	if parent.SpanID.IsValid() {
		p = p.bytes(4, parent.SpanID[:])
	}
	p = p.str(5, s.Name()).
		varint(6, uint64(max(0, s.Kind()))).
		fixed64(7, unixNano(s.StartTime())).
		fixed64(8, unixNano(s.EndTime())).
		attributes(9, s.Attributes()).
		varint(10, uint64(max(0, s.DroppedAttributes())))
	var st pb
	switch status := s.Status(); status.Code {
	case tracing.StatusError:
		st = st.str(2, status.Description).varint(3, statusError)
	case tracing.StatusOK:
		st = st.varint(3, statusOK)
	}
	p = p.msg(15, st)
	return p.fixed32(16, spanFlags(sc.Flags, parent))
}

// The OTLP enums' values (Status.StatusCode, SpanFlags); tracing.Kind
// numbers span kinds as Span.SpanKind does.
const (
	statusOK    = 1
	statusError = 2

	flagsHasIsRemote = 0x100
	flagsIsRemote    = 0x200
)

// spanFlags carries the W3C trace flags and whether the parent came from
// another process.
func spanFlags(tf tracing.TraceFlags, parent tracing.SpanContext) uint32 {
	f := uint32(tf) | flagsHasIsRemote
	if parent.Remote {
		f |= flagsIsRemote
	}
	return f
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(0, t.UnixNano()))
}

// pb is a protobuf message being encoded; each method appends a field,
// leaving out a scalar at its zero value as proto3 does.
type pb []byte

func (b pb) raw(fields pb) pb { return append(b, fields...) }

func (b pb) msg(num protowire.Number, m pb) pb {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func (b pb) bytes(num protowire.Number, v []byte) pb {
	if len(v) == 0 {
		return b
	}
	return b.msg(num, v)
}

func (b pb) str(num protowire.Number, s string) pb {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func (b pb) varint(num protowire.Number, v uint64) pb {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func (b pb) fixed64(num protowire.Number, v uint64) pb {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func (b pb) fixed32(num protowire.Number, v uint32) pb {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

// attributes appends each attribute as a KeyValue (key 1, value 2).
func (b pb) attributes(num protowire.Number, kvs []tracing.Attr) pb {
	for _, kv := range kvs {
		var e pb
		b = b.msg(num, e.str(1, string(kv.Key)).msg(2, anyValue(kv.Value)))
	}
	return b
}

// anyValue encodes an AnyValue. Its value is a oneof, so a zero value is
// written too: false, 0 and "" are values, not absence.
func anyValue(v tracing.Value) pb {
	var b pb
	switch v.Type() {
	case tracing.TypeBool:
		var n uint64
		if v.AsBool() {
			n = 1
		}
		return protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), n)
	case tracing.TypeInt64:
		return protowire.AppendVarint(protowire.AppendTag(b, 3, protowire.VarintType), uint64(v.AsInt64()))
	case tracing.TypeFloat64:
		return protowire.AppendFixed64(protowire.AppendTag(b, 4, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case tracing.TypeStringSlice:
		var arr pb
		for _, s := range v.AsStringSlice() { // ArrayValue.values, each an AnyValue
			var e pb
			e = protowire.AppendString(protowire.AppendTag(e, 1, protowire.BytesType), s)
			arr = arr.msg(1, e)
		}
		return b.msg(5, arr)
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, v.AsString())
}
