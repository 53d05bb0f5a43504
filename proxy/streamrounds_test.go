package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/internal/sse"
)

// TestEmulatedSearchRoundsStream: with server-side search emulated and a
// streaming client, the model's text reaches the client while the upstream
// is still streaming the round, not when the round is over.
func TestEmulatedSearchRoundsStream(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	release := make(chan struct{})
	var released atomic.Bool
	var calls atomic.Int32
	event := func(w http.ResponseWriter, name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		w.(http.Flusher).Flush()
	}
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"stream":true`) {
			t.Errorf("the proxy asked the upstream for a whole message: %s", body)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		msg := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":1}}}`
		if calls.Add(1) == 1 {
			event(w, "message_start", msg)
			event(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			event(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Looking for "}}`)
			select { // the rest only once the client has the first words
			case <-release:
				released.Store(true)
			case <-time.After(5 * time.Second):
				t.Error("the client had not seen the first words 5s into the round: the round was buffered")
			}
			event(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a Slack tool."}}`)
			event(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
			event(w, "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"tool_search_tool_bm25","input":{}}}`)
			event(w, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}`)
			event(w, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"post a slack message\"}"}}`)
			event(w, "content_block_stop", `{"type":"content_block_stop","index":1}`)
			event(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}`)
			event(w, "message_stop", `{"type":"message_stop"}`)
			return
		}
		if !strings.Contains(string(body), `"name":"mcp__slack__post_message"`) {
			t.Errorf("the second round lacks the tool found: %s", body)
		}
		event(w, "message_start", msg)
		event(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Found it."}}`)
		event(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		event(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`)
		event(w, "message_stop", `{"type":"message_stop"}`)
	})
	_, url := startProxy(t, proxy.Config{Upstream: up, Mode: proxy.ModeEmulate, ToolSearch: proxy.Unsupported})
	params := sdk.MessageNewParams{Model: "m", MaxTokens: 100, Tools: serverSearchTools("tool_search_tool_bm25_20251119"),
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("post to slack"))}}
	b, _ := json.Marshal(params)
	var top map[string]any
	_ = json.Unmarshal(b, &top)
	top["stream"] = true
	b, _ = json.Marshal(top)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body)
	var acc sse.Accumulator
	var seq []string
	for !acc.Done {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("stream: %v after %q", err, seq)
		}
		if ev.Name == "ping" {
			continue
		}
		if err := acc.Add(ev); err != nil {
			t.Fatal(err)
		}
		seq = append(seq, ev.Name)
		if ev.Name == "content_block_delta" && strings.Contains(string(ev.Data), "Looking for ") {
			if released.Load() {
				t.Fatal("the first words came after the upstream's round was over")
			}
			close(release)
		}
	}
	var types, texts []string
	for _, blk := range acc.Blocks() {
		var v struct{ Type, Text string }
		_ = json.Unmarshal(blk, &v)
		types = append(types, v.Type)
		if v.Text != "" {
			texts = append(texts, v.Text)
		}
	}
	if got := strings.Join(types, ","); got != "text,server_tool_use,tool_search_tool_result,text" {
		t.Fatalf("blocks %s (events %q)", got, seq)
	}
	if got := strings.Join(texts, "|"); got != "Looking for a Slack tool.|Found it." {
		t.Fatalf("texts %q", got)
	}
	if !strings.Contains(string(acc.Blocks()[1]), `"query":"post a slack message"`) || !strings.Contains(string(acc.Blocks()[2]), "mcp__slack__post_message") {
		t.Fatalf("search blocks %s %s", acc.Blocks()[1], acc.Blocks()[2])
	}
	if !released.Load() {
		t.Fatal("the upstream was never released")
	}
}
