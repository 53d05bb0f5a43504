package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVersioned: a POST is served once, on a request the library's
// handler made (not the one that came); one the handler refuses (a version
// it does not know) and a GET are served as they came; nothing the
// handler itself answers reaches the client.
func TestVersioned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, version string
		wantMade              bool
	}{
		{"post", http.MethodPost, "2025-11-25", true},
		{"post without a version", http.MethodPost, "", true},
		{"post of an unknown version", http.MethodPost, "1999-01-01", false},
		{"get", http.MethodGet, "2025-11-25", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.method, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if tc.version != "" {
				r.Header.Set("Mcp-Protocol-Version", tc.version)
			}
			w := httptest.NewRecorder()
			calls := 0
			versioned(w, r, func(w http.ResponseWriter, got *http.Request) {
				calls++
				if made := got != r; made != tc.wantMade {
					t.Errorf("served the request made by the library: %v, want %v", made, tc.wantMade)
				}
				if got.Header.Get("Mcp-Protocol-Version") != tc.version {
					t.Errorf("headers lost")
				}
				w.WriteHeader(http.StatusTeapot)
				_, _ = w.Write([]byte("served"))
			})
			if calls != 1 || w.Code != http.StatusTeapot || w.Body.String() != "served" {
				t.Errorf("%d calls; the client got %d %q", calls, w.Code, w.Body.String())
			}
		})
	}
}
