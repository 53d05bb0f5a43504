package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
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

// FuzzReader reads arbitrary streams: no panic, and every event returned
// is one the input held.
func FuzzReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: {}\n\n"))
	f.Add([]byte(": c\n\ndata: x\ndata: y\n\nevent: z"))
	f.Add([]byte("\r\n\r\ndata"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		for range 10000 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > len(in) {
				t.Fatalf("event larger than its stream")
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
