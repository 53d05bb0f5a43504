package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// TestAccumulatorRoundTrip streams messages with WriteMessage and rebuilds
// them: the blocks come back with their text, thinking, signature,
// citations and input.
func TestAccumulatorRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, msg string
	}{
		{"text and tool_use", `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"hi <b>"},{"type":"tool_use","id":"t","name":"n","input":{"a":[1,2],"b":"c"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4}}`},
		{"thinking and citations", `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"x","citations":[{"type":"char_location","cited_text":"y"}]}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2}}`},
		{"no blocks", `{"id":"m","type":"message","role":"assistant","model":"x","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := WriteMessage(NewWriter(&buf), json.RawMessage(tt.msg)); err != nil {
				t.Fatal(err)
			}
			var acc Accumulator
			rd := NewReader(&buf)
			for {
				ev, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := acc.Add(ev); err != nil {
					t.Fatal(err)
				}
			}
			if !acc.Done {
				t.Fatal("no message_stop")
			}
			var want struct {
				Content    []any           `json:"content"`
				StopReason json.RawMessage `json:"stop_reason"`
			}
			_ = json.Unmarshal([]byte(tt.msg), &want)
			var got []any
			for _, b := range acc.Blocks() {
				var v any
				_ = json.Unmarshal(b, &v)
				got = append(got, v)
			}
			wb, _ := json.Marshal(want.Content)
			gb, _ := json.Marshal(got)
			if len(want.Content) == 0 && len(got) == 0 {
				gb = wb
			}
			if string(wb) != string(gb) || string(acc.StopReason) != string(want.StopReason) {
				t.Fatalf("rebuilt %s %s, want %s %s", gb, acc.StopReason, wb, want.StopReason)
			}
		})
	}
}

// FuzzAccumulator feeds arbitrary events: nothing panics, and the blocks
// are JSON.
func FuzzAccumulator(f *testing.F) {
	f.Add("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","input":{}}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)
	f.Add("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{}}`, `{"type":"content_block_stop","index":0}`)
	f.Add("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`, `{"type":"message_stop"}`)
	f.Fuzz(func(t *testing.T, name, a, b string) {
		var acc Accumulator
		for _, d := range []string{a, b, `{"type":"content_block_stop","index":0}`} {
			_ = acc.Add(Event{Name: name, Data: []byte(d)})
		}
		for _, blk := range acc.Blocks() {
			if !json.Valid(blk) {
				t.Fatalf("block %s", blk)
			}
		}
	})
}
