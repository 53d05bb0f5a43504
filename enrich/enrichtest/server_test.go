package enrichtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
)

// TestWire checks the stand-ins' answers to raw requests: the documented
// success and error shapes, and the refusals.
func TestWire(t *testing.T) {
	t.Parallel()
	prompt := "Write hints:\n" + `{"name":"a","description":"A","input_schema":{"type":"object"}}` + "\n" +
		`{"name":"b","description":"B","input_schema":{"type":"object"}}` + "\nDone."
	anthropicBody := `{"model":"m","max_tokens":100,"system":[{"type":"text","text":"sys"}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":` + quote(prompt) + `}]}]}`
	openaiBody := `{"model":"m","max_tokens":100,"messages":[{"role":"system","content":"sys"},{"role":"user","content":` + quote(prompt) + `}]}`
	tests := []struct {
		name    string
		kind    Kind
		path    string
		key     string
		body    string
		status  int
		wantKey string // a member the answer must have
	}{
		{"anthropic ok", Anthropic, "/v1/messages", "test-key", anthropicBody, 200, "content"},
		{"anthropic wrong key", Anthropic, "/v1/messages", "nope", anthropicBody, 401, "error"},
		{"anthropic no system", Anthropic, "/v1/messages", "test-key", `{"model":"m","max_tokens":1,"messages":[]}`, 400, "error"},
		{"anthropic wrong path", Anthropic, "/v1/complete", "test-key", anthropicBody, 400, "error"},
		{"openai ok", OpenAI, "/v1/chat/completions", "test-key", openaiBody, 200, "choices"},
		{"openai wrong key", OpenAI, "/v1/chat/completions", "nope", openaiBody, 401, "error"},
		{"openai no max_tokens", OpenAI, "/v1/chat/completions", "test-key", `{"model":"m","messages":[]}`, 400, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(t, tt.kind, nil)
			req, _ := http.NewRequest(http.MethodPost, s.URL+tt.path, bytes.NewBufferString(tt.body))
			req.Header.Set("Authorization", "Bearer "+tt.key)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var top map[string]json.RawMessage
			if resp.StatusCode != tt.status || json.Unmarshal(data, &top) != nil || top[tt.wantKey] == nil {
				t.Fatalf("status %d, body %s", resp.StatusCode, data)
			}
			if tt.status == 200 {
				if got := s.Requests()[0].Tools; !slices.Equal(got, []string{"a", "b"}) {
					t.Errorf("recorded tools %q", got)
				}
				if got := s.ToolCounts(); len(got) != 2 || got["a"] != 1 || got["b"] != 1 {
					t.Errorf("tool counts %v, want a and b once", got)
				}
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
