package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAttackLongModelName: a client's model name of any size reaches the
// proxy's log clipped (at most 128 bytes of it, cut at a character
// boundary, then a digest), while the upstream gets the request with the
// name as the client sent it. The request takes the path that logs the
// model most: refused, retried lower, taken and remembered.
func TestAttackLongModelName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model string
	}{
		{"a megabyte", strings.Repeat("m", 1<<20)},
		{"multibyte across the bound", strings.Repeat("a", 127) + strings.Repeat("é", 5000)},
		{"newlines and quotes", strings.Repeat("x\n\"level\":\"ERROR\"\n", 10000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			backend := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{SearchToolName: "tool_search", Model: inputModel}, SystemMessages: true})
			front, seen := refusingFront(t, backend.URL, func(b []byte) (string, bool) {
				return "tools.2.defer_loading: Extra inputs are not permitted", bytes.Contains(b, []byte(`"defer_loading"`))
			})
			logs := &lockedBuffer{}
			logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			_, url := startProxy(t, proxy.Config{Upstream: front, Mode: proxy.ModeEmulate, Logger: logger})
			body := mustMarshal(t, map[string]any{
				"model": tt.model, "max_tokens": 256,
				"tools":    []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(searchToolDef), json.RawMessage(deferredTools[0])},
				"messages": []json.RawMessage{json.RawMessage(`{"role":"user","content":"post hello to the slack channel"}`)},
			})
			status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", nil, body)
			calls := seen()
			if status != http.StatusOK || len(calls) != 2 {
				t.Fatalf("status %d after %d upstream calls, want 200 after 2: %.300s", status, len(calls), out)
			}
			for i, c := range calls {
				var sent struct{ Model string }
				if err := json.Unmarshal(c, &sent); err != nil || sent.Model != tt.model {
					t.Fatalf("upstream call %d: the model name was changed (%d bytes, want %d): %v", i, len(sent.Model), len(tt.model), err)
				}
			}
			models := 0
			sc := bufio.NewScanner(strings.NewReader(logs.String()))
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if len(line) > 2048 {
					t.Errorf("a log line of %d bytes: %.200s", len(line), line)
				}
				var rec map[string]any
				if err := json.Unmarshal(line, &rec); err != nil {
					t.Fatalf("log line is not one JSON record: %v: %.200s", err, line)
				}
				m, ok := rec["model"].(string)
				if !ok {
					continue
				}
				models++
				if len(m) > 128+len("…#")+16 || !utf8.ValidString(m) || !strings.HasPrefix(tt.model, strings.SplitN(m, "…#", 2)[0]) {
					t.Errorf("logged model of %d bytes (valid UTF-8 %v): %.200q", len(m), utf8.ValidString(m), m)
				}
			}
			if models < 2 {
				t.Fatalf("%d log records name the model; the refusal path was not taken:\n%.2000s", models, logs.String())
			}
		})
	}
}
