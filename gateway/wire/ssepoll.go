package wire

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SSE polling (MCP 2025-11-25): a server may end the event stream of a
// request before it answers, with a retry field that says how long the
// client should wait before it reconnects (with Last-Event-ID) for the
// rest. The MCP library reconnects to the upstream by itself, so the
// gateway would hold its client's stream open all that while. Instead it
// passes the upstream's decision on: when the stream of a forwarded call
// ends unanswered after a retry field, the client's stream of that call is
// ended too, with the same delay (at most maxPollRetry), and the client
// reconnects to the gateway, which replays the answer from its event
// store once the upstream has given it.

// maxPollRetry bounds the reconnection delay an upstream can ask the
// gateway's clients for.
const maxPollRetry = time.Minute

type pollKey struct{}

// WithPolling marks ctx, the context of a call forwarded upstream, with
// the function that ends the client's event stream of that call (the
// MCP library's RequestExtra.CloseSSEStream). A request without one (a
// 2026-07-28 request, stdio) is not marked.
func WithPolling(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil {
		return ctx
	}
	extra, ok := any(req.Extra).(*mcp.RequestExtra)
	if !ok || extra == nil || extra.CloseSSEStream == nil {
		return ctx
	}
	return context.WithValue(ctx, pollKey{}, extra.CloseSSEStream)
}

// pollCloser is the function WithPolling put in ctx, or nil.
func pollCloser(ctx context.Context) func(mcp.CloseSSEStreamArgs) {
	f, _ := ctx.Value(pollKey{}).(func(mcp.CloseSSEStreamArgs))
	return f
}

// pollBody watches an upstream's event stream of a forwarded call, as the
// MCP library reads it, for a retry field followed by the end of the
// stream without the call's answer; then it ends the client's stream with
// that delay (see above). It reads lines as they pass: only a line's first
// bytes are kept, to tell its field, and the data of events only once a
// retry field was seen, to tell an answer from a notification.
type pollBody struct {
	rc    io.ReadCloser
	close func(mcp.CloseSSEStreamArgs)

	head      []byte // the first bytes of the current line
	field     string // the current line's field, once known
	value     []byte // the current line's value, for retry and data fields
	data      []byte // the current event's data, once a retry was seen
	retry     time.Duration
	retried   bool // a retry field was seen
	answered  bool // the call's answer was seen
	finished  bool
	lineStart bool
	afterCR   bool // the last line ended with CR: a LF next is part of that end
	space     bool // the field's colon was the last byte read: a space may follow
}

// newPollBody wraps rc, the event stream of a call whose client stream
// close ends.
func newPollBody(rc io.ReadCloser, close func(mcp.CloseSSEStreamArgs)) *pollBody {
	return &pollBody{rc: rc, close: close, lineStart: true}
}

func (b *pollBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.scan(p[:n])
	if err == io.EOF {
		b.finish()
	}
	return n, err
}

func (b *pollBody) Close() error { return b.rc.Close() }

// pollFieldBytes is how much of a line is kept to tell its field.
const pollFieldBytes = len("retry:")

// scan reads a fragment of the stream.
func (b *pollBody) scan(p []byte) {
	for len(p) > 0 {
		if b.afterCR {
			b.afterCR = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		part := p
		if i >= 0 {
			part = p[:i]
		}
		b.linePart(part)
		if i < 0 {
			return
		}
		b.afterCR = p[i] == '\r'
		b.endLine()
		p = p[i+1:]
	}
}

// linePart reads part of a line, not its end.
func (b *pollBody) linePart(part []byte) {
	if b.lineStart && len(part) > 0 {
		b.lineStart = false
	}
	if b.field == "" {
		take := min(len(part), pollFieldBytes+1-len(b.head))
		b.head = append(b.head, part[:take]...)
		part = part[take:]
		if f, v, ok := bytes.Cut(b.head, []byte(":")); ok {
			b.field = string(f)
			if b.field == "" {
				b.field = "comment"
			}
			// One space after the colon is not part of the value; it may
			// come in the next fragment.
			b.space = len(v) == 0
			b.value = append(b.value[:0], bytes.TrimPrefix(v, []byte(" "))...)
		} else if len(b.head) > pollFieldBytes {
			b.field = "other"
		}
	}
	if b.space && len(part) > 0 {
		b.space = false
		part = bytes.TrimPrefix(part, []byte(" "))
	}
	switch {
	case b.field == "retry" && len(b.value) < 16:
		b.value = append(b.value, part[:min(len(part), 16)]...)
	case b.field == "data" && b.retried:
		b.value = append(b.value, part...)
	}
}

// endLine reads the end of a line: a blank line ends an event.
func (b *pollBody) endLine() {
	blank := b.lineStart && len(b.head) == 0
	switch b.field {
	case "retry":
		// The value is ASCII digits only; anything else is ignored
		// (the SSE rules).
		if ms, err := strconv.ParseUint(string(b.value), 10, 32); err == nil {
			b.retry = min(time.Duration(ms)*time.Millisecond, maxPollRetry)
			b.retried = true
		}
	case "data":
		if b.retried {
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, b.value...)
		}
	}
	if blank {
		b.endEvent()
	}
	b.head, b.field, b.value, b.lineStart, b.space = b.head[:0], "", b.value[:0], true, false
}

// endEvent reads the end of an event.
func (b *pollBody) endEvent() {
	if len(b.data) > 0 && !b.answered {
		if m, err := jsonrpc.DecodeMessage(b.data); err == nil {
			_, b.answered = m.(*jsonrpc.Response)
		}
	}
	b.data = b.data[:0]
}

// finish reads the end of the stream.
func (b *pollBody) finish() {
	if b.finished {
		return
	}
	b.finished = true
	if len(b.head) > 0 || b.field != "" {
		b.endLine()
	}
	b.endEvent()
	if b.retried && !b.answered {
		b.close(mcp.CloseSSEStreamArgs{RetryAfter: b.retry})
	}
}
