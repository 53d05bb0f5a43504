package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
)

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{"two events", "event: a\ndata: {}\n\nevent: b\ndata: 1\n\n", []Event{{"a", []byte("{}")}, {"b", []byte("1")}}, io.EOF},
		{"comments and blank lines", ": hi\n\n\nevent: a\ndata:x\n\n", []Event{{"a", []byte("x")}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{"", []byte("a\nb")}}, io.EOF},
		{"a block of an empty name and no data is skipped", "event:\n\nevent: a\nevent:\n\nevent: b\n\n", []Event{{"b", nil}}, io.EOF},
		{"empty data lines keep their line breaks", "data\ndata:\ndata: c\n\n", []Event{{"", []byte("\n\nc")}}, io.EOF},
		{"cut inside an event", "event: a\ndata: {", nil, io.ErrUnexpectedEOF},
		{"CRLF", "event: a\r\ndata: 1\r\n\r\n", []Event{{"a", []byte("1")}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(strings.NewReader(tt.in))
			var got []Event
			var err error
			for {
				var ev Event
				ev, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, ev)
			}
			if !errors.Is(err, tt.wantErr) || len(got) != len(tt.want) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || !bytes.Equal(got[i].Data, tt.want[i].Data) {
					t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestWriteMessageRoundTrip streams a message and checks that the events
// rebuild it.
func TestWriteMessageRoundTrip(t *testing.T) {
	t.Parallel()
	msg := `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"hi"},{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"q"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[]}},{"type":"thinking","thinking":"t","signature":"s"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2}}`
	var buf bytes.Buffer
	if err := WriteMessage(NewWriter(&buf), json.RawMessage(msg)); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf)
	var names []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ev.Name)
		var typ struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ev.Data, &typ) != nil || typ.Type != ev.Name {
			t.Fatalf("event %s has data %s", ev.Name, ev.Data)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop content_block_start content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
}

// FuzzReader reads arbitrary streams: no panic, every event returned is
// one the input held, and Reader reads the events the Anthropic SDK's
// decoder (ssestream) reads, but for the newline ssestream leaves at the
// end of each event's data; where the stream is cut inside an event,
// Reader says so and ssestream does not (the reason this package has a
// reader of its own: see the package doc).
func FuzzReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: {}\n\n"))
	f.Add([]byte(": c\n\ndata: x\ndata: y\n\nevent: z"))
	f.Add([]byte("\r\n\r\ndata"))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {}\n\n"))
	f.Add([]byte("id: 1\nretry: 5\nevent: a\ndata\ndata:\n\n: bye\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_del"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		var got []Event
		var end error
		for range 10000 {
			ev, err := r.Next()
			if err != nil {
				end = err
				break
			}
			if len(ev.Data) > len(in) {
				t.Fatalf("event larger than its stream")
			}
			got = append(got, ev)
		}
		if end == nil || len(in) > MaxLine {
			return
		}
		dec := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(in))})
		var sdk []Event
		for dec.Next() {
			ev := dec.Event()
			data := ev.Data
			if len(data) > 0 {
				data = data[:len(data)-1] // the "\n" ssestream ends data with
			}
			sdk = append(sdk, Event{Name: ev.Type, Data: bytes.Clone(data)})
		}
		if dec.Err() != nil {
			t.Fatalf("ssestream: %v", dec.Err())
		}
		switch {
		case errors.Is(end, io.EOF):
			// A whole stream: the same events.
		case errors.Is(end, io.ErrUnexpectedEOF):
			// Cut inside an event: ssestream drops it without an error.
		default:
			t.Fatalf("Reader: %v", end)
		}
		if len(got) != len(sdk) {
			t.Fatalf("Reader read %d events (%v), ssestream %d", len(got), end, len(sdk))
		}
		for i := range got {
			if got[i].Name != sdk[i].Name || !bytes.Equal(got[i].Data, sdk[i].Data) {
				t.Fatalf("event %d: Reader %q, ssestream %q", i, got[i], sdk[i])
			}
		}
	})
}

// FuzzWriteMessage streams arbitrary message bodies: no panic.
func FuzzWriteMessage(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"a"},{"type":"tool_use","input":{}}]}`))
	f.Add([]byte(`{"content":[1,null,{}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		_ = WriteMessage(NewWriter(io.Discard), in)
	})
}
