package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/tracing"
)

const (
	traceHex   = "4bf92f3577b34da6a3ce929d0e0e4736"
	goodParent = "00-" + traceHex + "-00f067aa0ba902b7-01"
)

// otlpReceiver is a loopback OTLP/HTTP receiver: what it was posted.
type otlpReceiver struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	headers  []http.Header
	paths    []string
	got      chan struct{}
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	req := &coltracepb.ExportTraceServiceRequest{}
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
		http.Error(w, "want a protobuf ExportTraceServiceRequest", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.requests = append(o.requests, req)
	o.headers = append(o.headers, r.Header.Clone())
	o.paths = append(o.paths, r.URL.Path)
	o.mu.Unlock()
	select {
	case o.got <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

// TestProviderExports: the provider of a configuration posts OTLP
// protobuf to the endpoint, with its headers and service name, and the
// spans as they were.
func TestProviderExports(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, wantPath string
	}{
		{"no path", "", "/v1/traces"},
		{"own path", "/collector/traces", "/collector/traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv := &otlpReceiver{got: make(chan struct{}, 1)}
			srv := httptest.NewServer(rcv)
			t.Cleanup(srv.Close)
			cfg, err := config.Parse("t.json", []byte(`{"toolsearch": {"tracing": {"endpoint": "`+srv.URL+tc.path+`",
				"headers": {"x-api-key": "${KEY}"}, "serviceName": "gw-under-test"}}}`),
				func(k string) (string, bool) { return "k-12345", k == "KEY" })
			if err != nil {
				t.Fatal(err)
			}
			tp, err := NewProvider(cfg.Gateway.Tracing, "v9.9.9", nil)
			if err != nil {
				t.Fatal(err)
			}
			tr := tracing.New(tp, tracing.Options{})
			ctx, req := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/call", Tool: "t1", Meta: map[string]any{"traceparent": goodParent}})
			_, call, _ := tr.StartCall(ctx, "srv", "t1", false, nil)
			tr.End(call, true, nil, "")
			tr.End(req, false, nil, "")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil { // sends what is batched
				t.Fatal(err)
			}
			select {
			case <-rcv.got:
			case <-sctx.Done():
				t.Fatal("nothing was posted")
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.paths[0] != tc.wantPath || rcv.headers[0].Get("x-api-key") != "k-12345" {
				t.Errorf("posted to %s with x-api-key %q, want %s and the configured header", rcv.paths[0], rcv.headers[0].Get("x-api-key"), tc.wantPath)
			}
			spans := map[string]bool{}
			for _, r := range rcv.requests {
				for _, rs := range r.ResourceSpans {
					res := map[string]string{}
					for _, kv := range rs.Resource.Attributes {
						res[kv.Key] = kv.Value.GetStringValue()
					}
					if res["service.name"] != "gw-under-test" || res["service.version"] != "v9.9.9" {
						t.Errorf("resource %v, want the configured service name and the version", res)
					}
					for _, ss := range rs.ScopeSpans {
						if ss.Scope.Name != tracing.ScopeName {
							t.Errorf("scope %q, want %q", ss.Scope.Name, tracing.ScopeName)
						}
						for _, s := range ss.Spans {
							spans[s.Name] = true
							if tid := tracing.TraceID(s.TraceId); tid.String() != traceHex {
								t.Errorf("span %s in trace %s, want the client's %s", s.Name, tid, traceHex)
							}
							if s.Name == "tools/call t1" && s.Kind.String() == "SPAN_KIND_CLIENT" && s.Status.GetCode().String() != "STATUS_CODE_ERROR" {
								t.Errorf("the failed call's status is %v", s.Status)
							}
						}
					}
				}
			}
			if !spans["tools/call t1"] || len(spans) != 1 {
				// Both spans share a name: the request's and the call's.
				t.Errorf("spans posted: %v", spans)
			}
		})
	}
}

// TestProviderBoundedWhileCollectorStalls: while the collector does not
// answer, the provider holds at most MaxQueuedSpans spans besides the
// batch on its way (the rest are dropped, and ending a span never waits),
// and six calls of a tool with a megabyte-long name post a few hundred
// bytes of it, not megabytes.
func TestProviderBoundedWhileCollectorStalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var posted, spans int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the collector stalls until the test has ended its spans
		case <-release:
		case <-r.Context().Done():
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if proto.Unmarshal(body, req) != nil {
			http.Error(w, "want a protobuf ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		mu.Lock()
		posted += len(body)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans += len(ss.Spans)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	tp, err := NewProvider(config.Tracing{Endpoint: srv.URL, SampleRatio: 1}, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := tracing.New(tp, tracing.Options{RecordQueries: true})
	long := strings.Repeat("x", 1<<20)
	start := time.Now()
	for range 6 {
		ctx, req := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/call", Tool: long})
		_, s := tr.StartSearch(ctx, long, nil)
		tr.EndSearch(s, "keyword", 0, 0, nil)
		_, call, _ := tr.StartCall(ctx, "srv", long, false, nil)
		tr.End(call, true, nil, "")
		tr.End(req, false, nil, "")
	}
	const made = 4 * MaxQueuedSpans
	for range made {
		_, s := tr.StartRequest(context.Background(), tracing.Request{Method: "tools/list"})
		tr.End(s, false, nil, "")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ending spans took %v while the collector stalled: the gateway waited for it", d)
	}
	close(release)
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the collector got %d of %d spans in %d bytes", spans, made+24, posted)
	if spans == 0 || spans > MaxQueuedSpans+MaxExportBatch {
		t.Errorf("the collector got %d spans, want some and at most %d (the queue and one batch)", spans, MaxQueuedSpans+MaxExportBatch)
	}
	if posted > 1<<20 {
		t.Errorf("%d bytes were posted: the megabyte-long tool name went to the collector", posted)
	}
}

// TestResource: service.name from the configuration, else
// OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else the default; the
// version and the SDK's attributes; a malformed pair is refused without
// quoting it.
func TestResource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, configured string
		env              map[string]string
		want             map[string]string
		wantErr          string
	}{
		{name: "default", want: map[string]string{"service.name": "toolsearch", "service.version": "v1",
			"telemetry.sdk.name": "toolsearch", "telemetry.sdk.language": "go", "telemetry.sdk.version": "v1"}},
		{name: "configured wins", configured: "gw", env: map[string]string{"OTEL_SERVICE_NAME": "env", "OTEL_RESOURCE_ATTRIBUTES": "service.name=attr"},
			want: map[string]string{"service.name": "gw"}},
		{name: "OTEL_SERVICE_NAME", env: map[string]string{"OTEL_SERVICE_NAME": "env", "OTEL_RESOURCE_ATTRIBUTES": "service.name=attr"},
			want: map[string]string{"service.name": "env"}},
		{name: "resource attributes, percent-decoded", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": " service.name=attr , deployment.environment=prod%20eu,service.version=v0"},
			want: map[string]string{"service.name": "attr", "deployment.environment": "prod eu", "service.version": "v1"}},
		{name: "malformed pair", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "a=1,secret-without-key"}, wantErr: "pair 2"},
		{name: "bad escape", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "a=%zz"}, wantErr: "pair 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := resource(tc.configured, "v1", func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %v, want one naming %s and not the text", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, a := range res.Attributes() {
				got[string(a.Key)] = a.Value.AsString()
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// TestProviderSettings: the OTEL_BSP_* and OTEL_*ATTRIBUTE* variables
// are read, and a bad value is refused by name.
func TestProviderSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "good", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "2000",
			"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "2", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "5"}},
		{name: "bad delay", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s"}, wantErr: "OTEL_BSP_SCHEDULE_DELAY"},
		{name: "negative limit", env: map[string]string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "-1"}, wantErr: "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"},
		{name: "bad endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "nowhere"}, wantErr: "OTLP exporter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tp, err := newProvider(config.Tracing{SampleRatio: 1}, "v1", nil, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tp.Shutdown(context.Background()) }()
			_, s := tp.Start(context.Background(), "s", tracing.KindInternal)
			s.SetAttributes(tracing.Key("a").String("abcdefgh"), tracing.Key("b").Int(1), tracing.Key("c").Int(2))
			s.End()
			if attrs := s.Attributes(); len(attrs) != 2 || s.DroppedAttributes() != 1 || len(attrs[0].Value.AsString()) > 5 {
				t.Errorf("attributes %v (%d dropped), want two, the string within 5 bytes", attrs, s.DroppedAttributes())
			}
		})
	}
}
