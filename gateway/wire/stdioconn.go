package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The connection to a stdio server reads the lines filterStdout passes on,
// one JSON-RPC message (or batch) each, and decodes each on its own. The
// MCP library's stdio connection would read them again through a JSON
// decoder whose buffer grows to the largest message it has seen (a long
// tools/list) and is never given back, and would hold the last message it
// read until the next one came: with a hundred servers, megabytes each
// kept for as long as the servers run.

// lineQueue passes a server's filtered stdout, line by line, from
// filterStdout to the connection. A line is handed over whole and never
// reused by its writer.
type lineQueue struct {
	lines chan []byte
	// ended is closed by CloseWithError, after which err says why the
	// output ended; gone is closed when the connection no longer reads.
	ended, gone chan struct{}
	endOnce     sync.Once
	goneOnce    sync.Once
	err         error
}

func newLineQueue() *lineQueue {
	return &lineQueue{lines: make(chan []byte), ended: make(chan struct{}), gone: make(chan struct{})}
}

// Write hands one line to the connection, waiting until it takes it.
func (q *lineQueue) Write(line []byte) (int, error) {
	select {
	case q.lines <- line:
		return len(line), nil
	case <-q.ended:
		return 0, io.ErrClosedPipe
	case <-q.gone:
		return 0, io.ErrClosedPipe
	}
}

// CloseWithError ends the output: once the lines written are read, the
// connection reads err (io.EOF for nil).
func (q *lineQueue) CloseWithError(err error) error {
	q.endOnce.Do(func() {
		if err == nil {
			err = io.EOF
		}
		q.err = err
		close(q.ended)
	})
	return nil
}

// next returns the next line, or why there is none.
func (q *lineQueue) next(ctx context.Context) ([]byte, error) {
	select {
	case line := <-q.lines:
		return line, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-q.gone:
		return nil, io.EOF
	case <-q.ended:
		// A line written as the output ended still comes first.
		select {
		case line := <-q.lines:
			return line, nil
		default:
			return nil, q.err
		}
	}
}

// close tells the writer nobody reads any more.
func (q *lineQueue) close() { q.goneOnce.Do(func() { close(q.gone) }) }

// stdioConn is the MCP connection to a started stdio server.
type stdioConn struct {
	p *Process
	// queue holds the rest of a batch read (reads are serialised).
	queue   []jsonrpc.Message
	writeMu sync.Mutex
	// batches are the requests of a batch the server sent that have not
	// been answered yet: their answers go back in one batch.
	batchMu sync.Mutex
	batches map[jsonrpc.ID]*answerBatch
}

// answerBatch gathers the answers to the requests of one batch.
type answerBatch struct {
	at      map[jsonrpc.ID]int
	answers []*jsonrpc.Response
	left    int
}

// Transport is the MCP transport of the started process: its connection
// reads the process's filtered stdout and writes to its stdin; closing it
// stops the process.
func (p *Process) Transport() mcp.Transport { return &procTransport{p: p} }

// procTransport connects to a started process over its stdin and filtered
// stdout.
type procTransport struct{ p *Process }

func (t *procTransport) Connect(context.Context) (mcp.Connection, error) {
	return &stdioConn{p: t.p}, nil
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *stdioConn) SessionID() string { return "" }

// Read returns the next message the server sent.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue[0] = nil // not held once read
		c.queue = c.queue[1:]
		return m, nil
	}
	line, err := c.p.out.next(ctx)
	for err == nil && len(bytes.TrimSpace(line)) == 0 {
		line, err = c.p.out.next(ctx)
	}
	if err != nil {
		return nil, err
	}
	if line = bytes.TrimSpace(line); line[0] != '[' {
		return jsonrpc.DecodeMessage(line)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, fmt.Errorf("reading a batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, len(raws))
	for i, raw := range raws {
		if msgs[i], err = jsonrpc.DecodeMessage(raw); err != nil {
			return nil, err
		}
	}
	if err := c.addBatch(msgs); err != nil {
		return nil, err
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// addBatch records the requests of a batch, whose answers are written
// together.
func (c *stdioConn) addBatch(msgs []jsonrpc.Message) error {
	var b *answerBatch
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			continue
		}
		if b == nil {
			b = &answerBatch{at: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.at[req.ID]; dup {
			return fmt.Errorf("a batch names request %v twice", req.ID.Raw())
		}
		b.at[req.ID] = len(b.answers)
		b.answers = append(b.answers, nil)
		b.left++
	}
	if b == nil {
		return nil
	}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.at {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("a batch names request %v, which is not answered yet", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*answerBatch{}
	}
	for id := range b.at {
		c.batches[id] = b
	}
	return nil
}

// Write sends a message to the server: an answer to a request of a batch
// once every request of the batch is answered, with the others.
func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if resp, ok := m.(*jsonrpc.Response); ok {
		answers, inBatch := c.answer(resp)
		if inBatch && answers == nil {
			return nil // more of its batch to come
		}
		if inBatch {
			raws := make([]json.RawMessage, len(answers))
			for i, a := range answers {
				if raws[i], err = jsonrpc.EncodeMessage(a); err != nil {
					return fmt.Errorf("encoding a batch: %w", err)
				}
			}
			data, err = json.Marshal(raws)
		} else {
			data, err = jsonrpc.EncodeMessage(m)
		}
	} else {
		data, err = jsonrpc.EncodeMessage(m)
	}
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// A deadline turns a server that stopped reading into an error instead
	// of a write blocked for ever (pipes support deadlines on unix).
	_ = c.p.stdin.SetWriteDeadline(time.Now().Add(stdinWriteTimeout))
	_, err = c.p.stdin.Write(append(data, '\n'))
	return err
}

// answer records resp if it answers a request of a batch, and returns the
// batch's answers once they are all in.
func (c *stdioConn) answer(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	b.answers[b.at[resp.ID]] = resp
	if b.left--; b.left > 0 {
		return nil, true
	}
	return b.answers, true
}

// Close ends the connection and stops the process.
func (c *stdioConn) Close() error {
	c.p.out.close()
	go c.p.Stop()
	return nil
}
