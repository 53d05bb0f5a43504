package otlp

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolsearch/toolsearch/gateway/tracing"
)

// TestSettings checks where spans go and with what, from the
// configuration and the OTEL_EXPORTER_OTLP_* variables, and that a bad
// value is refused by name without showing a header's secret.
func TestSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		endpoint string
		headers  map[string]string
		env      map[string]string
		wantURL  string
		wantHdr  map[string]string
		wantGzip bool
		wantTime time.Duration
		wantErr  string
	}{
		{name: "nothing said", wantURL: defaultEndpoint, wantTime: defaultTimeout},
		{name: "configured endpoint without a path", endpoint: "https://collector:4318", wantURL: "https://collector:4318/v1/traces"},
		{name: "configured endpoint with a path", endpoint: "http://c/x/y", wantURL: "http://c/x/y",
			env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://other/v1/traces"}},
		{name: "traces endpoint as it is", env: map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2"},
			wantURL: "http://t:1/custom"},
		{name: "general endpoint gets the signal path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2/base/"},
			wantURL: "http://g:2/base/v1/traces"},
		{name: "headers from the environment, percent-decoded", env: map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "a=1,x-api-key=sec%20ret", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"},
			wantURL: defaultEndpoint, wantHdr: map[string]string{"b": "2", "a": ""}},
		{name: "configured headers win", headers: map[string]string{"Authorization": "Bearer t"},
			env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1"}, wantURL: defaultEndpoint,
			wantHdr: map[string]string{"Authorization": "Bearer t", "a": ""}},
		{name: "timeout and gzip", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"},
			wantURL: defaultEndpoint, wantGzip: true, wantTime: 2500 * time.Millisecond},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, wantErr: "not an http:// or https:// URL"},
		{name: "grpc scheme", endpoint: "grpc://c:4317", wantErr: "not an http:// or https:// URL"},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, wantErr: "want milliseconds"},
		{name: "bad compression", env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, wantErr: "want gzip or none"},
		{name: "missing CA file", env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantErr: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{name: "header without a value keeps its secret", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key:topsecret"},
			wantErr: "not key=value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := settings(c.endpoint, c.headers, func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), "topsecret") {
					t.Errorf("the error shows the header's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.url != c.wantURL || s.gzip != c.wantGzip {
				t.Errorf("url %s gzip %v, want %s %v", s.url, s.gzip, c.wantURL, c.wantGzip)
			}
			if c.wantTime != 0 && s.timeout != c.wantTime {
				t.Errorf("timeout %v, want %v", s.timeout, c.wantTime)
			}
			for k, want := range c.wantHdr {
				if got := s.header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
	s, err := settings("", nil, func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=sec%20ret"}[k]
	})
	if err != nil || s.header.Get("x-api-key") != "sec ret" {
		t.Errorf("percent-encoded header: %q, %v", s.header.Get("x-api-key"), err)
	}
}

// spanStubs makes three ended spans: a failed client call with
// attributes of each kind (two more dropped past the provider's bound)
// under a remote parent with a tracestate, and a plain internal root, of
// one resource; and a span of another resource.
func spanStubs() []*tracing.Span {
	rec := &tracing.Recorder{}
	res := tracing.NewResource("https://example.com/schema", tracing.Key("service.name").String("svc"))
	p := tracing.NewProvider(tracing.ProviderOptions{Processor: rec, Resource: res, MaxAttributes: 8})
	ctx := tracing.Extract(context.Background(), map[string]any{"traceparent": "00-" + traceHex + "-0900000000000000-01", "tracestate": "k=v"}, nil)
	_, call := p.Start(ctx, "tools/call t1", tracing.KindClient)
	call.SetAttributes(
		tracing.Key("s").String("v"), tracing.Key("i").Int64(42), tracing.Key("b").Bool(true),
		tracing.Key("f").Float64(1.5), tracing.Key("ss").StringSlice([]string{"a", "b"}),
		tracing.Key("no").Bool(false), tracing.Key("zero").Int(0), tracing.Key("empty").String(""),
		tracing.Key("x").Int(1), tracing.Key("y").Int(2),
	)
	call.SetStatus(tracing.StatusError, "upstream failed")
	call.End()
	_, plain := p.Start(context.Background(), "search", tracing.KindInternal)
	plain.End()
	other := tracing.NewProvider(tracing.ProviderOptions{Processor: rec, Resource: tracing.NewResource("", tracing.Key("service.name").String("other"))})
	_, o := other.Start(context.Background(), "other", tracing.KindServer)
	o.End()
	return rec.Ended()
}

// TestExportRequestDecodes checks the encoded request against the
// protocol's own messages: what each field holds after a round trip.
func TestExportRequestDecodes(t *testing.T) {
	t.Parallel()
	spans := spanStubs()
	body := exportRequest(spans)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 2 || len(req.ResourceSpans[0].ScopeSpans) != 1 || len(req.ResourceSpans[1].ScopeSpans) != 1 {
		t.Fatalf("want two resources, one scope each: %v", req)
	}
	rs := req.ResourceSpans[0]
	if rs.Resource.Attributes[0].Key != "service.name" || rs.Resource.Attributes[0].Value.GetStringValue() != "svc" || rs.SchemaUrl != "https://example.com/schema" {
		t.Errorf("resource %v, schema %q", rs.Resource, rs.SchemaUrl)
	}
	if other := req.ResourceSpans[1]; other.Resource.Attributes[0].Value.GetStringValue() != "other" || other.ScopeSpans[0].Spans[0].Name != "other" {
		t.Errorf("the second resource %v", other)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != tracing.ScopeName || ss.SchemaUrl != tracing.SchemaURL || len(ss.Spans) != 2 {
		t.Fatalf("scope %v (schema %q) with %d spans", ss.Scope, ss.SchemaUrl, len(ss.Spans))
	}
	s, want := ss.Spans[0], spans[0]
	sc := want.SpanContext()
	checks := []struct {
		what string
		ok   bool
	}{
		{"trace id", tracing.TraceID(s.TraceId).String() == traceHex},
		{"span id", tracing.SpanID(s.SpanId) == sc.SpanID},
		{"tracestate", s.TraceState == "k=v"},
		{"parent", tracing.SpanID(s.ParentSpanId) == tracing.SpanID{9}},
		{"flags: sampled, parent remote", s.Flags == 0x1|0x100|0x200},
		{"kind", s.Kind == tracepb.Span_SPAN_KIND_CLIENT},
		{"start", s.StartTimeUnixNano == uint64(want.StartTime().UnixNano())},
		{"end", s.EndTimeUnixNano == uint64(want.EndTime().UnixNano()) && s.EndTimeUnixNano >= s.StartTimeUnixNano},
		{"string", s.Attributes[0].Value.GetStringValue() == "v"},
		{"int", s.Attributes[1].Value.GetIntValue() == 42},
		{"bool", s.Attributes[2].Value.GetBoolValue()},
		{"float", s.Attributes[3].Value.GetDoubleValue() == 1.5},
		{"slice", len(s.Attributes[4].Value.GetArrayValue().GetValues()) == 2 && s.Attributes[4].Value.GetArrayValue().Values[1].GetStringValue() == "b"},
		{"zero values are values, not absence", s.Attributes[5].Value.GetValue() != nil && s.Attributes[6].Value.GetValue() != nil &&
			s.Attributes[7].Value.GetValue() != nil && !s.Attributes[5].Value.GetBoolValue() && s.Attributes[6].Value.GetIntValue() == 0},
		{"dropped", len(s.Attributes) == 8 && s.DroppedAttributesCount == 2},
		{"status", s.Status.Code == tracepb.Status_STATUS_CODE_ERROR && s.Status.Message == "upstream failed"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s is wrong: %v", c.what, s)
		}
	}
	plain := ss.Spans[1]
	if plain.ParentSpanId != nil || plain.Kind != tracepb.Span_SPAN_KIND_INTERNAL || plain.Status.Code != tracepb.Status_STATUS_CODE_UNSET || plain.Flags != 0x1|0x100 || plain.TraceState != "" {
		t.Errorf("plain span %v", plain)
	}
}

// TestExporterRetries checks the exporter against a collector that is
// unavailable twice (once asking for a one-second wait) and then takes
// the gzip-compressed request; and that a 400 is not retried.
func TestExporterRetries(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	got := make(chan *coltracepb.ExportTraceServiceRequest, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case 2:
			http.Error(w, "busy", http.StatusTooManyRequests)
			return
		}
		if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("x-k") != "v" {
			http.Error(w, "headers", http.StatusBadRequest)
			return
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(zr)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- req
	}))
	defer srv.Close()
	e := newExporter(exporterSettings{url: srv.URL, header: http.Header{"X-K": {"v"}}, gzip: true, timeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.ExportSpans(ctx, spanStubs()); err != nil {
		t.Fatal(err)
	}
	if req := <-got; len(req.ResourceSpans) != 2 || calls.Load() != 3 {
		t.Errorf("%d calls, request %v", calls.Load(), req)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, strings.Repeat("no ", 1<<20), http.StatusBadRequest)
	}))
	defer bad.Close()
	calls.Store(0)
	err := newExporter(exporterSettings{url: bad.URL, header: http.Header{}, timeout: 5 * time.Second}).ExportSpans(ctx, spanStubs())
	if err == nil || !strings.Contains(err.Error(), "400") || len(err.Error()) > 400 || calls.Load() != 1 {
		t.Errorf("a 400 gave %d calls and error %.500v; want one call and a short error naming the status", calls.Load(), err)
	}
}

// TestExporterShutdown checks that an export after Shutdown fails at once
// and that a collector that never answers gives up when ctx ends.
func TestExporterShutdown(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	e := newExporter(exporterSettings{url: srv.URL, header: http.Header{}, timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := e.ExportSpans(ctx, spanStubs()); err == nil {
		t.Error("an export to a collector that never answers succeeded")
	}
	_ = e.Shutdown(context.Background())
	if err := e.ExportSpans(context.Background(), spanStubs()); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("export after shutdown: %v", err)
	}
}
