// Package lsp implements the gateway's lsp tool: it starts the language
// servers named in the configuration (one per language and root, on first
// use), keeps them running, and answers definition, references, hover,
// document and workspace symbols, and incoming and outgoing calls.
//
// Positions given and returned are 1-based lines and columns counted in
// characters (Unicode code points); the conversion to and from LSP's
// 0-based UTF-16 positions happens here. Paths returned are relative to
// the root when there is one root.
//
// The wire protocol is JSON-RPC 2.0 with "Content-Length" headers over the
// server's stdin and stdout. A server that cannot be started, or that
// exits, makes the call fail with an error that says so; the next call
// starts it again.
package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxMessage bounds one message from a server.
const maxMessage = 64 << 20

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// message is any JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type response struct {
	result json.RawMessage
	err    error
}

// conn is one running language server.
type conn struct {
	name string // for errors: "gopls (go)"
	cmd  *exec.Cmd
	log  *slog.Logger

	wmu sync.Mutex
	w   io.WriteCloser

	mu      sync.Mutex
	pending map[int64]chan response
	err     error // why the connection ended
	nextID  atomic.Int64
	done    chan struct{}
	stderr  *tail
}

// ReadMessage reads one framed message: headers, a blank line, then
// Content-Length bytes of body. It is exported to the package's fuzz test
// through readMessage.
func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if len(line) > 4096 {
			return nil, errors.New("header line too long")
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("bad header line %q", line)
		}
		if strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", v)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("message without Content-Length")
	}
	if length > maxMessage {
		return nil, fmt.Errorf("message of %d bytes is too large", length)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

func writeMessage(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	_, err = w.Write(b.Bytes())
	return err
}

// start runs the command and reads its messages until it exits.
func start(name, command string, args []string, dir string, log *slog.Logger) (*conn, error) {
	cmd := exec.Command(command, args...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t := &tail{max: 4096}
	cmd.Stderr = t
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("language server %s is not installed or not on PATH: %w", name, err)
		}
		return nil, fmt.Errorf("starting language server %s: %w", name, err)
	}
	c := &conn{name: name, cmd: cmd, w: stdin, pending: map[int64]chan response{}, done: make(chan struct{}), stderr: t, log: log}
	go c.read(bufio.NewReaderSize(stdout, 64<<10))
	return c, nil
}

func (c *conn) read(r *bufio.Reader) {
	var err error
	for {
		var body []byte
		body, err = readMessage(r)
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			go c.answer(m)
		case m.Method != "":
			if m.Method == "window/logMessage" || m.Method == "window/showMessage" {
				c.log.Debug("language server message", "server", c.name, "params", string(m.Params))
			}
		case len(m.ID) > 0:
			id, perr := strconv.ParseInt(string(m.ID), 10, 64)
			if perr != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- response{err: m.Error}
				} else {
					ch <- response{result: m.Result}
				}
			}
		}
	}
	// The server is gone: wait for the process, fail what is pending.
	werr := c.cmd.Wait()
	why := "exited"
	if werr != nil {
		why = "exited: " + werr.Error()
	} else if err != nil && !errors.Is(err, io.EOF) {
		why = "sent a message that could not be read (" + err.Error() + ")"
	}
	if s := strings.TrimSpace(c.stderr.String()); s != "" {
		lines := strings.Split(s, "\n")
		why += "; stderr: " + strings.Join(lines[max(0, len(lines)-5):], " | ")
	}
	c.mu.Lock()
	c.err = fmt.Errorf("language server %s %s", c.name, why)
	for id, ch := range c.pending {
		ch <- response{err: c.err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// answer replies to a request from the server: configuration gets nulls,
// everything else an empty result.
func (c *conn) answer(m message) {
	var result any
	if m.Method == "workspace/configuration" {
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		result = make([]any, len(p.Items))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = writeMessage(c.w, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

// dead reports why the server stopped, or nil while it runs. The reason is
// set, under c.mu, before the pending calls are failed with it, so a call
// that failed because the server stopped always finds it here.
func (c *conn) dead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) notify(method string, params any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := writeMessage(c.w, map[string]any{"jsonrpc": "2.0", "method": method, "params": params}); err != nil {
		return fmt.Errorf("language server %s: %w", c.name, err)
	}
	return nil
}

// call sends a request and waits for its response.
func (c *conn) call(ctx context.Context, method string, params any, result any) error {
	if err := c.dead(); err != nil {
		return err
	}
	id := c.nextID.Add(1)
	ch := make(chan response, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	err := writeMessage(c.w, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		if derr := c.dead(); derr != nil {
			return derr
		}
		return fmt.Errorf("language server %s: %w", c.name, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			var re *rpcError
			if errors.As(r.err, &re) {
				return fmt.Errorf("%s: %s", method, re.Message)
			}
			return r.err
		}
		if result != nil && len(r.result) > 0 {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("%s: unexpected answer: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		_ = c.notify("$/cancelRequest", map[string]any{"id": id})
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// close asks the server to shut down and kills it if it does not.
func (c *conn) close() {
	if c.dead() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.call(ctx, "shutdown", nil, nil)
		cancel()
		_ = c.notify("exit", nil)
		_ = c.w.Close()
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
