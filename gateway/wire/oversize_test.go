package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestMsgHead reads the id and method of JSON-RPC messages as the MCP
// library would decode them.
func TestMsgHead(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name, msg string
		action    string
		id        string
	}{
		{"go order", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`, OversizeFailedCall, "7"},
		{"typescript order", `{"result":{"content":[{"type":"text","text":"` + long + `"}]},"jsonrpc":"2.0","id":7}`, OversizeFailedCall, "7"},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","result":{}}`, OversizeFailedCall, `"a-1"`},
		{"spaces", " {\"jsonrpc\" : \"2.0\" , \"id\" : 12 , \"result\" : {} }\r\n", OversizeFailedCall, "12"},
		{"ids inside the result do not count", `{"result":{"id":99,"items":[{"id":98}],"s":"\"id\":97"},"id":3}`, OversizeFailedCall, "3"},
		{"the last id counts", `{"id":1,"result":{},"id":2}`, OversizeFailedCall, "2"},
		{"keys fold case", `{"ID":5,"result":{}}`, OversizeFailedCall, "5"},
		{"escaped key", `{"\u0069d":6,"result":{}}`, OversizeFailedCall, "6"},
		{"escapes in strings", `{"result":{"t":"a\\\"b\"}"},"id":8}`, OversizeFailedCall, "8"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + long + `"}}`, OversizeDropped, ""},
		{"request of the server", `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}`, OversizeDropped, ""},
		{"no id", `{"junk":"` + long + `"}`, OversizeRestarted, ""},
		{"null id", `{"id":null,"error":{"code":1,"message":"x"}}`, OversizeRestarted, ""},
		{"fractional id", `{"id":1.5,"result":{}}`, OversizeRestarted, ""},
		{"exponent id", `{"id":1e3,"result":{}}`, OversizeRestarted, ""},
		{"id too large for a float", `{"id":9007199254740993,"result":{}}`, OversizeRestarted, ""},
		{"object id", `{"id":{"a":1},"result":{}}`, OversizeRestarted, ""},
		{"id longer than kept", `{"id":"` + long + `","result":{}}`, OversizeRestarted, ""},
		{"cut short", `{"jsonrpc":"2.0","id":7,"result":{"content":"` + long, OversizeRestarted, ""},
		{"an array", `[{"jsonrpc":"2.0","id":7,"result":{}}]`, OversizeRestarted, ""},
		{"not JSON", `hello`, OversizeRestarted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h MsgHead
			// Written in pieces of every size, as reads come.
			for rest, n := []byte(tc.msg), 1; len(rest) > 0; n = n*2 + 1 {
				k := min(n, len(rest))
				_, _ = h.Write(rest[:k])
				rest = rest[k:]
			}
			ev := h.decide(int64(len(tc.msg)))
			if ev.Action != tc.action || ev.ID != tc.id {
				t.Errorf("decide = %s %q, want %s %q", ev.Action, ev.ID, tc.action, tc.id)
			}
		})
	}
}

// FuzzMsgHead checks MsgHead against encoding/json, which the MCP library
// decodes messages with: for every complete JSON object, the same id and
// the same answer to whether there is a method.
func FuzzMsgHead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`, `{"result":{"id":1},"id":"x"}`, `{"ID":1,"Id":2}`,
		`{"method":"m","params":[1,{"id":3}]}`, `{"\u0069\u0064":[1, 2]}`, `{"id":"\"}"}`, `{}`, `[]`, `{"a":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h MsgHead
		_, _ = h.Write(data)
		ev := h.decide(int64(len(data))) // never panics, whatever the bytes
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil || top == nil {
			// Not a JSON object: MsgHead checks no more than it needs
			// (a stray comma passes), and what it decides for such
			// bytes from a server only ends a call early.
			if ev.Action == OversizeFailedCall && (len(ev.ID) == 0 || ev.ID[0] != '"' && ev.ID[0] != '-' && (ev.ID[0] < '0' || ev.ID[0] > '9')) {
				t.Fatalf("answered %q for %q", ev.ID, data)
			}
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			return // a JSON object whose id or method the library refuses
		}
		if !h.done {
			t.Fatalf("a JSON object read as incomplete: %q", data)
		}
		if h.method != (msg.Method != nil) {
			t.Fatalf("method = %v, encoding/json: %q, in %q", h.method, msg.Method, data)
		}
		if h.idLong {
			return
		}
		var a, b bytes.Buffer
		errA, errB := json.Compact(&a, h.id), json.Compact(&b, msg.ID)
		if len(h.id) == 0 && len(msg.ID) == 0 {
			return
		}
		if errA != nil || errB != nil || a.String() != b.String() {
			t.Fatalf("id = %q, encoding/json: %q, in %q", h.id, msg.ID, data)
		}
	})
}

// TestFilterStdout: a line over the bound is never passed on; in its place
// comes an error response for its id, or nothing (a notification), or the
// end of the output with errResetOversize (no id). It skips under the race
// detector, which makes scanning its 16 MiB lines slow (TestOversizedMessage
// runs the filter there, between processes); .ci/run runs it without.
func TestFilterStdout(t *testing.T) {
	if raceEnabled {
		t.Skip("16 MiB lines under the race detector: run without -race (.ci/run does)")
	}
	t.Parallel()
	big := strings.Repeat("y", MaxMessageBytes)
	before, after := `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`
	for _, tc := range []struct {
		name    string
		line    string
		want    []string // what is read after before
		wantErr error
		action  string
	}{
		{"response", `{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":2}`, []string{`"id":2,"error"`, after}, nil, OversizeFailedCall},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`, []string{after}, nil, OversizeDropped},
		{"no id", `{"junk":"` + big + `"}`, nil, errResetOversize, OversizeRestarted},
		{"just under the bound", `{"id":2,"result":"` + big[:MaxMessageBytes-30] + `"}`, []string{`"id":2,"result":"yyy`, after}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := strings.Join([]string{before, tc.line, after}, "\n") + "\n"
			pr, pw := io.Pipe()
			var events []OversizeEvent
			var tail bytes.Buffer
			go func() {
				err := filterStdout(strings.NewReader(in), pw, &tail, slog.New(slog.DiscardHandler), func(ev OversizeEvent) { events = append(events, ev) })
				pw.CloseWithError(err)
			}()
			out, err := io.ReadAll(pr)
			if !errors.Is(err, tc.wantErr) && !(tc.wantErr == nil && err == nil) {
				t.Fatalf("read error %v, want %v", err, tc.wantErr)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if lines[0] != before {
				t.Fatalf("first line %.80q", lines[0])
			}
			if len(lines)-1 != len(tc.want) {
				t.Fatalf("%d lines after the first, want %d: %.300q", len(lines)-1, len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i+1], w) || len(lines[i+1]) > MaxMessageBytes {
					t.Errorf("line %d = %.200q, want %q in it", i+1, lines[i+1], w)
				}
			}
			if tc.action == "" {
				if len(events) != 0 {
					t.Errorf("events %+v for a line under the bound", events)
				}
				return
			}
			if len(events) != 1 || events[0].Action != tc.action || events[0].Size <= MaxMessageBytes {
				t.Errorf("events %+v, want one %s", events, tc.action)
			}
			if !strings.Contains(tail.String(), "over the size limit") {
				t.Errorf("stderr tail %q does not tell", tail.String())
			}
		})
	}
}
