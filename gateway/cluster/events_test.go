package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestEvents: events one replica keeps replay on another from any index,
// in order, for the same session id only; indexes continue across the
// replicas; an unknown stream and a dropped event are errors, never a
// replay that skips one; the session's end removes every key.
func TestEvents(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "ev")
	b, _ := open(t, srv.URL(0), "b", "ev")
	ctx := context.Background()
	const id, ttl = "SESSIONIDSECRET1", time.Minute

	if _, err := b.EventsAfter(ctx, id, "", -1); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("a stream never opened: %v, want ErrUnknownStream", err)
	}
	if err := a.OpenEvents(ctx, id, "", ttl); err != nil {
		t.Fatal(err)
	}
	if got, err := b.EventsAfter(ctx, id, "", -1); err != nil || len(got) != 0 {
		t.Fatalf("an opened, empty stream: %q, %v", got, err)
	}
	for i := range 3 {
		r := a
		if i == 2 {
			r = b // the stream moved to b: its index goes on
		}
		n, err := r.AppendEvent(ctx, id, "", fmt.Appendf(nil, `{"n":%d}`, i), 0, ttl)
		if err != nil || n != i {
			t.Fatalf("append %d: index %d, %v", i, n, err)
		}
	}
	for _, tc := range []struct {
		after int
		want  string
	}{{-1, `{"n":0}{"n":1}{"n":2}`}, {0, `{"n":1}{"n":2}`}, {1, `{"n":2}`}, {2, ``}, {7, ``}} {
		got, err := b.EventsAfter(ctx, id, "", tc.after)
		if err != nil || string(bytes.Join(got, nil)) != tc.want {
			t.Errorf("after %d: %q, %v; want %s", tc.after, got, err, tc.want)
		}
	}
	if _, err := b.EventsAfter(ctx, id, "", -2); err == nil {
		t.Error("index -2 accepted")
	}
	// Another session's stream of the same name is another stream.
	if _, err := b.EventsAfter(ctx, "SESSIONIDSECRET2", "", -1); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("another session: %v", err)
	}
	keys, _ := redis.Strings(srv.Do("KEYS", "ev:events:*"))
	for _, k := range keys {
		if strings.Contains(k, id) {
			t.Errorf("key %s shows the session id", k)
		}
		if typ, _ := redis.String(srv.Do("TYPE", k)); typ == "list" {
			values, _ := redis.Strings(srv.Do("LRANGE", k, 0, -1))
			for _, v := range values {
				if strings.Contains(v, `"n"`) {
					t.Errorf("an event kept in clear: %q", v)
				}
			}
		}
		if d := pttlOf(srv, k); d <= 0 || d > time.Minute {
			t.Errorf("key %s: TTL %v", k, d)
		}
	}

	// A call's stream: over MaxStreamEvents the oldest go, and a replay
	// from before them fails rather than skipping.
	const call = "STREAMX"
	if err := a.OpenEvents(ctx, id, call, ttl); err != nil {
		t.Fatal(err)
	}
	for i := range MaxStreamEvents + 5 {
		if _, err := a.AppendEvent(ctx, id, call, fmt.Appendf(nil, "%d", i), 0, ttl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.EventsAfter(ctx, id, call, 3); !errors.Is(err, ErrEventsPurged) {
		t.Errorf("after a dropped event: %v, want ErrEventsPurged", err)
	}
	got, err := b.EventsAfter(ctx, id, call, 4)
	if err != nil || len(got) != MaxStreamEvents || string(got[0]) != "5" {
		t.Fatalf("after the last dropped one: %d events from %q, %v", len(got), got[:min(1, len(got))], err)
	}
	// An event too large to keep drops what came before it, with it.
	big := bytes.Repeat([]byte("x"), MaxEventBytes+1)
	n, err := a.AppendEvent(ctx, id, call, big, 0, ttl)
	if err != nil || n != MaxStreamEvents+5 {
		t.Fatalf("the large event: index %d, %v", n, err)
	}
	if _, err := b.EventsAfter(ctx, id, call, n-1); !errors.Is(err, ErrEventsPurged) {
		t.Errorf("replay over the large event: %v, want ErrEventsPurged", err)
	}
	if n2, _ := a.AppendEvent(ctx, id, call, []byte("after"), 0, ttl); n2 != n+1 {
		t.Errorf("the index after the large event: %d, want %d", n2, n+1)
	}
	if got, err := b.EventsAfter(ctx, id, call, n); err != nil || len(got) != 1 || string(got[0]) != "after" {
		t.Errorf("after the large event: %q, %v", got, err)
	}
	// Two events a replica could not add are counted: the next gets the
	// index the client was given, and a replay from before them fails.
	if n3, _ := a.AppendEvent(ctx, id, call, []byte("back"), 2, ttl); n3 != n+4 {
		t.Errorf("the index after two missed events: %d, want %d", n3, n+4)
	}
	if _, err := b.EventsAfter(ctx, id, call, n+1); !errors.Is(err, ErrEventsPurged) {
		t.Errorf("replay over missed events: %v, want ErrEventsPurged", err)
	}
	if got, err := b.EventsAfter(ctx, id, call, n+3); err != nil || len(got) != 1 || string(got[0]) != "back" {
		t.Errorf("after the missed events: %q, %v", got, err)
	}

	// An altered event is refused, not replayed.
	list, _, _ := a.eventKeys(id, "")
	flipped, _ := redis.Bytes(srv.Do("LINDEX", list, 1))
	flipped[len(flipped)-1] ^= 1
	srv.Do("LSET", list, 1, flipped)
	if _, err := b.EventsAfter(ctx, id, "", -1); !errors.Is(err, ErrBadSession) {
		t.Errorf("an altered event: %v, want ErrBadSession", err)
	}
	// One moved from another stream is refused too.
	other, _, _ := a.eventKeys(id, call)
	moved, _ := redis.Bytes(srv.Do("LINDEX", other, 0))
	srv.Do("LSET", list, 1, moved)
	if _, err := b.EventsAfter(ctx, id, "", 0); !errors.Is(err, ErrBadSession) {
		t.Errorf("an event moved from another stream: %v, want ErrBadSession", err)
	}

	if err := b.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if keys, _ := redis.Strings(srv.Do("KEYS", "ev:events:*")); len(keys) != 0 {
		t.Errorf("kept events outlive the session: %v", keys)
	}
}

// TestEventsRedisDown: while Redis is down every operation fails at once
// with ErrDown.
func TestEventsRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "evd")
	srv.Kill()
	ctx := context.Background()
	waitDown := time.Now().Add(10 * time.Second)
	for a.Up() && time.Now().Before(waitDown) {
		_ = a.OpenEvents(ctx, "S", "", time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if _, err := a.AppendEvent(ctx, "S", "", []byte("x"), 0, time.Second); !errors.Is(err, ErrDown) {
		t.Errorf("append: %v", err)
	}
	if _, err := a.EventsAfter(ctx, "S", "", -1); !errors.Is(err, ErrDown) {
		t.Errorf("after: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("failing took %v", d)
	}
}
