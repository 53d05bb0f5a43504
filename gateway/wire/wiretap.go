package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Tap sees the messages exchanged with one upstream server in the
// order they cross the wire, before the SDK handles them. It serves two
// purposes:
//
//   - tools/list results are kept as the server sent them (json.RawMessage),
//     so that tool definitions pass through byte for byte instead of being
//     re-encoded by the SDK, whatever the transport;
//   - progress and log notifications are counted as they arrive and
//     uncounted once forwarded, so that a call's result is not returned to
//     the client before the progress and logs that preceded it on the wire
//     (the SDK delivers responses at once but notifications through a
//     queue).
//
// On stdio and SSE the tap wraps the SDK's connection (tapConn). The
// streamable HTTP connection cannot be wrapped (the SDK drives it through an
// unexported interface), so there the tap sits in the HTTP client
// (tapRoundTripper) and reads the response bodies of the requests marked
// with TapContext.
type Tap struct {
	mu       sync.Mutex
	lists    map[string]bool // ids of tools/list calls awaiting a response
	capture  func(json.RawMessage)
	progress map[string]int // token → notifications seen, not yet forwarded
	// logsSeen and logsHandled count log notifications received and
	// forwarded on this connection.
	logsSeen, logsHandled uint64
	changed               chan struct{} // closed and replaced when a count drops or grows handled
}

// NewTap returns a Tap with nothing seen yet.
func NewTap() *Tap {
	return &Tap{lists: map[string]bool{}, progress: map[string]int{}, changed: make(chan struct{})}
}

// Reset forgets what belonged to a previous connection (request ids start
// again at 1 on a new one).
func (w *Tap) Reset() {
	w.mu.Lock()
	w.lists = map[string]bool{}
	w.progress = map[string]int{}
	w.logsSeen, w.logsHandled = 0, 0
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func idKey(id jsonrpc.ID) string { return fmt.Sprint(id.Raw()) }

// sent records an outgoing message.
func (w *Tap) sent(m jsonrpc.Message) {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		w.mu.Lock()
		w.lists[idKey(r.ID)] = true
		w.mu.Unlock()
	}
}

// received records an incoming message; it is called before the SDK sees
// the message.
func (w *Tap) received(m jsonrpc.Message) {
	switch m := m.(type) {
	case *jsonrpc.Response:
		id := idKey(m.ID)
		w.mu.Lock()
		hit := w.lists[id]
		delete(w.lists, id)
		capture := w.capture
		w.mu.Unlock()
		if hit && capture != nil && m.Error == nil {
			capture(m.Result)
		}
	case *jsonrpc.Request:
		if m.Method == "notifications/message" && !m.ID.IsValid() {
			w.mu.Lock()
			w.logsSeen++
			w.mu.Unlock()
			return
		}
		if m.Method != "notifications/progress" || m.ID.IsValid() {
			return
		}
		var p struct {
			Token any `json:"progressToken"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Token == nil {
			return
		}
		w.mu.Lock()
		w.progress[fmt.Sprint(p.Token)]++
		w.mu.Unlock()
	}
}

// mayNeed reports whether an encoded message can matter to received: a
// notification, or a response while a tools/list is awaited. It spares
// decoding every call's result a second time.
func (w *Tap) mayNeed(data []byte) bool {
	if bytes.Contains(data, []byte(`"method"`)) {
		return true
	}
	w.mu.Lock()
	n := len(w.lists)
	w.mu.Unlock()
	return n > 0
}

// SetCapture installs f to receive raw tools/list results (nil removes it).
func (w *Tap) SetCapture(f func(json.RawMessage)) {
	w.mu.Lock()
	w.capture = f
	w.mu.Unlock()
}

// ProgressHandled uncounts one progress notification of token, once the
// SDK's handler has dealt with it.
func (w *Tap) ProgressHandled(token any) {
	k := fmt.Sprint(token)
	w.mu.Lock()
	if w.progress[k] > 0 {
		w.progress[k]--
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
}

// LogHandled counts one log notification as forwarded.
func (w *Tap) LogHandled() {
	w.mu.Lock()
	if w.logsHandled < w.logsSeen {
		w.logsHandled++
		close(w.changed)
		w.changed = make(chan struct{})
	}
	w.mu.Unlock()
}

// AwaitLogs waits until every log notification seen so far has been
// forwarded, or until timeout.
func (w *Tap) AwaitLogs(timeout time.Duration) {
	w.mu.Lock()
	target, handled := w.logsSeen, w.logsHandled
	w.mu.Unlock()
	if handled >= target {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		done, ch := w.logsHandled >= target || w.logsSeen < target, w.changed
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		}
	}
}

// AwaitProgress waits until every progress notification of token seen so
// far has been handled, or until timeout, and forgets the token.
func (w *Tap) AwaitProgress(token any, timeout time.Duration) {
	k := fmt.Sprint(token)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		n, ch := w.progress[k], w.changed
		if n == 0 {
			delete(w.progress, k)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			w.mu.Lock()
			delete(w.progress, k)
			w.mu.Unlock()
			return
		}
	}
}

// Wrap returns inner with its connections shown to w.
func (w *Tap) Wrap(inner mcp.Transport) mcp.Transport {
	return &tapTransport{inner: inner, tap: w}
}

// WrapDetached is Wrap for a transport whose connection must outlive the
// context it was made with (the SSE client's event stream; see
// tapTransport.detach).
func (w *Tap) WrapDetached(inner mcp.Transport) mcp.Transport {
	return &tapTransport{inner: inner, tap: w, detach: true}
}

// HTTPClient returns the HTTP client of one remote server: its own
// connection pool (kept alive across calls, enough idle connections for
// concurrent calls), headers on every request, and tap, which bounds every
// message (BoundJSONBody, BoundSSEBody) and reports those over the bound to
// onOversize (may be nil).
func HTTPClient(headers map[string]string, tap *Tap, onOversize func(OversizeEvent)) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	tr.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: &tapRoundTripper{headers: headers, next: tr, tap: tap, onOversize: onOversize}}
}

// tapTransport wraps a transport's connection in a tapConn.
type tapTransport struct {
	inner mcp.Transport
	tap   *Tap
	// detach gives the inner transport a context that outlives Connect's:
	// the SDK's SSE client keeps its event stream on the context it was
	// connected with, so a start timeout would otherwise end the session
	// as soon as the start is over. ctx still bounds the connecting.
	detach bool
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if t.detach {
		cctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
	}
	c, err := t.inner.Connect(cctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap, cancel: cancel}, nil
}

// tapConn shows every message of a connection to a Tap.
type tapConn struct {
	mcp.Connection
	tap    *Tap
	cancel context.CancelFunc // ends the context the connection was made with
}

func (c *tapConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

func (c *tapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.tap.sent(m)
	return c.Connection.Write(ctx, m)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.tap.received(m)
	}
	return m, err
}

type tapKey struct{}

// TapContext marks ctx so that the HTTP requests made under it (a
// tools/list, a call with a progress token) are shown to the tap.
func TapContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, tapKey{}, true)
}

// tapRoundTripper adds configured headers to every request and shows the
// requests marked with TapContext, and their responses, to a Tap.
//
// Every response body is bounded first (BoundJSONBody, BoundSSEBody): a JSON response to a
// POST as a whole, an event stream event by event, each to
// MaxMessageBytes; onOversize (may be nil) hears of each message over.
type tapRoundTripper struct {
	headers    map[string]string
	next       http.RoundTripper
	tap        *Tap
	onOversize func(OversizeEvent)
}

func (t *tapRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	watch := false
	if t.tap != nil && r.Method == http.MethodPost && r.GetBody != nil && r.Context().Value(tapKey{}) != nil {
		if body, err := r.GetBody(); err == nil {
			data, err := io.ReadAll(body)
			body.Close()
			switch {
			case err != nil:
			case !bytes.Contains(data, []byte(`"tools/list"`)):
				// Only a tools/list needs recording (sent); anything
				// else is watched for its notifications.
				watch = true
			default:
				if m, err := jsonrpc.DecodeMessage(data); err == nil {
					if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
						t.tap.sent(m)
						watch = true
					}
				}
			}
		}
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ct == "application/json" && r.Method == http.MethodPost:
		resp.Body = BoundJSONBody(resp.Body, r, t.onOversize)
	case ct == "text/event-stream":
		resp.Body = BoundSSEBody(resp.Body, r, t.onOversize)
		if close := pollCloser(r.Context()); close != nil && r.Method == http.MethodPost {
			resp.Body = newPollBody(resp.Body, close) // ssepoll.go
		}
	}
	if !watch {
		return resp, nil
	}
	switch ct {
	case "application/json":
		resp.Body = &tapBody{rc: resp.Body, tap: t.tap}
	case "text/event-stream":
		resp.Body = &tapBody{rc: resp.Body, tap: t.tap, sse: true}
	}
	return resp, nil
}

// tapBody shows the JSON-RPC messages of a response body (one JSON message,
// or server-sent events) to a Tap as the SDK reads it: an event is seen
// by the tap before the SDK has the bytes that end it.
type tapBody struct {
	rc  io.ReadCloser
	tap *Tap
	sse bool
	buf []byte
	// scanned is how much of buf is known to hold no event end, less the
	// few bytes an end could start in: a large event is scanned once,
	// not again at every read.
	scanned int
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.buf = append(b.buf, p[:n]...)
		if b.sse {
			b.events(false)
		}
	}
	if err == io.EOF {
		if b.sse {
			b.events(true)
		} else if !b.tap.mayNeed(b.buf) {
			// Nothing the tap counts or keeps.
		} else if m, derr := jsonrpc.DecodeMessage(b.buf); derr == nil {
			b.tap.received(m)
		}
		b.buf = nil
	}
	return n, err
}

func (b *tapBody) Close() error { return b.rc.Close() }

// events consumes the complete events in b.buf (and, at the end of the
// stream, the last one even without its blank line).
func (b *tapBody) events(final bool) {
	for {
		end, next := eventEnd(b.buf, b.scanned)
		if end < 0 {
			b.scanned = max(0, len(b.buf)-3)
			if !final || len(bytes.TrimSpace(b.buf)) == 0 {
				return
			}
			end, next = len(b.buf), len(b.buf)
		}
		b.event(b.buf[:end])
		b.buf = b.buf[next:]
		b.scanned = 0
	}
}

// eventEnd finds the blank line that ends the first event, looking from
// from on: the index where the event ends and where the next begins, or -1.
func eventEnd(buf []byte, from int) (end, next int) {
	for i := from; i < len(buf); i++ {
		if buf[i] != '\n' && buf[i] != '\r' {
			continue
		}
		// A line ends at i; an empty line follows if the next line break
		// comes at once.
		j := i + 1
		if buf[i] == '\r' && j < len(buf) && buf[j] == '\n' {
			j++
		}
		if j < len(buf) && (buf[j] == '\n' || buf[j] == '\r') {
			k := j + 1
			if buf[j] == '\r' && k < len(buf) && buf[k] == '\n' {
				k++
			}
			return i, k
		}
	}
	return -1, -1
}

// event reads one server-sent event and shows its message to the tap.
func (b *tapBody) event(ev []byte) {
	var data []byte
	name := ""
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexAny(ev, "\r\n"); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case "event":
			name = string(value)
		}
	}
	if len(data) == 0 || (name != "" && name != "message") || !b.tap.mayNeed(data) {
		return
	}
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		b.tap.received(m)
	}
}
