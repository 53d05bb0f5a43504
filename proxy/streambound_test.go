package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/internal/sse"
)

// serverSearchBody is a request with server-side tool search, streamed or
// not.
func serverSearchBody(t testing.TB, stream bool) []byte {
	params := sdk.MessageNewParams{Model: "m", MaxTokens: 100, Tools: serverSearchTools("tool_search_tool_bm25_20251119"),
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("post to slack"))}}
	var top map[string]any
	_ = json.Unmarshal(mustMarshal(t, params), &top)
	if stream {
		top["stream"] = true
	}
	return mustMarshal(t, top)
}

const messageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":1}}}`

// TestEmulatedAnswerBounded: an upstream that answers a round of emulated
// server-side search with more than the proxy holds (MaxRoundBytes, here
// 1 MiB), streamed or whole, gets its call closed, and the client gets an
// api_error naming the bound (an error event in a started stream), never a
// cut message nor an unbounded buffer. Before the bound, the streamed case
// also cost time in the square of the answer.
func TestEmulatedAnswerBounded(t *testing.T) {
	t.Parallel()
	const (
		limit = 1 << 20
		sent  = 16 << 20 // what the upstream tries to send
	)
	bound := strconv.Itoa(limit)
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"streamed", true},
		{"whole", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			var written atomic.Int64
			finished := make(chan bool, 1) // whether the upstream wrote all it meant to
			up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				write := func(s string) bool {
					n, err := io.WriteString(w, s)
					written.Add(int64(n))
					return err == nil
				}
				piece := strings.Repeat("All work and no play. ", 64<<10/22)
				ok := true
				if tc.stream {
					w.Header().Set("Content-Type", "text/event-stream")
					ok = write("event: message_start\ndata: "+messageStart+"\n\n") &&
						write(`event: content_block_start`+"\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n")
					delta := `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + piece + `"}}` + "\n\n"
					for ok && written.Load() < sent {
						ok = write(delta)
					}
				} else {
					w.Header().Set("Content-Type", "application/json")
					ok = write(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`)
					for ok && written.Load() < sent {
						ok = write(piece)
					}
					ok = ok && write(`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
				}
				finished <- ok
			})
			_, url := startProxy(t, proxy.Config{Upstream: up, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported, MaxRoundBytes: limit,
				Logger: quietLogger()})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(string(serverSearchBody(t, tc.stream))))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var errData []byte
			if tc.stream {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want a stream", resp.StatusCode)
				}
				rd := sse.NewReader(resp.Body)
				for {
					ev, err := rd.Next()
					if err != nil {
						t.Fatalf("the stream ended (%v) without an error event", err)
					}
					if ev.Name == "message_stop" {
						t.Fatal("the stream ended as a whole message")
					}
					if ev.Name == "error" {
						errData = ev.Data
						break
					}
				}
			} else {
				if resp.StatusCode != http.StatusBadGateway {
					t.Fatalf("status %d, want 502", resp.StatusCode)
				}
				errData, _ = io.ReadAll(resp.Body)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(errData, &e) != nil || e.Type != "error" || e.Error.Type != "api_error" || !strings.Contains(e.Error.Message, bound) {
				t.Fatalf("error %s, want an api_error naming the bound %s", errData, bound)
			}
			select {
			case ok := <-finished:
				if ok && tc.stream {
					t.Errorf("the upstream wrote all %d bytes: its call was not closed", written.Load())
				}
			case <-ctx.Done():
				t.Fatal("the upstream's handler never returned")
			}
		})
	}
}

// TestClientHangUpCancelsUpstream: a client that hangs up while its answer
// is on the way cancels the proxy's upstream request, in every mode and
// way a request is served: the stand-in upstream sees its request's
// context end within a bound.
func TestClientHangUpCancelsUpstream(t *testing.T) {
	t.Parallel()
	const within = 3 * time.Second
	plain := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name   string
		cfg    proxy.Config
		body   func(t testing.TB) []byte
		stream bool // the upstream streams, and the client hangs up after message_start
	}{
		{"passthrough", proxy.Config{Mode: proxy.ModePassthrough}, func(testing.TB) []byte { return []byte(plain) }, true},
		{"emulate, forwarded", proxy.Config{Mode: proxy.ModeEmulate}, func(testing.TB) []byte { return []byte(plain) }, true},
		{"emulate, server-side search, streamed", proxy.Config{Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported},
			func(t testing.TB) []byte { return serverSearchBody(t, true) }, true},
		{"emulate, server-side search, whole", proxy.Config{Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported},
			func(t testing.TB) []byte { return serverSearchBody(t, false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			arrived := make(chan struct{}, 1)
			cancelled := make(chan time.Time, 1)
			up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tc.stream {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "event: message_start\ndata: %s\n\n", messageStart)
					w.(http.Flusher).Flush()
				}
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
					cancelled <- time.Now()
				case <-time.After(15 * time.Second):
				}
			})
			cfg := tc.cfg
			cfg.Upstream, cfg.Logger = up, quietLogger()
			_, url := startProxy(t, cfg)
			cctx, hangUp := context.WithCancel(ctx)
			defer hangUp()
			req, _ := http.NewRequestWithContext(cctx, http.MethodPost, url+"/v1/messages", strings.NewReader(string(tc.body(t))))
			req.Header.Set("Content-Type", "application/json")
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- err
					return
				}
				defer resp.Body.Close()
				rd := sse.NewReader(resp.Body)
				for {
					ev, err := rd.Next()
					if err != nil {
						done <- err
						return
					}
					if ev.Name == "message_start" {
						done <- nil
						return
					}
				}
			}()
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatal("the request never reached the upstream")
			}
			if tc.stream {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("the client did not get message_start: %v", err)
					}
				case <-ctx.Done():
					t.Fatal("the client never got message_start")
				}
			}
			hungUp := time.Now()
			hangUp()
			select {
			case at := <-cancelled:
				t.Logf("the upstream's request was cancelled %v after the client hung up", at.Sub(hungUp))
			case <-time.After(within):
				t.Fatalf("the upstream's request was still running %v after the client hung up", within)
			}
			if !tc.stream {
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("the client's call ended with %v, want its cancellation", err)
				}
			}
		})
	}
}
