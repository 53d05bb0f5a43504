package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenTransport sends a bearer token with every request.
type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSecretsNeverShown configures secret-looking env values, headers, URL
// credentials and an auth token; servers that print them on stderr, put
// them in tool errors and die printing them; and checks that none of them
// appears in status output, serve's logs, /healthz, /metrics, HTTP refusals
// or the errors clients get.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"key":      "sk-live-KEY-1234567890",
		"password": "pw-Secret-0987",
		"db":       "db-pass-ABCDEF123",
		"header":   "hdr-token-5566778899",
		"urlkey":   "url-key-998877",
		"urlpass":  "url-pass-4433",
		"token":    "auth-tok-0011223344556677",
	}
	// A remote server that refuses every request, echoing what it got.
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("denied: Authorization=%s url=%s", r.Header.Get("Authorization"), r.URL.String()), http.StatusInternalServerError)
	}))
	t.Cleanup(remote.Close)
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"leaky": map[string]any{"command": exe, "env": map[string]string{
				roleEnv: "leaky", "API_KEY": secrets["key"], "SERVICE_PASSWORD": secrets["password"]}},
			"failing": map[string]any{"command": "sh", "args": []string{"-c", `echo "cannot log in with $DB_PASSWORD" >&2; exit 3`},
				"env": map[string]string{"DB_PASSWORD": secrets["db"]}},
			"remote": map[string]any{"type": "http", "url": remote.URL + "/mcp?apikey=" + secrets["urlkey"],
				"headers": map[string]string{"Authorization": "Bearer " + secrets["header"]}},
			"refused": map[string]any{"type": "http", "url": "http://admin:" + secrets["urlpass"] + "@127.0.0.1:1/mcp"},
		},
		"toolsearch": map[string]any{"limits": map[string]any{"maxRestarts": 0, "startTimeout": "20s"}},
	}
	b, _ := json.Marshal(cfg)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "ts.json")
	tokenPath := filepath.Join(dir, "token")
	os.WriteFile(cfgPath, b, 0o600)
	os.WriteFile(tokenPath, []byte(secrets["token"]+"\n"), 0o600)

	var shown []string // every text the test saw, labelled
	see := func(label, text string) { shown = append(shown, label+":\n"+text) }

	// toolsearch status.
	var sout, serr bytes.Buffer
	run(context.Background(), []string{"status", "-c", cfgPath, "--state-dir", t.TempDir(), "--timeout", "30s"}, &sout, &serr)
	see("status stdout", sout.String())
	see("status stderr", serr.String())
	if !strings.Contains(sout.String(), "cannot log in with [REDACTED]") {
		t.Errorf("status does not show the failing server's redacted error:\n%s", sout.String())
	}
	var jout bytes.Buffer
	run(context.Background(), []string{"status", "-c", cfgPath, "--state-dir", t.TempDir(), "--json", "--timeout", "30s"}, &jout, io.Discard)
	see("status --json", jout.String())

	// toolsearch serve --http, with every log line.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve", "-c", cfgPath, "--state-dir", t.TempDir(), "--http", "127.0.0.1:0",
			"--auth-token-file", tokenPath, "--log-level", "debug", "--exposure", "search"}, io.Discard, logs)
	}()
	base := "http://" + waitAddr(t, logs, exited)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: tokenTransport{secrets["token"]}}
	get := func(path string, c *http.Client) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	// Wait until every server has settled.
	deadline := time.Now().Add(60 * time.Second)
	for {
		h := get("/healthz", hc)
		if !strings.Contains(h, `"starting"`) && !strings.Contains(h, `"restarting"`) && strings.Contains(h, `"ready"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers did not settle:\n%s\n%s", h, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) string {
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "protocol error: " + err.Error()
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String()
	}
	fail := call("call_tool", map[string]any{"name": "leaky__fail"})
	see("call fail", fail)
	if !strings.Contains(fail, "upstream refused key [REDACTED]") {
		t.Errorf("the tool error is not redacted as expected: %s", fail)
	}
	see("call crash", call("call_tool", map[string]any{"name": "leaky__crash"}))
	see("search failing", call("search_tools", map[string]any{"query": "failing"}))
	see("search remote", call("search_tools", map[string]any{"query": "remote"}))
	see("call unknown", call("call_tool", map[string]any{"name": "failing__anything"}))
	_ = cs.Close()

	see("healthz", get("/healthz", hc))
	see("healthz without token", get("/healthz", http.DefaultClient))
	see("metrics", get("/metrics", hc))
	see("metrics without token", get("/metrics", http.DefaultClient))
	see("mcp without token", get("/mcp", http.DefaultClient))

	cancel()
	select {
	case code := <-exited:
		if code != exitOK {
			t.Errorf("serve exited with %d", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop within 60s")
	}
	see("serve logs", logs.String())
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("the logs never needed redaction, so the test proves little:\n%s", logs.String())
	}

	for _, text := range shown {
		for name, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %s (%s) shown in %s", name, s, text)
			}
		}
	}
}
