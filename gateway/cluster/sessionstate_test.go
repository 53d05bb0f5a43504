package cluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestSessionState: a state saved by one replica opens on another for the
// same id only; the id never shows in Redis; an altered, moved or forged
// value is refused; delete and TTL work.
func TestSessionState(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "ss")
	b, lb := open(t, srv.URL(0), "b", "ss")
	ctx := context.Background()
	const id, other = "SESSIONIDSECRET1", "SESSIONIDSECRET2"
	state := []byte(`{"mode":"dynamic","loaded":["echo/echo"]}`)
	if err := a.SaveSession(ctx, id, state, time.Minute); err != nil {
		t.Fatal(err)
	}
	keys, err := redis.Strings(srv.Do("KEYS", "ss:session:*"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v (%v), want one session key", keys, err)
	}
	raw, _ := redis.Bytes(srv.Do("GET", keys[0]))
	if strings.Contains(keys[0], id) || bytes.Contains(raw, []byte(id)) || bytes.Contains(raw, []byte("dynamic")) {
		t.Errorf("Redis shows the session id or the state in clear: %s = %q", keys[0], raw)
	}
	if ttl := ttlOf(srv, keys[0]); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL %v, want within a minute", ttl)
	}
	got, err := b.LoadSession(ctx, id)
	if err != nil || !bytes.Equal(got, state) {
		t.Fatalf("b loads %q, %v; want %q", got, err, state)
	}
	if got, err := b.LoadSession(ctx, other); got != nil || err != nil {
		t.Errorf("an unknown id loads %q, %v; want nothing", got, err)
	}

	// Attacks on the stored value: each must be refused, never opened.
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1
	_ = a.SaveSession(ctx, other, []byte(`{"mode":"full"}`), time.Minute)
	otherKey := a.sessionKey(other)
	otherRaw, _ := redis.Bytes(srv.Do("GET", otherKey))
	cases := []struct {
		name string
		val  []byte
	}{
		{"one bit flipped", flipped},
		{"cut short", raw[:len(raw)/2]},
		{"empty-ish", []byte("x")},
		{"another session's state moved here", otherRaw},
		{"sealed for the right key by someone without the id", seal("GUESSEDID", keys[0], []byte(`{"mode":"full"}`))},
		{"too large", bytes.Repeat([]byte("y"), maxSessionBytes+100)},
	}
	for _, c := range cases {
		if _, err := srv.Do("SET", keys[0], c.val, "PX", time.Minute.Milliseconds()); err != nil {
			t.Fatal(err)
		}
		got, err := b.LoadSession(ctx, id)
		if !errors.Is(err, ErrBadSession) || got != nil {
			t.Errorf("%s: loads %q, %v; want ErrBadSession", c.name, got, err)
		}
	}
	if lb.count("refusing a saved session state") == 0 {
		t.Errorf("the refusals were not logged:\n%s", lb.String())
	}
	if err := a.SaveSession(ctx, id, bytes.Repeat([]byte("z"), maxSessionBytes+1), time.Minute); err == nil {
		t.Error("a state over the bound was saved")
	}
	if err := a.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, err := b.LoadSession(ctx, id); got != nil || err != nil {
		t.Errorf("after delete: %q, %v", got, err)
	}
	if err := a.SaveSession(ctx, "", state, time.Minute); err == nil {
		t.Error("a state without an id was saved")
	}
}

// TestStreams: a message published for a session reaches the replica
// subscribed to its stream, and only for that session; a message someone
// without the id publishes on the channel is dropped; after stop nothing
// is received and publishing counts no receiver.
func TestStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "st")
	b, lb := open(t, srv.URL(0), "b", "st")
	ctx := context.Background()
	msgs, stop, err := b.SubscribeStream(ctx, "S1")
	if err != nil {
		t.Fatal(err)
	}
	others, stop2, err := b.SubscribeStream(ctx, "S2")
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	recv := func(ch <-chan []byte) []byte {
		select {
		case m := <-ch:
			return m
		case <-time.After(5 * time.Second):
			return nil
		}
	}
	// The SUBSCRIBE may still be on its way: publish until one lands.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := a.PublishStream(ctx, "S1", []byte(`{"method":"notifications/tools/list_changed"}`))
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no replica received the message")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := recv(msgs); string(got) != `{"method":"notifications/tools/list_changed"}` {
		t.Fatalf("received %q", got)
	}
	// Forged on the right channel, in clear and sealed with a wrong id.
	ch := a.streamChannel("S1")
	srv.Do("PUBLISH", ch, `{"method":"notifications/resources/updated"}`)
	srv.Do("PUBLISH", ch, seal("S3", ch, []byte(`{"method":"forged"}`)))
	_, _ = a.PublishStream(ctx, "S1", []byte("after the forgeries"))
	if got := recv(msgs); string(got) != "after the forgeries" {
		t.Errorf("received %q, want only the genuine message", got)
	}
	select {
	case m := <-others:
		t.Errorf("another session's stream received %q", m)
	default:
	}
	if lb.count("dropping a stream message that does not open") != 2 {
		t.Errorf("want two forged messages dropped and logged:\n%s", lb.String())
	}
	stop()
	stop() // safe twice
	deadline = time.Now().Add(5 * time.Second)
	for {
		n, _ := a.PublishStream(ctx, "S1", []byte("late"))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still subscribed after stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSessionEnded: a session one replica deletes is reported ended to
// the others, for its id only; a message published without the id ends
// nothing.
func TestSessionEnded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "se")
	b, _ := open(t, srv.URL(0), "b", "se")
	ctx := context.Background()
	got := make(chan []string, 8)
	a.OnSessionEnded(func(ended func(string) bool) {
		var ids []string
		for _, id := range []string{"S1", "S2", "S3"} {
			if ended(id) {
				ids = append(ids, id)
			}
		}
		got <- ids
	})
	_ = b.SaveSession(ctx, "S2", []byte("{}"), time.Minute)
	// P:ended is subscribed in the background: delete until it lands.
	var ids []string
	deadline := time.Now().Add(5 * time.Second)
	for ids == nil {
		if err := b.DeleteSession(ctx, "S2"); err != nil {
			t.Fatal(err)
		}
		select {
		case ids = <-got:
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("a was not told the session ended")
			}
		}
	}
	if strings.Join(ids, ",") != "S2" {
		t.Errorf("a was told %v ended, want S2", ids)
	}
	if n, _ := redis.Int(srv.Do("EXISTS", b.sessionKey("S2"))); n != 0 {
		t.Error("the state outlived DeleteSession")
	}
	// Forged: the right name, no valid seal; then garbage.
	srv.Do("PUBLISH", "se:ended", sessionName("S1")+":forged")
	srv.Do("PUBLISH", "se:ended", "garbage")
	for range 2 {
		select {
		case ids := <-got:
			if len(ids) != 0 {
				t.Errorf("a forged message ended %v", ids)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the forged messages were not seen")
		}
	}
}
