package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/proxy"
)

// rawPost sends a POST with the request target exactly as given (no
// client cleans or escapes it) and returns the status.
func rawPost(t testing.TB, base, target, contentType, body string) int {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	ct := ""
	if contentType != "" {
		ct = "Content-Type: " + contentType + "\r\n"
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s", target, addr, ct, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestContentTypeEverySpelling: a POST to the Messages API that is not
// JSON is refused (415) before the proxy's key goes anywhere, however its
// path is spelt: an upstream may route a path case-insensitively, decode
// it again, read a backslash as a slash or ignore path parameters. Other
// routes (an upload to /v1/files) are not held to JSON.
func TestContentTypeEverySpelling(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		target, contentType string
		refused             bool
	}{
		{"/v1/messages", "text/plain", true},
		{"/V1/messages", "text/plain", true},
		{"/v1/MESSAGES", "text/plain;charset=UTF-8", true},
		{"/v1%2fmessages", "text/plain", true},
		{"/v1%2Fmessages", "application/x-www-form-urlencoded", true},
		{"/v1%252fmessages", "text/plain", true},
		{"/v1%5cmessages", "text/plain", true},
		{"//v1/messages", "text/plain", true},
		{"/v1//messages", "text/plain", true},
		{"/v1/messages/", "text/plain", true},
		{"/v1/./messages", "text/plain", true},
		{"/x/../v1/messages", "text/plain", true},
		{"/v1/messages;x=1", "text/plain", true},
		{"/v1/messages.", "text/plain", true},
		{"/v1/mess%61ges", "text/plain", true},
		{"/V1/Messages/Count_Tokens", "text/plain", true},
		{"/v1/messages/batches", "multipart/form-data; boundary=x", true},
		{"/anthropic/v1/messages", "text/plain", true},
		{"/v1/messages?beta=true", "", true},
		{"/V1/messages", "application/json", false},
		{"/v1%2fmessages", "application/json; charset=utf-8", false},
		{"/v1/files", "multipart/form-data; boundary=x", false},
		{"/v1/messagesx", "text/plain", false},
	}
	for _, mode := range []proxy.Mode{proxy.ModePassthrough, proxy.ModeEmulate} {
		for _, tt := range tests {
			t.Run(mode.String()+"/"+tt.target+"/"+tt.contentType, func(t *testing.T) {
				t.Parallel()
				up := newKeyRecorder(t)
				url, _ := serveFront(t, proxy.Config{Upstream: up.URL, Mode: mode, APIKey: upstreamKey})
				status := rawPost(t, url, tt.target, tt.contentType, body)
				got := up.seen()
				if tt.refused {
					if status != http.StatusUnsupportedMediaType || len(got) != 0 {
						t.Fatalf("status %d and %d request(s) upstream, want 415 and none", status, len(got))
					}
					return
				}
				if status == http.StatusUnsupportedMediaType || len(got) != 1 || got[0].apiKey != upstreamKey {
					t.Fatalf("status %d and %d request(s) upstream, want it forwarded with the key", status, len(got))
				}
			})
		}
	}
}
