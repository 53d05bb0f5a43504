package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pipeConn is a stdioConn over a lineQueue the test writes and a pipe
// standing for the server's stdin, which the test reads line by line.
func pipeConn(t *testing.T) (*stdioConn, *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	p := &Process{stdin: w, out: newLineQueue(), exited: make(chan struct{})}
	p.once.Do(func() {}) // stop has nothing to stop
	return &stdioConn{p: p}, bufio.NewReader(r)
}

// feed writes lines to the connection's queue from a goroutine, then ends
// it with end.
func feed(c *stdioConn, end error, lines ...string) {
	go func() {
		for _, l := range lines {
			if _, err := c.p.out.Write([]byte(l + "\n")); err != nil {
				return
			}
		}
		c.p.out.CloseWithError(end)
	}()
}

// TestStdioConnMessages: each line is one message, read in order; the
// lines written before the output ended come before its error; answers
// go out one a line.
func TestStdioConnMessages(t *testing.T) {
	t.Parallel()
	c, sent := pipeConn(t)
	ctx := context.Background()
	gone := errors.New("the server exited")
	feed(c, gone, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, "", `  {"jsonrpc":"2.0","method":"notifications/message","params":{}}  `)
	m, err := c.Read(ctx)
	if resp, ok := m.(*jsonrpc.Response); err != nil || !ok || string(resp.Result) != `{"tools":[]}` {
		t.Fatalf("first read %#v, %v", m, err)
	}
	m, err = c.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); err != nil || !ok || req.Method != "notifications/message" {
		t.Fatalf("second read %#v, %v", m, err)
	}
	if _, err := c.Read(ctx); !errors.Is(err, gone) {
		t.Fatalf("read after the end: %v, want %v", err, gone)
	}
	id, _ := jsonrpc.MakeID(float64(7))
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	line, err := sent.ReadString('\n')
	if err != nil || !strings.Contains(line, `"method":"tools/list"`) || strings.Count(line, "\n") != 1 {
		t.Fatalf("sent %q, %v", line, err)
	}
}

// TestStdioConnBatch: a batch the server sends is read message by message,
// and the answers to its requests go back together, in its order, once
// all are answered.
func TestStdioConnBatch(t *testing.T) {
	t.Parallel()
	c, sent := pipeConn(t)
	ctx := context.Background()
	feed(c, nil, `[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":"b","method":"roots/list"}]`,
		`{"jsonrpc":"2.0","id":"c","method":"ping"}`)
	var ids []jsonrpc.ID
	for range 3 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			ids = append(ids, req.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("read %d requests with ids, want 2", len(ids))
	}
	// Answered out of order: nothing goes out until both are.
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[1], Result: json.RawMessage(`{"roots":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	line, err := sent.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var batch []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &batch); err != nil || len(batch) != 2 || batch[0].ID != "a" || batch[1].ID != "b" {
		t.Fatalf("sent %q (%v), want the answers to a and b in one batch", line, err)
	}
	// A request on its own line is answered on its own line.
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if line, err := sent.ReadString('\n'); err != nil || !strings.HasPrefix(line, "{") || !strings.Contains(line, `"id":"c"`) {
		t.Fatalf("sent %q, %v", line, err)
	}
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the end: %v, want EOF", err)
	}
}

// TestStdioConnBadInput: an empty batch, a batch naming a request twice and
// a line that is not JSON-RPC are errors, never a panic.
func TestStdioConnBadInput(t *testing.T) {
	t.Parallel()
	for _, line := range []string{`[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"hello":1}`, `[1,2]`, `[`} {
		c, _ := pipeConn(t)
		feed(c, nil, line)
		if m, err := c.Read(context.Background()); err == nil {
			t.Errorf("%s: read %#v, want an error", line, m)
		}
	}
}

// TestStdioConnClose: a read waiting for the server ends when the
// connection closes, and a write of the output waiting for a reader fails.
func TestStdioConnClose(t *testing.T) {
	t.Parallel()
	c, _ := pipeConn(t)
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		read <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) {
			t.Errorf("read ended with %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read did not end when the connection closed")
	}
	if _, err := c.p.out.Write([]byte("{}\n")); err == nil {
		t.Error("a line was written after the connection closed")
	}
}
