package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
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

// deltaStream is the events of a message with one text block filled by n
// text deltas of size bytes each (multi-byte and escaped characters among
// them), then one citation per 100 deltas.
func deltaStream(n, size int) []Event {
	piece := strings.Repeat("é\"<x", size/4+1)[:size-1] + "\n"
	for !utf8.ValidString(piece) {
		piece = piece[:len(piece)-2] + "\n"
	}
	delta, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]string{"type": "text_delta", "text": piece}})
	evs := []Event{
		{"message_start", []byte(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`)},
		{"content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"start: "}}`)},
	}
	for i := range n {
		evs = append(evs, Event{"content_block_delta", delta})
		if i%100 == 99 {
			evs = append(evs, Event{"content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"c"}}}`)})
		}
	}
	return append(evs,
		Event{"content_block_stop", []byte(`{"type":"content_block_stop","index":0}`)},
		Event{"message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`)},
		Event{"message_stop", []byte(`{"type":"message_stop"}`)})
}

// accumulate adds evs and returns the blocks and the stream's size.
func accumulate(tb testing.TB, evs []Event) ([]json.RawMessage, int) {
	var acc Accumulator
	n := 0
	for _, ev := range evs {
		n += len(ev.Data)
		if err := acc.Add(ev); err != nil {
			tb.Fatal(err)
		}
	}
	return acc.Blocks(), n
}

// TestAccumulateLinear: the memory the Accumulator allocates per byte of
// stream does not grow with the stream (it grew with the square of the
// text when every delta re-encoded the whole text), and the text rebuilt
// is every delta's. Not parallel: it reads the process's allocation count.
func TestAccumulateLinear(t *testing.T) {
	perByte := map[int]float64{}
	for _, n := range []int{500, 5000} {
		evs := deltaStream(n, 64)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		blocks, size := accumulate(t, evs)
		runtime.ReadMemStats(&after)
		perByte[n] = float64(after.TotalAlloc-before.TotalAlloc) / float64(size)
		var b struct {
			Text      string `json:"text"`
			Citations []any  `json:"citations"`
		}
		if len(blocks) != 1 || json.Unmarshal(blocks[0], &b) != nil {
			t.Fatalf("%d deltas: blocks %d", n, len(blocks))
		}
		var d struct {
			Delta struct{ Text string } `json:"delta"`
		}
		_ = json.Unmarshal(evs[2].Data, &d)
		if want := "start: " + strings.Repeat(d.Delta.Text, n); b.Text != want || len(b.Citations) != n/100 {
			t.Fatalf("%d deltas: text of %d bytes and %d citations, want %d bytes and %d", n, len(b.Text), len(b.Citations), len(want), n/100)
		}
	}
	t.Logf("allocated per byte of stream: %.1f (500 deltas), %.1f (5000 deltas)", perByte[500], perByte[5000])
	if perByte[5000] > 3*perByte[500] {
		t.Fatalf("10 times the deltas allocated %.1f times as much per byte (%.1f against %.1f): the work grows faster than the stream",
			perByte[5000]/perByte[500], perByte[5000], perByte[500])
	}
}

// TestAccumulatorLimit: a stream past the Limit is refused with
// ErrTooLarge at the event that passes it; one within it is read whole.
func TestAccumulatorLimit(t *testing.T) {
	t.Parallel()
	evs := deltaStream(100, 64)
	total := 0
	for _, ev := range evs {
		total += len(ev.Data)
	}
	for _, tc := range []struct {
		name    string
		limit   int64
		wantErr bool
	}{
		{"exactly the stream", int64(total), false},
		{"one byte short", int64(total - 1), true},
		{"a tenth", int64(total / 10), true},
		{"default", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			acc := Accumulator{Limit: tc.limit}
			var err error
			for _, ev := range evs {
				if err = acc.Add(ev); err != nil {
					break
				}
			}
			if tc.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrTooLarge)) {
				t.Fatalf("Add: %v, want ErrTooLarge: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), strconv.FormatInt(tc.limit, 10)) {
				t.Errorf("error %q does not say the bound", err)
			}
		})
	}
}

// BenchmarkAccumulate rebuilds a text block from 1,000, 10,000 and 100,000
// deltas of 64 bytes: ns/byte stays flat when the work is linear.
func BenchmarkAccumulate(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		evs := deltaStream(n, 64)
		size := 0
		for _, ev := range evs {
			size += len(ev.Data)
		}
		b.Run(strconv.Itoa(n)+"deltas", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				accumulate(b, evs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/byte")
		})
	}
}
