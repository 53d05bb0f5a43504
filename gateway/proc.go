package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

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
	stdin  *os.File
	out    *io.PipeReader
	exited chan struct{}
	err    error // exit status, valid once exited is closed
	once   sync.Once
}

// drainDelay bounds how long, after a server exits, the gateway waits for
// the rest of its stdout and stderr: a child it spawned may hold them open
// long after (or for ever).
const drainDelay = 2 * time.Second

// stdinWriteTimeout bounds one write to a server's stdin: a server that
// reads nothing for this long while the pipe is full is treated as broken,
// rather than blocking the caller for ever.
const stdinWriteTimeout = 30 * time.Second

// startProcess starts cmd with stdout filtered: lines that are not JSON
// objects or arrays (a banner, a stray print) are reported to stderrTail and
// the log and dropped, so that a chatty server keeps working.
//
// The server's stdin, stdout and stderr are plain pipes owned by the
// gateway, so that its exit is seen when it exits, even if a child it
// spawned keeps the pipes open.
func startProcess(cmd *exec.Cmd, stderrTail io.Writer, log *slog.Logger) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	setProcessGroup(cmd)
	err = cmd.Start()
	// The child has its copies; the gateway keeps only its own ends.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	pr, pw := io.Pipe()
	p := &process{cmd: cmd, stdin: inW, out: pr, exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		dropped := 0
		sc := bufio.NewScanner(outR)
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
		if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
			fmt.Fprintf(stderrTail, "[reading stdout: %v]\n", err)
		}
	}()
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderrTail, errR)
	}()
	go func() {
		err := cmd.Wait()
		// Let the last output arrive (the response before a crash, the
		// reason on stderr), but not for ever.
		drained := time.NewTimer(drainDelay)
		for _, ch := range []chan struct{}{copied, stderrDone} {
			select {
			case <-ch:
			case <-drained.C:
			}
		}
		drained.Stop()
		// Closing the read ends stops the copiers if something still
		// holds the pipes; closing pw below unblocks a pending write.
		outR.Close()
		errR.Close()
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
// process group. It returns within about five seconds.
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
		case <-time.After(drainDelay + time.Second):
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

func (w *procWriter) Write(b []byte) (int, error) {
	// A deadline turns a server that stopped reading into an error instead
	// of a write blocked for ever (pipes support deadlines on unix).
	_ = w.p.stdin.SetWriteDeadline(time.Now().Add(stdinWriteTimeout))
	return w.p.stdin.Write(b)
}
func (w *procWriter) Close() error {
	go w.p.stop()
	return nil
}

// environ returns the process environment with extra set on top.
func environ(extra map[string]string) []string {
	env := os.Environ()
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}
