package wire

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSpawnSlots: no more servers spawn at once than there are slots; a
// slot given back (once, however often release is called) or held past
// spawnHold lets the next one spawn; a wait ends with its context.
func TestSpawnSlots(t *testing.T) {
	// Not parallel: the third Take must come within spawnHold of the
	// first, and the 16 MiB lines of TestFilterStdout beside it (their
	// collections) can stop the test longer than that.
	s := NewSpawnSlots(2)
	ctx := context.Background()
	r1, err := s.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Both slots taken: a third waits, and gives up with its context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if spawnHold > 20*time.Millisecond {
		if _, err := s.Take(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a third spawn with both slots taken: %v, want the deadline", err)
		}
	}
	// Given back twice, a slot counts once.
	r1()
	r1()
	if n := len(s.taken); n != 1 {
		t.Fatalf("%d slots taken after one was given back twice, want 1", n)
	}
	r3, err := s.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Held past spawnHold, slots come back by themselves.
	waited := make(chan error, 1)
	go func() {
		_, err := s.Take(ctx)
		waited <- err
	}()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(spawnHold + 10*time.Second):
		t.Fatalf("no slot came back %v after it was taken", spawnHold)
	}
	r2()
	r3()
}
