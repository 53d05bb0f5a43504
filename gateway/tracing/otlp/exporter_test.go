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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
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

// spanStubs makes two spans of one resource in two scopes: a failed
// client call with attributes of each kind, an event and a link, under a
// remote parent, and a plain internal span.
func spanStubs() []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{1, 2, 3}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled, Remote: true})
	res := resource.NewSchemaless(attribute.String("service.name", "svc"))
	start := time.Unix(1700000000, 5)
	stubs := tracetest.SpanStubs{
		{
			Name:        "tools/call t1",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{7}, TraceFlags: trace.FlagsSampled}),
			Parent:      parent,
			SpanKind:    trace.SpanKindClient,
			StartTime:   start,
			EndTime:     start.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{
				attribute.String("s", "v"), attribute.Int64("i", 42), attribute.Bool("b", true),
				attribute.Float64("f", 1.5), attribute.StringSlice("ss", []string{"a", "b"}),
				attribute.Bool("no", false), attribute.Int64("zero", 0), attribute.String("empty", ""),
			},
			Events:               []sdktrace.Event{{Name: "retry", Time: start, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}},
			Links:                []sdktrace.Link{{SpanContext: parent}},
			Status:               sdktrace.Status{Code: codes.Error, Description: "upstream failed"},
			DroppedAttributes:    3,
			Resource:             res,
			InstrumentationScope: instrumentationScope("a"),
		},
		{
			Name:                 "search",
			SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{8}}),
			SpanKind:             trace.SpanKindInternal,
			StartTime:            start,
			EndTime:              start,
			Resource:             res,
			InstrumentationScope: instrumentationScope("b"),
		},
	}
	return stubs.Snapshots()
}

// TestExportRequestDecodes checks the encoded request against the
// protocol's own messages: what each field holds after a round trip.
func TestExportRequestDecodes(t *testing.T) {
	t.Parallel()
	body := exportRequest(spanStubs())
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 2 {
		t.Fatalf("want one resource with two scopes: %v", req)
	}
	rs := req.ResourceSpans[0]
	if rs.Resource.Attributes[0].Key != "service.name" || rs.Resource.Attributes[0].Value.GetStringValue() != "svc" {
		t.Errorf("resource %v", rs.Resource)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "a" || ss.Scope.Version != "v1" || len(ss.Spans) != 1 {
		t.Fatalf("scope %v with %d spans", ss.Scope, len(ss.Spans))
	}
	s := ss.Spans[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"trace id", trace.TraceID(s.TraceId) == trace.TraceID{1, 2, 3}},
		{"span id", trace.SpanID(s.SpanId) == trace.SpanID{7}},
		{"parent", trace.SpanID(s.ParentSpanId) == trace.SpanID{9}},
		{"flags: sampled, parent remote", s.Flags == 0x1|0x100|0x200},
		{"kind", s.Kind == tracepb.Span_SPAN_KIND_CLIENT},
		{"start", s.StartTimeUnixNano == 1700000000_000000005},
		{"end", s.EndTimeUnixNano == 1700000000_001000005},
		{"string", s.Attributes[0].Value.GetStringValue() == "v"},
		{"int", s.Attributes[1].Value.GetIntValue() == 42},
		{"bool", s.Attributes[2].Value.GetBoolValue()},
		{"float", s.Attributes[3].Value.GetDoubleValue() == 1.5},
		{"slice", len(s.Attributes[4].Value.GetArrayValue().GetValues()) == 2 && s.Attributes[4].Value.GetArrayValue().Values[1].GetStringValue() == "b"},
		{"zero values are values, not absence", s.Attributes[5].Value.GetValue() != nil && s.Attributes[6].Value.GetValue() != nil &&
			s.Attributes[7].Value.GetValue() != nil && !s.Attributes[5].Value.GetBoolValue() && s.Attributes[6].Value.GetIntValue() == 0},
		{"dropped", s.DroppedAttributesCount == 3},
		{"event", len(s.Events) == 1 && s.Events[0].Name == "retry" && s.Events[0].Attributes[0].Value.GetIntValue() == 1},
		{"link", len(s.Links) == 1 && trace.SpanID(s.Links[0].SpanId) == trace.SpanID{9}},
		{"status", s.Status.Code == tracepb.Status_STATUS_CODE_ERROR && s.Status.Message == "upstream failed"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s is wrong: %v", c.what, s)
		}
	}
	plain := rs.ScopeSpans[1].Spans[0]
	if plain.ParentSpanId != nil || plain.Kind != tracepb.Span_SPAN_KIND_INTERNAL || plain.Status.Code != tracepb.Status_STATUS_CODE_UNSET || plain.Flags != 0x100 {
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
	if req := <-got; len(req.ResourceSpans) != 1 || calls.Load() != 3 {
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

func instrumentationScope(name string) instrumentation.Scope {
	return instrumentation.Scope{Name: name, Version: "v1"}
}
