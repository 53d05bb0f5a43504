package wire

// Messages too large for one read. An upstream server's message is read
// whole before the MCP library decodes it, so its size is bounded
// (MaxMessageBytes). A message over the bound must not wedge the
// connection: the rest of it is skipped, and what the gateway does next
// depends on what the message was, which MsgHead finds out from its bytes
// as they go by, keeping only a few hundred of them:
//
//   - a response with a usable id (an integer or a string): the gateway
//     hands the library an error response for that id instead, so that the
//     one call fails with a clear message and the connection goes on;
//   - a notification or a request of the server (it has a method): it is
//     dropped (the server's own timeout ends a request it made);
//   - anything else: the connection cannot be trusted to be in step any
//     more, and the server is restarted (stdio) or the stream ended (HTTP).
//
// Each case is counted and logged, and shown in the server's status.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one message from an upstream server, on every
// transport: the MCP library's own bound for a line of stdio.
const MaxMessageBytes = mcp.DefaultMaxLineLength

// What the gateway did with a message over MaxMessageBytes.
const (
	OversizeFailedCall = "call_failed" // a response: its call got an error instead
	OversizeDropped    = "dropped"     // a notification or a server request
	OversizeRestarted  = "restarted"   // no usable id: the connection was reset
)

// OversizeEvent describes one message over the bound.
type OversizeEvent struct {
	Size   int64  // bytes, as far as they were read
	Action string // one of the oversize constants
	ID     string // the response's id, for call_failed
	Method bool   // the message had a method
}

// Bounds of what MsgHead keeps.
const (
	maxHeadKey = 64
	maxHeadID  = 256
)

// MsgHead finds, in a JSON-RPC message written to it in pieces, the raw
// bytes of its top-level "id" and whether it has a top-level "method". Key
// names compare without regard to case and with escapes decoded, as the
// MCP library's decoder reads them; when a key comes twice the last one
// counts, as there.
type MsgHead struct {
	started, done, bad bool
	depth              int
	inStr, esc         bool
	keyStr             bool // the string being read is a top-level key
	wantKey            bool // a top-level key comes next
	haveKey            bool // a top-level key was read; its ':' comes next
	key                []byte
	keyLong            bool
	inID               bool // reading the value of a top-level "id"
	val                []byte
	valLong            bool
	id                 []byte // the last top-level id's raw value
	idLong             bool
	method             bool
}

// Write reads the next bytes of the message; it never fails.
func (h *MsgHead) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		if h.inStr && !h.esc && !h.keyStr && !h.inID {
			// Inside a string that is not kept (most of a large
			// message): only a quote or a backslash matters.
			j := bytes.IndexAny(p[i:], `"\`)
			if j < 0 {
				break
			}
			i += j
		}
		h.step(p[i])
	}
	return len(p), nil
}

func (h *MsgHead) step(c byte) {
	if h.bad || h.done {
		return // what follows the closing brace (a line break) does not matter
	}
	if !h.started {
		switch c {
		case ' ', '\t', '\r', '\n':
		case '{':
			h.started, h.depth, h.wantKey = true, 1, true
		default:
			h.bad = true
		}
		return
	}
	if h.inStr {
		closing := false
		switch {
		case h.esc:
			h.esc = false
		case c == '\\':
			h.esc = true
		case c == '"':
			h.inStr, closing = false, true
		}
		switch {
		case h.keyStr && closing:
			h.keyStr, h.haveKey = false, true
		case h.keyStr:
			h.key, h.keyLong = keep(h.key, h.keyLong, c, maxHeadKey)
		case h.inID:
			h.val, h.valLong = keep(h.val, h.valLong, c, maxHeadID)
		}
		return
	}
	if h.depth == 1 {
		switch {
		case c == '"' && h.wantKey:
			h.inStr, h.keyStr, h.wantKey = true, true, false
			h.key, h.keyLong = h.key[:0], false
			return
		case c == ':' && h.haveKey:
			h.haveKey = false
			switch name := h.keyName(); {
			case strings.EqualFold(name, "id"):
				h.inID, h.val, h.valLong = true, h.val[:0], false
			case strings.EqualFold(name, "method"):
				h.method = true
			}
			return
		case c == ',':
			h.endMember()
			h.wantKey = true
			return
		case c == '}':
			h.endMember()
			h.depth, h.done = 0, true
			return
		}
	}
	switch c {
	case '"':
		h.inStr = true
	case '{', '[':
		h.depth++
	case '}', ']':
		if h.depth <= 1 {
			h.bad = true
			return
		}
		h.depth--
	}
	if h.inID {
		h.val, h.valLong = keep(h.val, h.valLong, c, maxHeadID)
	}
}

// keep appends c to b unless b already holds max bytes; long reports that
// something was left out.
func keep(b []byte, long bool, c byte, max int) ([]byte, bool) {
	if len(b) >= max {
		return b, true
	}
	return append(b, c), long
}

// keyName is the key just read, escapes decoded.
func (h *MsgHead) keyName() string {
	if h.keyLong {
		return "" // longer than any key that matters here
	}
	if bytes.IndexByte(h.key, '\\') < 0 {
		return string(h.key)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, h.key...), '"'), &s) != nil {
		return ""
	}
	return s
}

func (h *MsgHead) endMember() {
	if !h.inID {
		return
	}
	h.inID = false
	h.id, h.idLong = append(h.id[:0], bytes.TrimSpace(h.val)...), h.valLong
}

// responseID returns the id of a message that is a complete response with
// an id the gateway can answer for: a string, or an integer the MCP
// library keeps exactly (a JSON number it reads as a float64).
func (h *MsgHead) responseID() (json.RawMessage, bool) {
	if !h.done || h.method || h.idLong || len(h.id) == 0 {
		return nil, false
	}
	return usableID(h.id)
}

// usableID checks a raw JSON-RPC id: a JSON string, or an integer of at
// most 15 digits (well within what a float64 holds exactly), written
// without fraction or exponent.
func usableID(raw []byte) (json.RawMessage, bool) {
	switch {
	case len(raw) >= 2 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
	default:
		digits := raw
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
			return nil, false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return nil, false
			}
		}
	}
	return append(json.RawMessage(nil), raw...), true
}

// ID returns the raw value of the message's top-level "id" and whether it
// was cut short at the bound of what MsgHead keeps; ok is false until a
// whole message with an id has been written.
func (h *MsgHead) ID() (id []byte, long, ok bool) {
	if !h.done || len(h.id) == 0 {
		return nil, false, false
	}
	return h.id, h.idLong, true
}

// decide says what to do with a message over the bound whose bytes went
// through h.
func (h *MsgHead) decide(size int64) OversizeEvent {
	ev := OversizeEvent{Size: size, Method: h.method}
	if id, ok := h.responseID(); ok {
		ev.Action, ev.ID = OversizeFailedCall, string(id)
		return ev
	}
	if h.done && h.method {
		ev.Action = OversizeDropped
		return ev
	}
	ev.Action = OversizeRestarted
	return ev
}

// tooLargeResponse is the error response the gateway hands the MCP library
// in place of a response over the bound.
func tooLargeResponse(id string, size int64) []byte {
	msg := fmt.Sprintf("the server's response was %s (%d bytes), more than the %s the gateway accepts in one message; "+
		"it was discarded, and the server stays connected", sizeText(size), size, sizeText(MaxMessageBytes))
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", json.RawMessage(id), jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}})
	return b
}

// sizeText writes a byte count in MiB (or KiB below one MiB).
func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.4g MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.4g KiB", float64(n)/(1<<10))
}

// Describe is the text of an oversize event for logs and status.
func (ev OversizeEvent) Describe() string {
	size := fmt.Sprintf("a %s message (%d bytes), over the %s limit", sizeText(ev.Size), ev.Size, sizeText(MaxMessageBytes))
	switch ev.Action {
	case OversizeFailedCall:
		return size + ", answered request " + ev.ID + ": that call failed, the connection goes on"
	case OversizeDropped:
		return size + ", was a notification or a request of the server: dropped"
	}
	return size + ", had no id to answer for: the connection was reset"
}

// requestID returns the id of the JSON-RPC request a POST carried, read
// again from its body, when it can be answered for.
func requestID(r *http.Request) (string, bool) {
	if r == nil || r.Method != http.MethodPost || r.GetBody == nil {
		return "", false
	}
	body, err := r.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	var h MsgHead
	if _, err := io.Copy(&h, io.LimitReader(body, MaxMessageBytes)); err != nil || !h.done || !h.method || h.idLong || len(h.id) == 0 {
		return "", false
	}
	id, ok := usableID(h.id)
	return string(id), ok
}

// errOversizeHTTP ends a response body that held a message over the size
// limit which could not be answered for.
var errOversizeHTTP = errors.New("the server sent a message over the size limit with no id to answer for")

// boundedJSONBody is the body of a JSON response of a remote server, read
// whole up to MaxMessageBytes before the MCP library sees any of it. A
// larger one is replaced by an error response for the request's id (or,
// if the request had none, by a read error).
type boundedJSONBody struct {
	rc         io.ReadCloser
	req        *http.Request
	onOversize func(OversizeEvent)
	r          io.Reader // what the library reads, once decided
}

func (b *boundedJSONBody) Read(p []byte) (int, error) {
	if b.r == nil {
		b.decide()
	}
	return b.r.Read(p)
}

func (b *boundedJSONBody) Close() error { return b.rc.Close() }

func (b *boundedJSONBody) decide() {
	data, err := io.ReadAll(io.LimitReader(b.rc, MaxMessageBytes+1))
	if err != nil || len(data) <= MaxMessageBytes {
		b.r = io.MultiReader(bytes.NewReader(data), errReader{err})
		return
	}
	// Count some of the rest for the report; the connection is not
	// reused, so the rest need not be read.
	rest, _ := io.Copy(io.Discard, io.LimitReader(b.rc, 3*MaxMessageBytes))
	ev := OversizeEvent{Size: int64(len(data)) + rest, Action: OversizeRestarted}
	if id, ok := requestID(b.req); ok {
		ev.Action, ev.ID = OversizeFailedCall, id
		b.r = bytes.NewReader(tooLargeResponse(id, ev.Size))
	} else {
		b.r = errReader{errOversizeHTTP}
	}
	if b.onOversize != nil {
		b.onOversize(ev)
	}
}

// errReader returns err (io.EOF when nil) at every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// boundedSSEBody is an event stream of a remote server with each event
// bounded to MaxMessageBytes. Events are passed on whole, as the MCP
// library reads them; one over the bound is skipped while MsgHead reads
// its data, and stands replaced by an event with its id and an error
// response for its JSON-RPC id (a response), by an event with only its id
// (a notification or a server request), or, when there is no id to answer
// for, by an error response for the POST's request, or else by a read
// error that ends the stream. It reads the stream in fragments itself: an
// SSE library (the SDKs' ssestream) gives whole events only, which would
// hold an oversized one in memory before the bound could apply.
type boundedSSEBody struct {
	rc         io.ReadCloser
	br         *bufio.Reader
	req        *http.Request
	onOversize func(OversizeEvent)

	out       []byte // bytes ready to be read
	ev        []byte // the event so far, while under the bound
	size      int64
	over      bool
	head      MsgHead
	lineStart bool   // the next fragment starts a line
	field     string // the field of the line being read, once over
	evID      []byte // the event's id field, once over (bounded)
	err       error
}

// BoundJSONBody bounds rc, the body of a JSON response to req, as
// boundedJSONBody does; onOversize (may be nil) hears of a message over the
// bound.
func BoundJSONBody(rc io.ReadCloser, req *http.Request, onOversize func(OversizeEvent)) io.ReadCloser {
	return &boundedJSONBody{rc: rc, req: req, onOversize: onOversize}
}

// BoundSSEBody bounds rc, the event stream of a response to req, as
// boundedSSEBody does; onOversize (may be nil) hears of each event over the
// bound.
func BoundSSEBody(rc io.ReadCloser, req *http.Request, onOversize func(OversizeEvent)) io.ReadCloser {
	return newBoundedSSEBody(rc, req, onOversize)
}

func newBoundedSSEBody(rc io.ReadCloser, req *http.Request, onOversize func(OversizeEvent)) *boundedSSEBody {
	return &boundedSSEBody{rc: rc, br: bufio.NewReaderSize(rc, 64<<10), req: req, onOversize: onOversize, lineStart: true}
}

func (b *boundedSSEBody) Close() error { return b.rc.Close() }

func (b *boundedSSEBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		b.fill()
	}
	if len(b.out) == 0 {
		return 0, b.err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	if len(b.out) == 0 {
		b.out = nil
	}
	return n, nil
}

// fill reads one fragment of a line (at most the reader's buffer).
func (b *boundedSSEBody) fill() {
	frag, err := b.br.ReadSlice('\n')
	ended := err == nil // the fragment ends its line
	if len(frag) > 0 {
		start := b.lineStart
		b.lineStart = ended
		empty := start && (string(frag) == "\n" || string(frag) == "\r\n")
		b.size += int64(len(frag))
		switch {
		case b.over:
			b.overFragment(frag, start, ended)
		case b.size > MaxMessageBytes && !empty:
			// Over the bound: what was kept of the event goes through
			// the scanner, and the event is no longer kept.
			b.over, b.head, b.evID, b.field = true, MsgHead{}, nil, ""
			kept := b.ev
			b.ev = nil
			prevEnded := true
			for len(kept) > 0 {
				line := kept
				if i := bytes.IndexByte(kept, '\n'); i >= 0 {
					line, kept = kept[:i+1], kept[i+1:]
				} else {
					kept = nil
				}
				lineEnded := line[len(line)-1] == '\n'
				b.overFragment(line, prevEnded, lineEnded)
				prevEnded = lineEnded
			}
			b.overFragment(frag, start, ended)
		default:
			b.ev = append(b.ev, frag...)
		}
		if empty {
			b.endEvent()
		}
	}
	switch {
	case err == nil, errors.Is(err, bufio.ErrBufferFull):
	default:
		if !b.over && len(b.ev) > 0 {
			b.out = append(b.out, b.ev...)
			b.ev = nil
		}
		b.err = err
	}
}

// overFragment reads a fragment of a line of an event over the bound.
func (b *boundedSSEBody) overFragment(frag []byte, start, ended bool) {
	if start {
		b.field = ""
		name, value, found := bytes.Cut(frag, []byte(":"))
		if found {
			b.field = string(name)
			frag = bytes.TrimPrefix(value, []byte(" "))
		} else {
			frag = nil
		}
	}
	switch b.field {
	case "data":
		_, _ = b.head.Write(frag) // line breaks are JSON white space
	case "id":
		for _, c := range bytes.TrimRight(frag, "\r\n") {
			b.evID, _ = keep(b.evID, false, c, maxHeadID)
		}
	}
}

// endEvent passes on the event just ended, or what stands for it.
func (b *boundedSSEBody) endEvent() {
	size := b.size
	b.size = 0
	if !b.over {
		b.out = append(b.out, b.ev...)
		b.ev = b.ev[:0]
		return
	}
	b.over = false
	ev := b.head.decide(size)
	var idLine []byte
	if len(b.evID) > 0 {
		idLine = append(append([]byte("id: "), b.evID...), '\n')
	}
	if ev.Action == OversizeRestarted {
		if id, ok := requestID(b.req); ok {
			ev.Action, ev.ID = OversizeFailedCall, id
		}
	}
	switch ev.Action {
	case OversizeFailedCall:
		b.out = append(b.out, idLine...)
		b.out = append(b.out, "data: "...)
		b.out = append(b.out, tooLargeResponse(ev.ID, size)...)
		b.out = append(b.out, "\n\n"...)
	case OversizeDropped:
		if idLine != nil {
			b.out = append(append(b.out, idLine...), '\n')
		}
	default:
		b.err = errOversizeHTTP
	}
	if b.onOversize != nil {
		b.onOversize(ev)
	}
}
