package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Tail keeps the last bytes written to it (a server's stderr).
type Tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTail returns a Tail that keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

// Write keeps p, dropping what falls before the last max bytes.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns the kept text, trimmed.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// Process is a started stdio server: its stdin, its filtered stdout and a
// channel closed when it has exited.
type Process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	out    *lineQueue
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

// StartProcess starts cmd with stdout filtered: lines that are not JSON
// objects or arrays (a banner, a stray print) are reported to stderrTail and
// the log and dropped, so that a chatty server keeps working.
//
// The server's stdin, stdout and stderr are plain pipes owned by the
// gateway, so that its exit is seen when it exits, even if a child it
// spawned keeps the pipes open.
//
// A message over MaxMessageBytes is skipped and reported to onOversize
// (which may be nil); see filterStdout.
func StartProcess(cmd *exec.Cmd, stderrTail io.Writer, log *slog.Logger, onOversize func(OversizeEvent)) (*Process, error) {
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
	p := &Process{cmd: cmd, stdin: inW, out: newLineQueue(), exited: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if err := filterStdout(outR, p.out, stderrTail, log, onOversize); err != nil {
			fmt.Fprintf(stderrTail, "[reading stdout: %v]\n", err)
		}
	}()
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		// A small buffer: a server's stderr is kept as a short tail,
		// and a hundred servers each holding io.Copy's 32 KiB would be
		// megabytes for nothing. (The wrappers hide the file's WriteTo,
		// which would copy through a buffer of its own.)
		_, _ = io.CopyBuffer(struct{ io.Writer }{stderrTail}, struct{ io.Reader }{errR}, make([]byte, stderrBuffer))
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
		// holds the pipes; ending the output below unblocks a pending
		// write.
		outR.Close()
		errR.Close()
		p.err = err
		close(p.exited)
		if err == nil {
			err = io.EOF
		}
		p.out.CloseWithError(err)
	}()
	return p, nil
}

// Stop ends the process: stdin closed, then SIGTERM, then SIGKILL to its
// process group. It returns within about five seconds.
func (p *Process) Stop() {
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

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Pid is the process id the system gave the server.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// ExitErr describes how the process ended, once it has.
func (p *Process) ExitErr() error {
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

// The buffers of a server's output. Every running stdio server has its
// own, for as long as it runs: they are kept small, and a large message
// (a long tools/list) is read in fragments into a buffer of its own that
// is not kept once it has been passed on.
const (
	// stdoutBuffer is the buffer filterStdout reads through.
	stdoutBuffer = 8 << 10
	// keptLineBuffer is the largest line buffer filterStdout keeps for
	// the next line.
	keptLineBuffer = 16 << 10
	// stderrBuffer is the buffer a server's stderr is copied through.
	stderrBuffer = 2 << 10
)

// lineWriter takes the lines filterStdout passes on, each whole in one
// Write, and the error that ends them (an io.PipeWriter does, and the
// lineQueue a stdio connection reads).
type lineWriter interface {
	Write([]byte) (int, error)
	CloseWithError(error) error
}

// errResetOversize ends a connection on which a message over the bound had
// no id the gateway could answer for.
var errResetOversize = errors.New("the server sent a message over the size limit with no id to answer for; the connection is reset")

// filterStdout copies a server's stdout to w one line (one JSON-RPC
// message) at a time, each line whole in one Write. Lines that are not JSON
// objects or arrays are reported to stderrTail and the log and dropped. A
// line over MaxMessageBytes is skipped while MsgHead reads it, then: a
// response gets an error response for its id in its place, a notification
// or a server request is dropped, and anything else ends the copy, closing
// w with errResetOversize so that the session ends and the server is
// restarted. onOversize (may be nil) hears of each. It returns the read
// error that ended the copy, if not the end of the output.
func filterStdout(r io.Reader, w lineWriter, stderrTail io.Writer, log *slog.Logger, onOversize func(OversizeEvent)) error {
	br := bufio.NewReaderSize(r, stdoutBuffer)
	var (
		line    []byte
		over    bool // the line is over the bound: head reads it, line is not kept
		head    MsgHead
		size    int64
		dropped int
	)
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		switch {
		case over:
			_, _ = head.Write(frag)
		case size > MaxMessageBytes:
			over, head = true, MsgHead{}
			_, _ = head.Write(line)
			_, _ = head.Write(frag)
			line = nil // do not keep a buffer this large
		default:
			line = append(line, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			ev := head.decide(size)
			log.Warn("upstream sent a message over the size limit", "what", ev.Describe())
			fmt.Fprintf(stderrTail, "[message over the size limit: %s]\n", ev.Describe())
			if onOversize != nil {
				onOversize(ev)
			}
			switch ev.Action {
			case OversizeFailedCall:
				if _, werr := w.Write(append(tooLargeResponse(ev.ID, size), '\n')); werr != nil {
					return nil
				}
			case OversizeRestarted:
				w.CloseWithError(errResetOversize)
				return nil
			}
		} else if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
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
			} else if _, werr := w.Write(append(append([]byte(nil), trimmed...), '\n')); werr != nil {
				return nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		over, size, line = false, 0, line[:0]
		if cap(line) > keptLineBuffer {
			line = nil // a large line's buffer is not kept for the small ones
		}
	}
}
