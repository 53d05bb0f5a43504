// Package sse reads and writes the server-sent events of the Messages API's
// streaming responses, and turns a whole Message into the event sequence
// the API streams for it.
//
// The wire format (the WHATWG "text/event-stream" format as the API uses
// it): each event is a block of "field: value" lines ended by a blank line;
// the API sends an "event:" line naming the type and one "data:" line of
// JSON whose "type" member repeats it.
//
// Why this package reads the stream itself rather than with a library: the
// maintained SSE decoders at hand are the ssestream packages of
// anthropic-sdk-go and openai-go (one and the same code) and the MCP Go
// SDK's, which is unexported. ssestream's decoder does not fit a proxy:
//
//   - a stream cut inside an event ends like a whole one (Next returns
//     false, Err nil), so a reply the upstream broke off would be passed on
//     as complete; Reader returns io.ErrUnexpectedEOF for it;
//   - every event's data ends in a "\n" the WHATWG rule strips, so each
//     event would need trimming before it is rewritten;
//   - it reads an *http.Response, not the io.Reader the proxy and its tests
//     have.
//
// On whole streams the two read the same events: FuzzReader checks Reader
// against ssestream on every input it is given.
package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Event is one server-sent event.
type Event struct {
	// Name is the "event:" field ("" when absent).
	Name string
	// Data is the "data:" field; several data lines are joined with "\n".
	Data []byte
}

// MaxLine bounds one line of an event stream (the API's lines are a JSON
// object each; a delta is small).
const MaxLine = 8 << 20

// Reader reads events from a stream.
type Reader struct {
	s *bufio.Scanner
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), MaxLine)
	return &Reader{s: s}
}

// Next returns the next event, io.EOF at the end of a stream that ended on
// an event boundary, and io.ErrUnexpectedEOF when the stream ends inside an
// event. Comment lines (":...") and unknown fields are skipped, and so is a
// block with neither a name nor a data line (as the SDKs skip it).
func (r *Reader) Next() (Event, error) {
	var ev Event
	data := false // a data line was read (its value may be empty)
	for r.s.Scan() {
		line := r.s.Bytes()
		if len(line) == 0 {
			if ev.Name != "" || data {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if data {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			data = true
		}
	}
	if err := r.s.Err(); err != nil {
		return Event{}, fmt.Errorf("sse: reading stream: %w", err)
	}
	if ev.Name != "" || data {
		return ev, io.ErrUnexpectedEOF
	}
	return Event{}, io.EOF
}

// Writer writes events to an HTTP response, flushing after each.
type Writer struct {
	w   io.Writer
	f   http.Flusher
	err error
}

// NewWriter returns a Writer of w (flushed after each event when w is an
// http.Flusher).
func NewWriter(w io.Writer) *Writer {
	f, _ := w.(http.Flusher)
	return &Writer{w: w, f: f}
}

// Err returns the first write error.
func (w *Writer) Err() error { return w.err }

// Write writes one event whose data is the JSON of v (or v itself when it is
// a json.RawMessage or []byte).
func (w *Writer) Write(name string, v any) error {
	if w.err != nil {
		return w.err
	}
	var data []byte
	switch d := v.(type) {
	case json.RawMessage:
		data = d
	case []byte:
		data = d
	default:
		b, err := json.Marshal(v)
		if err != nil {
			w.err = fmt.Errorf("sse: encoding %s: %w", name, err)
			return w.err
		}
		data = b
	}
	var buf bytes.Buffer
	buf.Grow(len(name) + len(data) + 16)
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	if _, err := w.w.Write(buf.Bytes()); err != nil {
		w.err = fmt.Errorf("sse: writing %s: %w", name, err)
		return w.err
	}
	if w.f != nil {
		w.f.Flush()
	}
	return nil
}

// SetHeaders sets the headers of an event-stream response.
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Del("Content-Length")
}

// ErrNotMessage is returned by MessageWriter.Start for JSON that is not a
// message object.
var ErrNotMessage = errors.New("sse: not a message object")
