package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
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
			tp, err := NewProvider(context.Background(), cfg.Gateway.Tracing, "v9.9.9")
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
							if tid := trace.TraceID(s.TraceId); tid.String() != traceHex {
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
