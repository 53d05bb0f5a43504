package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/internal/trickle"
	"github.com/toolsearch/toolsearch/proxy"
)

const (
	// upstreamKey is the key the proxy holds (--api-key-env).
	upstreamKey = "sk-upstream-held-by-the-proxy"
	// clientKey is a client's own upstream key.
	clientKey = "sk-client-own-upstream-key"
	// proxyToken is the proxy's own token.
	proxyToken = "proxy-token-0123456789abcdef"
)

// seen is one request as the upstream stand-in received it.
type seen struct {
	apiKey, auth, token string
	body                []byte
}

// keyRecorder is a loopback upstream that records what reached it, keys
// included, and answers like the Messages API.
type keyRecorder struct {
	URL  string
	mu   sync.Mutex
	reqs []seen
}

func newKeyRecorder(t testing.TB) *keyRecorder {
	rec := &keyRecorder{}
	rec.URL = newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{apiKey: r.Header.Get("x-api-key"), auth: r.Header.Get("Authorization"),
			token: r.Header.Get(proxy.TokenHeader), body: body})
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, latencyAnswer)
	})
	return rec
}

func (rec *keyRecorder) seen() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs...)
}

// serveFront serves p with the server HTTPServer returns, on a loopback
// port, as toolsearch proxy does.
func serveFront(t testing.TB, cfg proxy.Config) (string, *http.Server) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := p.HTTPServer()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), srv
}

// apiError reads an error in the API's shape.
func apiError(t testing.TB, body []byte) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" {
		t.Fatalf("not an API error: %s", body)
	}
	return e.Error.Type, e.Error.Message
}

// TestFrontDoor plays the attacks on a proxy that lends its key: a web
// page's request (foreign Host after DNS rebinding, foreign Origin, a
// text/plain or form POST that skips the CORS preflight), a caller without
// the token, an oversize body. Each is refused before anything reaches
// the upstream, which records whether the key did. The good requests show
// both ways of holding the key: the proxy injects its own (the token may
// then come as the client's key), or the client's own key passes through
// (the token comes only in TokenHeader and never goes upstream).
func TestFrontDoor(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	inject := proxy.Config{APIKey: upstreamKey}
	injectToken := proxy.Config{APIKey: upstreamKey, Token: proxyToken}
	passToken := proxy.Config{Token: proxyToken}
	small := proxy.Config{APIKey: upstreamKey, MaxBodyBytes: 1024}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	tests := []struct {
		name   string
		cfg    proxy.Config
		method string
		path   string
		host   string
		header map[string]string
		body   []byte
		status int
		// errType and errText describe the refusal.
		errType, errText string
		// upstreamKey is the key the upstream must see (as x-api-key or
		// bearer); "" means the upstream must see nothing.
		upstreamKey string
	}{
		{name: "plain request, key injected", cfg: inject, header: jsonCT, status: 200, upstreamKey: upstreamKey},
		{name: "DNS rebinding: foreign Host", cfg: inject, host: "evil.example", header: with("Origin", "https://evil.example"),
			status: 403, errType: "permission_error", errText: `Host "evil.example" is not a loopback name`},
		{name: "foreign Host, GET", cfg: inject, method: http.MethodGet, path: "/v1/models", host: "evil.example:8787",
			status: 403, errType: "permission_error", errText: "--allowed-host"},
		{name: "allowed Host", cfg: proxy.Config{APIKey: upstreamKey, AllowedHosts: []string{"llm.internal"}}, host: "llm.internal",
			header: jsonCT, status: 200, upstreamKey: upstreamKey},
		{name: "foreign Origin", cfg: inject, header: with("Origin", "https://evil.example"),
			status: 403, errType: "permission_error", errText: `Origin "https://evil.example" is not allowed`},
		{name: "null Origin", cfg: inject, header: with("Origin", "null"), status: 403, errType: "permission_error"},
		{name: "allowed Origin", cfg: proxy.Config{APIKey: upstreamKey, AllowedOrigins: []string{"https://app.example"}},
			header: with("Origin", "https://app.example"), status: 200, upstreamKey: upstreamKey},
		{name: "text/plain POST", cfg: inject, header: map[string]string{"Content-Type": "text/plain;charset=UTF-8"},
			status: 415, errType: "invalid_request_error", errText: `Content-Type "text/plain;charset=UTF-8" is not accepted`},
		{name: "form POST", cfg: inject, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			status: 415, errType: "invalid_request_error"},
		{name: "multipart POST", cfg: inject, header: map[string]string{"Content-Type": "multipart/form-data; boundary=x"},
			status: 415, errType: "invalid_request_error"},
		{name: "no Content-Type", cfg: inject, status: 415, errType: "invalid_request_error", errText: "no Content-Type"},
		{name: "text/plain count_tokens", cfg: inject, path: "/v1/messages/count_tokens", header: map[string]string{"Content-Type": "text/plain"},
			status: 415, errType: "invalid_request_error"},
		{name: "text/plain batches", cfg: inject, path: "/v1/messages/batches", header: map[string]string{"Content-Type": "text/plain"},
			status: 415, errType: "invalid_request_error"},
		{name: "text/plain, path not clean", cfg: inject, path: "/v1/./messages", header: map[string]string{"Content-Type": "text/plain"},
			status: 415, errType: "invalid_request_error"},
		{name: "JSON with charset", cfg: inject, header: map[string]string{"Content-Type": "application/json; charset=utf-8"},
			status: 200, upstreamKey: upstreamKey},

		{name: "token configured, none sent", cfg: injectToken, header: jsonCT,
			status: 401, errType: "authentication_error", errText: `"X-Toolsearch-Token: <token>"`},
		{name: "token configured, wrong one", cfg: injectToken, header: with(proxy.TokenHeader, "not-the-token-at-all"),
			status: 401, errType: "authentication_error"},
		{name: "key injected, token in its header", cfg: injectToken, header: with(proxy.TokenHeader, proxyToken),
			status: 200, upstreamKey: upstreamKey},
		{name: "key injected, token as x-api-key", cfg: injectToken, header: with("x-api-key", proxyToken),
			status: 200, upstreamKey: upstreamKey},
		{name: "key injected, token as bearer", cfg: injectToken, header: with("Authorization", "Bearer "+proxyToken),
			status: 200, upstreamKey: upstreamKey},
		{name: "key injected, a client key is no token", cfg: injectToken, header: with("x-api-key", clientKey),
			status: 401, errType: "authentication_error"},
		{name: "client's key passes, token in its header", cfg: passToken, header: with("x-api-key", clientKey, proxy.TokenHeader, proxyToken),
			status: 200, upstreamKey: clientKey},
		{name: "client's key passes, token as x-api-key refused", cfg: passToken, header: with("x-api-key", proxyToken),
			status: 401, errType: "authentication_error"},
		{name: "client's key passes, token as bearer refused", cfg: passToken, header: with("Authorization", "Bearer "+proxyToken),
			status: 401, errType: "authentication_error"},
		{name: "client's key passes, no token", cfg: passToken, header: with("x-api-key", clientKey),
			status: 401, errType: "authentication_error"},
		{name: "token checked before the route", cfg: injectToken, method: http.MethodGet, path: "/v1/models",
			status: 401, errType: "authentication_error"},

		{name: "oversize body", cfg: small, header: jsonCT, body: []byte(`{"model":"` + strings.Repeat("x", 2048) + `"}`),
			status: 413, errType: "request_too_large", errText: "larger than 1024 bytes (--max-body-bytes)"},
		{name: "body at the bound", cfg: small, header: jsonCT, body: []byte(`{"model":"` + strings.Repeat("x", 1024-12) + `"}`),
			status: 200, upstreamKey: upstreamKey},
	}
	for _, mode := range []proxy.Mode{proxy.ModePassthrough, proxy.ModeEmulate} {
		for _, tt := range tests {
			t.Run(mode.String()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := testCtx(t)
				up := newKeyRecorder(t)
				cfg := tt.cfg
				cfg.Upstream, cfg.Mode = up.URL, mode
				url, _ := serveFront(t, cfg)
				method, path, reqBody := tt.method, tt.path, tt.body
				if method == "" {
					method = http.MethodPost
				}
				if path == "" {
					path = "/v1/messages"
				}
				if reqBody == nil && method == http.MethodPost {
					reqBody = body
				}
				req, err := http.NewRequestWithContext(ctx, method, url+path, bytes.NewReader(reqBody))
				if err != nil {
					t.Fatal(err)
				}
				if tt.host != "" {
					req.Host = tt.host
				}
				for k, v := range tt.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, out)
				}
				got := up.seen()
				if tt.upstreamKey == "" {
					if len(got) > 0 {
						t.Fatalf("the upstream saw %d request(s), key %q", len(got), got[0].apiKey)
					}
					typ, msg := apiError(t, out)
					if typ != tt.errType || !strings.Contains(msg, tt.errText) {
						t.Fatalf("error %s %q, want %s containing %q", typ, msg, tt.errType, tt.errText)
					}
					if strings.Contains(string(out), proxyToken) || strings.Contains(string(out), upstreamKey) {
						t.Fatalf("the refusal shows a secret: %s", out)
					}
					return
				}
				if len(got) != 1 {
					t.Fatalf("the upstream saw %d requests, want 1", len(got))
				}
				// As sent: the key goes up in the header the client used.
				key := got[0].apiKey
				if key == "" {
					key = strings.TrimPrefix(got[0].auth, "Bearer ")
				}
				if key != tt.upstreamKey || got[0].token != "" ||
					strings.Contains(got[0].auth, proxyToken) || strings.Contains(got[0].apiKey, proxyToken) {
					t.Fatalf("upstream saw x-api-key %q, Authorization %q, %s %q; want the key %q and no token",
						got[0].apiKey, got[0].auth, proxy.TokenHeader, got[0].token, tt.upstreamKey)
				}
				if method == http.MethodPost && !bytes.Equal(got[0].body, reqBody) {
					t.Fatalf("upstream body %s, want %s", got[0].body, reqBody)
				}
			})
		}
	}
}

// TestSlowBody trickles a body more slowly than the body timeout allows:
// 408, the connection is closed, and the upstream sees nothing.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	for _, mode := range []proxy.Mode{proxy.ModePassthrough, proxy.ModeEmulate} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			up := newKeyRecorder(t)
			url, _ := serveFront(t, proxy.Config{Upstream: up.URL, Mode: mode, APIKey: upstreamKey, BodyTimeout: 300 * time.Millisecond})
			addr := strings.TrimPrefix(url, "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// 1000 bytes at one per 50 ms would take 50 s.
			fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
			defer trickle.Start(c, []byte(" "), 50*time.Millisecond)()
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a slow body after %v: %v", time.Since(start), err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			if typ, msg := apiError(t, out); typ != "timeout_error" || !strings.Contains(msg, "did not arrive within 300ms") {
				t.Fatalf("error %s %q", typ, msg)
			}
			// The server closes the connection: the next read ends.
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("the connection is still open after the 408: %v", err)
			}
			if n := len(up.seen()); n > 0 {
				t.Fatalf("the upstream saw %d request(s)", n)
			}
		})
	}
}

// isReset reports whether err is a connection reset (the server closed the
// connection while the client was still writing).
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// TestStreamOutlivesTimeouts streams an answer that lasts much longer
// than every timeout of the front door: each event arrives as it is sent,
// and the stream is not cut (as a write timeout on the server would cut
// it).
func TestStreamOutlivesTimeouts(t *testing.T) {
	t.Parallel()
	const events, gap = 6, 100 * time.Millisecond
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "event: ping\ndata: {\"type\":\"ping\",\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(gap)
		}
		_, _ = io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	for _, mode := range []proxy.Mode{proxy.ModePassthrough, proxy.ModeEmulate} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			url, _ := serveFront(t, proxy.Config{Upstream: up, Mode: mode, APIKey: upstreamKey,
				BodyTimeout: gap, ReadHeaderTimeout: gap, IdleTimeout: gap})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages",
				strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var arrivals []time.Duration
			start := time.Now()
			stopped := false
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					arrivals = append(arrivals, time.Since(start))
					stopped = strings.Contains(sc.Text(), "message_stop")
				}
			}
			if err := sc.Err(); err != nil || len(arrivals) != events+1 || !stopped {
				t.Fatalf("stream cut after %d events (%v): %v", len(arrivals), arrivals, err)
			}
			// Streamed, not buffered: the first event came well before the last.
			if first, last := arrivals[0], arrivals[len(arrivals)-1]; last-first < (events-2)*gap {
				t.Fatalf("events arrived at %v: buffered", arrivals)
			}
		})
	}
}

// TestSDKWithToken runs the Go SDK through a proxy with a token, set up as
// the documentation says: when the proxy holds the key, the client's API
// key is the token; when the client's own key passes through, the token
// goes in its own header.
func TestSDKWithToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     proxy.Config
		opts    []option.RequestOption
		wantKey string
	}{
		{"the proxy holds the key", proxy.Config{APIKey: upstreamKey, Token: proxyToken},
			[]option.RequestOption{option.WithAPIKey(proxyToken)}, upstreamKey},
		{"the proxy holds the key, bearer", proxy.Config{APIKey: upstreamKey, Token: proxyToken, Auth: proxy.AuthBearer},
			[]option.RequestOption{option.WithAuthToken(proxyToken)}, upstreamKey},
		{"the client's key passes", proxy.Config{Token: proxyToken},
			[]option.RequestOption{option.WithAPIKey(clientKey), option.WithHeader(proxy.TokenHeader, proxyToken)}, clientKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := newKeyRecorder(t)
			cfg := tt.cfg
			cfg.Upstream, cfg.Mode = up.URL, proxy.ModeEmulate
			url, _ := serveFront(t, cfg)
			client := sdk.NewClient(append([]option.RequestOption{option.WithBaseURL(url), option.WithMaxRetries(0)}, tt.opts...)...)
			m, err := client.Messages.New(testCtx(t), sdk.MessageNewParams{Model: "m", MaxTokens: 5,
				Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}})
			if err != nil {
				t.Fatalf("Messages.New: %v", err)
			}
			if len(m.Content) == 0 || m.Content[0].Text != "hello" {
				t.Fatalf("answer %s", m.RawJSON())
			}
			got := up.seen()
			if len(got) != 1 {
				t.Fatalf("the upstream saw %d requests", len(got))
			}
			key := got[0].apiKey
			if key == "" {
				key = strings.TrimPrefix(got[0].auth, "Bearer ")
			}
			if key != tt.wantKey || got[0].token != "" {
				t.Fatalf("upstream saw x-api-key %q, Authorization %q, token header %q", got[0].apiKey, got[0].auth, got[0].token)
			}
			// Without the token the SDK gets the API's authentication error.
			bare := sdk.NewClient(option.WithBaseURL(url), option.WithMaxRetries(0), option.WithAPIKey(clientKey))
			_, err = bare.Messages.New(testCtx(t), sdk.MessageNewParams{Model: "m", MaxTokens: 5,
				Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}})
			var apiErr *sdk.Error
			if !asError(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(err.Error(), "authentication_error") {
				t.Fatalf("without the token: %v", err)
			}
		})
	}
}
