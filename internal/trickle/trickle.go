// Package trickle writes to a connection slowly, a few bytes at a time,
// for tests of servers that must not wait for ever on a slow client.
package trickle

import (
	"io"
	"time"
)

// Start writes b to w every interval until stop is called or a write
// fails. stop waits for nothing: the writer ends at its next tick.
func Start(w io.Writer, b []byte, every time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := w.Write(b); err != nil {
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
