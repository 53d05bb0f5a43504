package messages

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/internal/refusaltest"
)

// TestWords: names compare whatever the quoting, case and punctuation.
func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"tool_reference", "tool reference"},
		{"`tool-reference`", "tool reference"},
		{"'toolReference'", "tool reference"},
		{"\"Tool Reference\"", "tool reference"},
		{"messages[1].role: unknown variant `system`", "messages 1 role unknown variant system"},
		{"mid-conversation-tool-changes-2026-07-01", "mid conversation tool changes 2026 07 01"},
		{"Ünïcödé ROLE", "ünïcödé role"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(words(tt.in, 100), " "); got != tt.want {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorTextBounded: deep, wide or self-nesting bodies are read within
// the bounds.
func TestErrorTextBounded(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body string
	}{
		{"deep arrays", strings.Repeat("[", 5000) + `"role system"` + strings.Repeat("]", 5000)},
		{"long string", `{"message":"` + strings.Repeat("system role ", 200000) + `"}`},
		{"long multibyte string", `{"message":"` + strings.Repeat("é", 1000) + `"}`},
		{"nested json strings", `{"raw":"{\"raw\":\"{\\\"raw\\\":\\\"{\\\\\\\"m\\\\\\\":1}\\\"}\"}"}`},
		{"invalid utf-8", "{\"message\":\"\xff\xfe role system\"}"},
		{"many words", strings.Repeat("a ", 100000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if text := errorText([]byte(tt.body)); len(text) > maxErrorText+1 {
				t.Fatalf("text of %d bytes", len(text))
			}
			r := RefusalTo([]byte(tt.body), []byte(table.Request), table.Betas)
			if len(r.Message) > 300+len("…") {
				t.Fatalf("message of %d bytes", len(r.Message))
			}
			if utf8.ValidString(tt.body) && !utf8.ValidString(r.Message) {
				t.Fatalf("message cut inside a character: %q", r.Message)
			}
		})
	}
}

// FuzzRefusalTo: no endpoint body makes the reader panic, and what it
// reads is bounded and consistent. The seeds run with go test.
func FuzzRefusalTo(f *testing.F) {
	table, err := refusaltest.Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"type":"error","error":{"type":"invalid_request_error","message":"messages: unexpected role 'system'"}}`,
		`{"detail":[{"type":"literal_error","loc":["body","messages",1,"role"],"msg":"Input should be 'user' or 'assistant'","input":"system"}]}`,
		`{"error":{"message":"{\"message\":\"tools.21.custom.defer_loading: Extra inputs are not permitted\"}. Received","code":"400"}}`,
		`{"error":{"message":"Provider returned error","metadata":{"raw":"{\"error\":{\"message\":\"Param Incorrect\"}}"}}}`,
		"unknown variant `system`, expected `user` or `assistant`",
		`[[[[{"raw":"[{\"raw\":\"[1,2,\"}]"}]]]]`,
		"",
		"\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := RefusalTo(body, []byte(table.Request), table.Betas)
		if len(r.Message) > 300+len("…") {
			t.Fatalf("message of %d bytes", len(r.Message))
		}
		if r.Below > Plain || (r.Refused() && (!r.Names || r.Feature == "" || r.Kind == "")) {
			t.Fatalf("inconsistent reading %+v", r)
		}
		if r.Refused() && !r.Changes(r.Below) {
			t.Fatalf("refuses %s, which the request does not use: %+v", r.Named(), r)
		}
	})
}
