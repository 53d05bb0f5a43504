package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readPoll passes stream through a pollBody in fragments of at most step
// bytes and reports the delays it ended the client's stream with.
func readPoll(t testing.TB, stream string, step int) []time.Duration {
	t.Helper()
	var got []time.Duration
	b := newPollBody(io.NopCloser(strings.NewReader(stream)), func(a mcp.CloseSSEStreamArgs) { got = append(got, a.RetryAfter) })
	buf := make([]byte, max(step, 1))
	var out bytes.Buffer
	for {
		n, err := b.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	if out.String() != stream {
		t.Fatalf("the stream changed on its way through:\n got %q\nwant %q", out.String(), stream)
	}
	return got
}

func TestPollBody(t *testing.T) {
	t.Parallel()
	const answer = `data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n\n"
	const progress = `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"result":"x"}}` + "\n\n"
	tests := []struct {
		name   string
		stream string
		want   []time.Duration // nil: the client's stream is left alone
	}{
		{"no retry, answered", "id: 1\ndata: \n\n" + answer, nil},
		{"no retry, cut short", "id: 1\ndata: \n\n", nil},
		{"retry then end, unanswered", "id: 1\ndata: \n\nevent: close\nretry: 250\n\n", []time.Duration{250 * time.Millisecond}},
		{"retry on the priming event, then answered", "id: 1\nretry: 500\ndata: \n\n" + progress + answer, nil},
		{"retry, a notification, end", "id: 1\nretry: 500\ndata: \n\n" + progress, []time.Duration{500 * time.Millisecond}},
		{"CRLF line ends", "id: 1\r\ndata: \r\n\r\nevent: close\r\nretry: 40\r\n\r\n", []time.Duration{40 * time.Millisecond}},
		{"CR line ends", "id: 1\rdata: \r\revent: close\rretry: 40\r\r", []time.Duration{40 * time.Millisecond}},
		{"no space after the colon", "retry:75\n\n", []time.Duration{75 * time.Millisecond}},
		{"last line without its end", "id: 1\ndata: \n\nretry: 30", []time.Duration{30 * time.Millisecond}},
		{"a delay past the bound is cut to it", "retry: 86400000\n\n", []time.Duration{maxPollRetry}},
		{"a retry that is not digits is ignored", "retry: 5s\n\nretry: -1\n\nretry: 1e3\n\n", nil},
		{"a retry too long is ignored", "retry: 12345678901234567890123\n\n", nil},
		{"a field named like retry is not one", "retryx: 10\n\nretr: 10\n\n", nil},
		{"a comment is not a field", ": retry: 10\n\n", nil},
		{"an answer split over data lines", "retry: 10\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n", nil},
		{"an error answer counts as the answer", "retry: 10\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}\n\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The same for any fragmentation of the stream.
			for _, step := range []int{1, 2, 3, 7, len(tc.stream)} {
				got := readPoll(t, tc.stream, step)
				if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
					t.Fatalf("read %d bytes at a time: ended the client's stream with %v, want %v", step, got, tc.want)
				}
			}
		})
	}
}

// FuzzPollBody checks that any stream passes through unchanged, in any
// fragments, ends the client's stream at most once, with a delay within
// the bound, and the same whatever the fragments.
func FuzzPollBody(f *testing.F) {
	for _, s := range []string{
		"id: 1\ndata: \n\nevent: close\nretry: 250\n\n",
		"retry: 10\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n",
		"retry:\n\n", ":\n", "\r\r\n\n", "data: {\n", "retry: 99999999999\n",
	} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, stream string, step int) {
		step = 1 + abs(step)%64
		whole := readPoll(t, stream, len(stream)+1)
		parts := readPoll(t, stream, step)
		if len(whole) > 1 || len(parts) != len(whole) || (len(whole) == 1 && parts[0] != whole[0]) {
			t.Fatalf("whole %v, in fragments of %d %v", whole, step, parts)
		}
		for _, d := range whole {
			if d < 0 || d > maxPollRetry {
				t.Fatalf("delay %v outside [0, %v]", d, maxPollRetry)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
