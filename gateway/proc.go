package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tail keeps the last bytes written to it (a server's stderr).
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns the kept text, trimmed.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// process is a started stdio server: its stdin, its filtered stdout and a
// channel closed when it has exited.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *io.PipeReader
	exited chan struct{}
	err    error // exit status, valid once exited is closed
	once   sync.Once
}

// startProcess starts cmd with stdout filtered: lines that are not JSON
// objects or arrays (a banner, a stray print) are reported to stderrTail and
// the log and dropped, so that a chatty server keeps working.
func startProcess(cmd *exec.Cmd, stderrTail io.Writer, log *slog.Logger) (*process, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderrTail
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	p := &process{cmd: cmd, stdin: stdin, out: pr, exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		dropped := 0
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), mcp.DefaultMaxLineLength)
		for sc.Scan() {
			line := sc.Bytes()
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) == 0 {
				continue
			}
			if trimmed[0] != '{' && trimmed[0] != '[' {
				msg := string(trimmed)
				if len(msg) > 200 {
					msg = msg[:200] + "…"
				}
				fmt.Fprintf(stderrTail, "[not JSON-RPC on stdout, dropped] %s\n", msg)
				dropped++
				switch {
				case dropped <= 3:
					log.Warn("upstream printed a line that is not JSON-RPC on stdout; dropped", "line", msg)
				case dropped == 4:
					log.Warn("upstream keeps printing lines that are not JSON-RPC on stdout; dropping them quietly")
				default:
					log.Debug("dropped a line that is not JSON-RPC", "line", msg)
				}
				continue
			}
			if _, err := pw.Write(append(append([]byte(nil), trimmed...), '\n')); err != nil {
				return
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(stderrTail, "[reading stdout: %v]\n", err)
		}
	}()
	go func() {
		<-copied
		err := cmd.Wait()
		p.err = err
		close(p.exited)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return p, nil
}

// stop ends the process: stdin closed, then SIGTERM, then SIGKILL to its
// process group.
func (p *process) stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.exited:
			return
		case <-time.After(500 * time.Millisecond):
		}
		terminate(p.cmd)
		select {
		case <-p.exited:
			return
		case <-time.After(2 * time.Second):
		}
		kill(p.cmd)
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
		}
	})
}

// exitErr describes how the process ended, once it has.
func (p *process) exitErr() error {
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return nil
	}
}

// procTransport connects to a started process over its stdin and filtered
// stdout.
type procTransport struct{ p *process }

func (t *procTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inner := &mcp.IOTransport{Reader: t.p.out, Writer: &procWriter{t.p}}
	return inner.Connect(ctx)
}

// procWriter closes the process when the connection closes.
type procWriter struct{ p *process }

func (w *procWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w *procWriter) Close() error {
	go w.p.stop()
	return nil
}

// rawConn wraps a connection to keep the bytes of every tools/list result,
// so that tool definitions pass through unchanged. Only connections without
// extra SDK interfaces (stdio, SSE) are wrapped.
type rawConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[string]bool // ids of tools/list requests
	capture func(json.RawMessage)
}

func (c *rawConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		c.mu.Lock()
		if c.pending == nil {
			c.pending = map[string]bool{}
		}
		c.pending[fmt.Sprint(r.ID.Raw())] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, m)
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil {
		id := fmt.Sprint(r.ID.Raw())
		c.mu.Lock()
		hit := c.pending[id]
		delete(c.pending, id)
		capture := c.capture
		c.mu.Unlock()
		if hit && capture != nil && r.Error == nil {
			capture(r.Result)
		}
	}
	return m, err
}

// setCapture installs f to receive raw tools/list results (nil removes it).
func (c *rawConn) setCapture(f func(json.RawMessage)) {
	c.mu.Lock()
	c.capture = f
	c.mu.Unlock()
}

// rawTransport wraps a transport's connection in a rawConn.
type rawTransport struct {
	inner mcp.Transport
	conn  *rawConn
}

func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &rawConn{Connection: c}
	return t.conn, nil
}

// environ returns the process environment with extra set on top.
func environ(extra map[string]string) []string {
	env := os.Environ()
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}
