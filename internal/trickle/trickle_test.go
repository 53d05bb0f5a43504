package trickle

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the writer goroutine and the
// test to share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	err error
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestStartWritesUntilStopped(t *testing.T) {
	t.Parallel()
	var w lockedBuffer
	stop := Start(&w, []byte("x"), 5*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for len(w.String()) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if n := len(w.String()); n < 3 {
		t.Fatalf("%d bytes written, want at least 3", n)
	}
	time.Sleep(20 * time.Millisecond) // let a tick in flight land
	n := len(w.String())
	time.Sleep(50 * time.Millisecond)
	if m := len(w.String()); m != n {
		t.Fatalf("%d bytes after stop, then %d: the writer goes on", n, m)
	}
}

func TestStartEndsOnWriteError(t *testing.T) {
	t.Parallel()
	w := &lockedBuffer{err: errors.New("closed")}
	stop := Start(w, []byte("x"), time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	stop() // must not block, whether or not the writer has ended
	if w.String() != "" {
		t.Fatal("wrote past a failed write")
	}
}
