package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestAskAnswer: a request for a key reaches the replica answering for
// it, and its answer comes back to the asker only; with no one answering,
// Ask says so at once; after stop, no one answers.
func TestAskAnswer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "rel")
	b, _ := open(t, srv.URL(0), "b", "rel")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const key = "toolsearch-held-SECRET"
	if _, ok, err := b.Ask(ctx, "held", key, []byte("anyone?")); ok || err != nil {
		t.Fatalf("with no one answering: ok %v, %v", ok, err)
	}
	stop, err := a.Answer(ctx, "held", key, func(_ context.Context, req []byte) []byte {
		return []byte("a got " + string(req))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"one", "two"} {
		got, ok, err := b.Ask(ctx, "held", key, []byte(q))
		if err != nil || !ok || string(got) != "a got "+q {
			t.Errorf("ask %q: %q, %v, %v", q, got, ok, err)
		}
	}
	// Another key, the same topic: not a's.
	if _, ok, _ := b.Ask(ctx, "held", key+"2", []byte("x")); ok {
		t.Error("a answered for another key")
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	if _, ok, _ := b.Ask(ctx, "held", key, []byte("after")); ok {
		t.Error("answered after stop")
	}
}

// TestTemp: a short-lived value is sealed under its key, expires, and an
// altered one is not returned.
func TestTemp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "tmp")
	b, _ := open(t, srv.URL(0), "b", "tmp")
	ctx := context.Background()
	if err := a.PutTemp(ctx, "bind", "client\x00state", []byte("srv\x00tool"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetTemp(ctx, "bind", "client\x00state"); err != nil || string(got) != "srv\x00tool" {
		t.Fatalf("b reads %q, %v", got, err)
	}
	keys, _ := redis.Strings(srv.Do("KEYS", "tmp:temp:*"))
	if len(keys) != 1 {
		t.Fatalf("kept %v, want one key", keys)
	}
	v, _ := redis.Bytes(srv.Do("GET", keys[0]))
	if strings.Contains(keys[0], "state") || strings.Contains(string(v), "tool") {
		t.Errorf("kept in clear: %v", keys)
	}
	v[len(v)-1] ^= 1
	srv.Do("SET", keys[0], v, "PX", time.Minute.Milliseconds())
	if got, _ := b.GetTemp(ctx, "bind", "client\x00state"); got != nil {
		t.Errorf("an altered value read back: %q", got)
	}
	if err := a.DelTemp(ctx, "bind", "client\x00state"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.GetTemp(ctx, "bind", "client\x00state"); got != nil {
		t.Errorf("read after delete: %q", got)
	}
	_ = a.PutTemp(ctx, "bind", "short", []byte("x"), 50*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if got, _ := b.GetTemp(ctx, "bind", "short"); got != nil {
		t.Errorf("read after its TTL: %q", got)
	}
}

// TestSwapBlob: a write back of a value read succeeds only while no other
// write came in between; a first write only where there is none.
func TestSwapBlob(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "swap")
	b, _ := open(t, srv.URL(0), "b", "swap")
	ctx := context.Background()
	if ok, err := a.SwapBlob(ctx, "usage", "learned", nil, []byte("one")); !ok || err != nil {
		t.Fatalf("first write: %v %v", ok, err)
	}
	if ok, _ := b.SwapBlob(ctx, "usage", "learned", nil, []byte("two")); ok {
		t.Error("a first write over a value")
	}
	seenA, _ := a.GetBlob(ctx, "usage", "learned")
	seenB, _ := b.GetBlob(ctx, "usage", "learned")
	if ok, err := b.SwapBlob(ctx, "usage", "learned", seenB, []byte("one+b")); !ok || err != nil {
		t.Fatalf("b's write back: %v %v", ok, err)
	}
	if ok, _ := a.SwapBlob(ctx, "usage", "learned", seenA, []byte("one+a")); ok {
		t.Error("a wrote back over b's write")
	}
	seenA, _ = a.GetBlob(ctx, "usage", "learned")
	if ok, _ := a.SwapBlob(ctx, "usage", "learned", seenA, []byte("one+b+a")); !ok {
		t.Error("a's retry after reading again")
	}
	if got, _ := b.GetBlob(ctx, "usage", "learned"); string(got) != "one+b+a" {
		t.Errorf("the value is %q", got)
	}
}
