package redact

import (
	"strings"
	"testing"
)

func TestShapes(t *testing.T) {
	t.Parallel()
	r := New()
	for _, tc := range []struct {
		name, in, want string
	}{
		// Secrets no configuration named.
		{"anthropic key as an argument", "npx server --key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "npx server --key [REDACTED]"},
		{"openai project key", "OPENAI_API_KEY is sk-proj-abcdefghijklmnopqrstuvwx0123", "OPENAI_API_KEY is [REDACTED]"},
		{"github classic token", "cloning with ghp_0123456789abcdefghijABCDEFGHIJ012345", "cloning with [REDACTED]"},
		{"github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"gitlab token", "glpat-abcdefghij0123456789", "[REDACTED]"},
		{"slack token", "token xoxb-1234567890-abcdefghij", "token [REDACTED]"},
		{"aws key id", "AKIAIOSFODNN7EXAMPLE used", "[REDACTED] used"},
		{"google key", "key=AIzaSyA-abcdefghijklmnopqrstuvwxyz0123456", "key=[REDACTED]"},
		{"stripe key", "sk_live_abcdefghijklmnop1234", "[REDACTED]"},
		{"jwt", "got eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "got [REDACTED]"},
		{"bearer on stderr", "auth failed: Bearer abcdefghijklmnop0123456789", "auth failed: Bearer [REDACTED]"},
		{"authorization header", "Authorization: Bearer abcdefghijklmnop0123456789", "Authorization: Bearer [REDACTED]"},
		{"authorization without a scheme", `"authorization": "0123456789abcdef"`, `"authorization": "[REDACTED]"`},
		{"basic credentials", "authorization: Basic dXNlcjpwYXNzd29yZA==", "authorization: Basic [REDACTED]"},
		{"url password", "connect postgres://admin:s3cr3t-pw@db.internal:5432/app", "connect postgres://admin:[REDACTED]db.internal:5432/app"},
		{"json password", `{"password": "hunter2!"}`, `{"password": "[REDACTED]"}`},
		{"query api key", "GET /v1?api_key=abcdef123456&q=1", "GET /v1?api_key=[REDACTED]&q=1"},
		{"header api key", "X-Api-Key: abcdef123456", "X-Api-Key: [REDACTED]"},
		{"client secret", "client_secret=0a1b2c3d4e5f", "client_secret=[REDACTED]"},
		{"token flag", "server --token abcdef123456 --verbose", "server --token [REDACTED] --verbose"},
		{"password flag", "run -password hunter2x", "run -password [REDACTED]"},
		// Ordinary text stays.
		{"token counts", "max tokens: 4096, 12 tokens used", "max tokens: 4096, 12 tokens used"},
		{"a word after token", "the token expired yesterday", "the token expired yesterday"},
		{"password prose", "the password is required", "the password is required"},
		{"basic prose", "basic authentication is off", "basic authentication is off"},
		{"bearer prose", "the bearer of bad news", "the bearer of bad news"},
		{"short sk word", "scikit sk-learn models", "scikit sk-learn models"},
		{"url without password", "https://example.com/a:b@c and http://host:8080/x", "https://example.com/a:b@c and http://host:8080/x"},
		{"flag followed by a flag", "--token --verbose", "--token --verbose"},
		{"placeholder", `send it as "X-Toolsearch-Token: <token>"`, `send it as "X-Toolsearch-Token: <token>"`},
		{"env reference", "token=$TOOLSEARCH_TOKEN and api_key=${KEY}", "token=$TOOLSEARCH_TOKEN and api_key=${KEY}"},
		{"already redacted", "Bearer [REDACTED] and password=[REDACTED]", "Bearer [REDACTED] and password=[REDACTED]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestShapesAndValues: known values and shapes together; nil and the zero
// value still change nothing.
func TestShapesAndValues(t *testing.T) {
	t.Parallel()
	r := New("my-db-pass")
	in := "db my-db-pass, key sk-ant-api03-0123456789abcdefghijkl"
	if got := r.String(in); strings.Contains(got, "my-db-pass") || strings.Contains(got, "sk-ant") || strings.Count(got, Mark) != 2 {
		t.Errorf("String(%q) = %q", in, got)
	}
	var none *Redactor
	if none.String(in) != in || (&Redactor{}).String(in) != in {
		t.Error("a nil or zero Redactor changed text")
	}
}

func FuzzShapes(f *testing.F) {
	for _, s := range []string{"Bearer abcdefghijklmnop0123", "postgres://u:p@h", `{"password":"xxxxxxx"}`, "--token abcdefgh", "sk-ant-" + strings.Repeat("a", 30)} {
		f.Add(s)
	}
	r := New()
	f.Fuzz(func(t *testing.T, s string) {
		out := r.String(s)
		// Redacting again changes nothing, and what stays is no longer than
		// the input plus the marks.
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", s, out, again)
		}
		if len(out) > len(s)+strings.Count(out, Mark)*len(Mark) {
			t.Fatalf("output grew beyond its marks: %q → %q", s, out)
		}
	})
}
