package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// spanSink is a loopback OTLP/HTTP receiver: the names of the spans
// posted to it, by trace id, and the headers of the posts.
type spanSink struct {
	mu      sync.Mutex
	spans   map[string][]string
	headers []http.Header
}

func (s *spanSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "want an OTLP protobuf export at /v1/traces", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = append(s.headers, r.Header.Clone())
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				id := hex.EncodeToString(sp.TraceId)
				s.spans[id] = append(s.spans[id], sp.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

// TestServeTraces: serve with toolsearch.tracing sends the spans of a
// client's search, in the client's trace, to the configured endpoint with
// its headers, the last ones when it stops; the header's secret is never
// logged.
func TestServeTraces(t *testing.T) {
	t.Parallel()
	sink := &spanSink{spans: map[string][]string{}}
	collector := httptest.NewServer(sink)
	t.Cleanup(collector.Close)
	const secret = "otlp-header-secret-7d1e"
	cfg := filepath.Join(t.TempDir(), "ts.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}, "toolsearch": {"exposure": "search",
		"tracing": {"endpoint": "`+collector.URL+`", "headers": {"Authorization": "Bearer `+secret+`"}, "serviceName": "serve-test"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, exited, stop := startServe(t, "--http", "127.0.0.1:0", "--state-dir", t.TempDir(), "-c", cfg)
	addr := waitAddr(t, logs, exited)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-trace-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const traceID = "5bf92f3577b34da6a3ce929d0e0e4736"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Meta: mcp.Meta{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
		Arguments: map[string]any{"query": "find files"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %v", err, res)
	}
	_ = cs.Close()
	stop()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	got := strings.Join(sink.spans[traceID], ",")
	for _, want := range []string{"tools/call search_tools", "search"} {
		if !strings.Contains(got, want) {
			t.Errorf("spans of the client's trace: %q, want %q among them (all: %v)", got, want, sink.spans)
		}
	}
	if len(sink.headers) == 0 || sink.headers[0].Get("Authorization") != "Bearer "+secret {
		t.Errorf("the exports did not carry the configured header")
	}
	if !strings.Contains(logs.String(), "tracing on") {
		t.Errorf("the log does not say tracing is on:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log shows the header's secret:\n%s", logs.String())
	}
}

// TestServeRefusesBadTracing: a tracing block that cannot work stops
// serve before it starts, naming the field.
func TestServeRefusesBadTracing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tracing, want string }{
		{"ratio", `{"sampleRatio": 3}`, "toolsearch.tracing.sampleRatio"},
		{"url", `{"endpoint": "localhost:4318"}`, "toolsearch.tracing.endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := filepath.Join(t.TempDir(), "ts.json")
			if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}, "toolsearch": {"tracing": `+tc.tracing+`}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			logs, exited, _ := startServe(t, "--http", "127.0.0.1:0", "-c", cfg)
			select {
			case code := <-exited:
				if code == exitOK || !strings.Contains(logs.String(), tc.want) {
					t.Errorf("exit %d with %q, want an error naming %s", code, logs.String(), tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve started:\n%s", logs.String())
			}
		})
	}
}

// TestLinksNoHeavyDependency: a plain build of the command links no
// model SDK (enrich speaks both APIs over net/http), no gRPC (the OTLP
// exporter posts protobuf over HTTP), neither x/net/trace nor
// text/template, either of which keeps every method of every type in the
// binary, and no tokenizer library (github.com/tiktoken-go/tokenizer
// holds its vocabularies as Go source, slow to compile; it and
// pkoukk/tiktoken-go pull the regexp2 engine): token counts are
// core/catalog's own, over the vocabulary file of the data-only package
// tiktoken-go-loader/assets. Nor golang.org/x/sys/unix, for the few
// system calls the files tools make that the syscall package has too, nor
// a YAML library, for the two keys of a skill's frontmatter the gateway
// checks (core/skills reads them). Nor the package testing, which brings
// runtime/trace with it: github.com/kljensen/snowball imports it outside
// its tests, so search stems with internal/stem instead.
func TestLinksNoHeavyDependency(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	banned := []string{
		"go.opentelemetry.io",
		"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "google.golang.org/grpc",
		"golang.org/x/net/trace", "text/template", "html/template",
		"github.com/tiktoken-go/tokenizer", "github.com/dlclark/regexp2", "github.com/pkoukk/tiktoken-go",
		"golang.org/x/sys/unix", "go.yaml.in/yaml",
		"github.com/kljensen/snowball", "testing",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, b+"/") {
				t.Errorf("the command links %s", dep)
			}
		}
	}
}
