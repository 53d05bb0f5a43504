package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestForgedBlobs: what a process that can write to Redis, but has no
// cluster key, can make a replica read as a shared value. Each forgery is
// refused as if the value were absent; the refusals are counted, and
// logged once per kind however many reads meet them.
func TestForgedBlobs(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "fb")
	b, lb := open(t, srv.URL(0), "b", "fb")
	ctx := context.Background()
	genuine := []byte(`{"tools":[{"name":"echo"}]}`)
	forged := []byte(`{"tools":[{"name":"echo","annotations":{"readOnlyHint":true}},{"name":"exfiltrate"}]}`)
	for _, kind := range []string{"manifest", "index", "hints", "usage"} {
		if err := a.PutBlob(ctx, kind, "d1", genuine); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := redis.Bytes(srv.Do("GET", "fb:blob:manifest:d1"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := openKey(t, srv.URL(0), "x", "fb", "another-cluster-key-0123456789abcdef")
	sum := sha256.Sum256(forged)
	tests := []struct {
		name, kind, key string
		val             func() []byte
	}{
		{name: "the data rewritten with its SHA-256 recomputed", kind: "manifest", key: "fb:blob:manifest:d1",
			val: func() []byte { return append(sum[:], forged...) }},
		{name: "the data rewritten behind the genuine tag", kind: "index", key: "fb:blob:index:d1",
			val: func() []byte { return append(append([]byte{}, stored[:tagSize]...), forged...) }},
		{name: "a genuine manifest copied under another digest", kind: "manifest", key: "fb:blob:manifest:d2",
			val: func() []byte { return stored }},
		{name: "a genuine manifest copied as hints", kind: "hints", key: "fb:blob:hints:d1",
			val: func() []byte { return stored }},
		{name: "a genuine manifest copied as learned usage", kind: "usage", key: "fb:blob:usage:d1",
			val: func() []byte { return stored }},
		{name: "a value tagged under another cluster key", kind: "usage", key: "fb:blob:usage:d3",
			val: func() []byte { return append(other.tag("usage", "fb:blob:usage:d3", forged), forged...) }},
		{name: "a value shorter than a tag", kind: "hints", key: "fb:blob:hints:d4",
			val: func() []byte { return []byte("short") }},
	}
	for _, tc := range tests {
		if _, err := srv.Do("SET", tc.key, tc.val()); err != nil {
			t.Fatal(err)
		}
		digest := tc.key[strings.LastIndexByte(tc.key, ':')+1:]
		for range 3 { // a read flood
			got, err := b.GetBlob(ctx, tc.kind, digest)
			if err != nil || got != nil {
				t.Errorf("%s: GetBlob = %q, %v; want it refused as absent", tc.name, got, err)
			}
		}
	}
	if got := b.stats.blobRefused.Load(); got != int64(3*len(tests)) {
		t.Errorf("refused %d values, want %d", got, 3*len(tests))
	}
	for _, kind := range []string{"manifest", "index", "hints", "usage"} {
		if n := strings.Count(lb.String(), "kind="+kind+" "); n != 1 {
			t.Errorf("the %s refusals were logged %d times, want once:\n%s", kind, n, lb.String())
		}
	}
	var m bytes.Buffer
	b.WriteMetrics(&m)
	if want := `toolsearch_cluster_shared_refused_total{replica="b"} 21`; !strings.Contains(m.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, m.String())
	}
	// A genuine value still reads, and a replica with another key reads
	// none of them.
	if got, err := b.GetBlob(ctx, "hints", "d1"); err != nil || got != nil {
		t.Errorf("hints d1 was overwritten with a copy: %q, %v; want refused", got, err)
	}
	if err := a.PutBlob(ctx, "hints", "d1", genuine); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetBlob(ctx, "hints", "d1"); err != nil || !bytes.Equal(got, genuine) {
		t.Errorf("a genuine value: %q, %v", got, err)
	}
	if got, err := other.GetBlob(ctx, "hints", "d1"); err != nil || got != nil {
		t.Errorf("a replica with another key read %q, %v; want nothing", got, err)
	}
}

// TestSwapBlobOverAForgery: GetBlob reads a forged value as absent, and a
// swap over "absent" replaces it, so a forgery cannot block the writes of
// its key (hints, learned usage) until it expires; a genuine value there
// still stops a swap that did not see it.
func TestSwapBlobOverAForgery(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "sw")
	ctx := context.Background()
	for i, forged := range []string{"", "short", strings.Repeat("f", 200)} {
		digest := fmt.Sprint("learned", i)
		if _, err := srv.Do("SET", "sw:blob:usage:"+digest, forged); err != nil {
			t.Fatal(err)
		}
		if got, err := a.GetBlob(ctx, "usage", digest); err != nil || got != nil {
			t.Fatalf("forged %q: GetBlob = %q, %v; want absent", forged, got, err)
		}
		if ok, err := a.SwapBlob(ctx, "usage", digest, nil, []byte("genuine")); err != nil || !ok {
			t.Errorf("forged %q: swap over it: %v, %v; want it replaced", forged, ok, err)
		}
		if got, _ := a.GetBlob(ctx, "usage", digest); string(got) != "genuine" {
			t.Errorf("forged %q: then read %q, want genuine", forged, got)
		}
		if ok, err := a.SwapBlob(ctx, "usage", digest, nil, []byte("unseen")); err != nil || ok {
			t.Errorf("a swap over a genuine value it did not see: %v, %v; want refused", ok, err)
		}
	}
}

// TestNoKeyNoSharing: without a cluster key no shared value is read or
// written, and Open says why.
func TestNoKeyNoSharing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "nk")
	n, lb := openKey(t, srv.URL(0), "n", "nk", "")
	ctx := context.Background()
	if err := a.PutBlob(ctx, "manifest", "d1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n.SharesValues() || !a.SharesValues() {
		t.Errorf("SharesValues: %v without a key, %v with one", n.SharesValues(), a.SharesValues())
	}
	if _, err := n.GetBlob(ctx, "manifest", "d1"); !errors.Is(err, ErrNoKey) {
		t.Errorf("GetBlob without a key: %v, want ErrNoKey", err)
	}
	if err := n.PutBlob(ctx, "manifest", "d1", []byte("y")); !errors.Is(err, ErrNoKey) {
		t.Errorf("PutBlob without a key: %v, want ErrNoKey", err)
	}
	if _, err := n.SwapBlob(ctx, "manifest", "d1", nil, []byte("y")); !errors.Is(err, ErrNoKey) {
		t.Errorf("SwapBlob without a key: %v, want ErrNoKey", err)
	}
	for _, want := range []string{"control the tool definitions and the ranking", "without TLS (redis://) and without a password"} {
		if !strings.Contains(lb.String(), want) {
			t.Errorf("Open's log lacks %q:\n%s", want, lb.String())
		}
	}
}

// TestForgedSessionLeases: 300 leases written into Redis with far-future
// expiries (by something that can write to it, not by a replica) do not
// count against maxSessions: a new session is still accepted, the forged
// leases are dropped, counted and logged once. A lease within what a
// replica writes (now + the lease TTL) still counts.
func TestForgedSessionLeases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, lb := open(t, srv.URL(0), "a", "fl")
	ctx := context.Background()
	now := time.Now()
	forged := []any{"fl:sessions"} // ZADD key score member ...
	for i := range 300 {
		forged = append(forged, now.Add(time.Duration(i+1)*24*time.Hour).UnixMilli(), fmt.Sprintf("evil/%d", i))
	}
	// Two leases a replica could have written: they count.
	forged = append(forged,
		now.Add(leaseTTL/2).UnixMilli(), "other/1",
		now.Add(leaseTTL).UnixMilli(), "other/2")
	if _, err := srv.Do("ZADD", forged...); err != nil {
		t.Fatal(err)
	}
	if n, err := a.OpenSessions(ctx); err != nil || n != 2 {
		t.Errorf("OpenSessions = %d, %v; want the 2 genuine leases", n, err)
	}
	tests := []struct {
		name   string
		max    int
		wantOK bool
	}{
		{name: "a cap of 3 has a place beside the 2 genuine leases", max: 3, wantOK: true},
		{name: "a cap of 3 is then full", max: 3, wantOK: false},
		{name: "a cap of 300 has room", max: 300, wantOK: true},
	}
	for _, tc := range tests {
		_, ok, err := a.ReserveSession(ctx, tc.max)
		if err != nil || ok != tc.wantOK {
			t.Errorf("%s: ok %v, %v; want %v", tc.name, ok, err, tc.wantOK)
		}
	}
	if n, _ := redis.Int(srv.Do("ZCARD", "fl:sessions")); n != 4 {
		t.Errorf("the lease set holds %d, want 4 (the forged ones dropped)", n)
	}
	if got := a.stats.leasesDropped.Load(); got != 300 {
		t.Errorf("dropped %d forged leases, want 300", got)
	}
	if n := lb.count("dropped session leases"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, lb.String())
	}
}

// TestReplayIsBounded: a replay on reconnect reads at most MaxStreamEvents
// events of at most MaxEventBytes each, whatever a Redis writer pushed
// onto the stream's list; past that it refuses the replay rather than
// read the list whole. A full stream of genuine events replays whole.
func TestReplayIsBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "rb")
	ctx := context.Background()
	const ttl = time.Minute
	tests := []struct {
		name    string
		genuine int                     // events appended by a replica
		push    func(list string) []any // what a writer pushes after them
		after   int                     // the client's Last-Event-ID
		wantN   int                     // events replayed after it
		wantErr error
	}{
		{name: "a full stream", genuine: MaxStreamEvents + 10, after: 9, wantN: MaxStreamEvents},
		{name: "a genuine event copied 10,000 times onto the list", genuine: 3, after: -1, wantErr: ErrBadSession,
			push: func(list string) []any {
				sealed, _ := redis.Bytes(srv.Do("LINDEX", list, 0)) // it opens: it was sealed for this list
				out := make([]any, 10000)
				for i := range out {
					out[i] = sealed
				}
				return out
			}},
		{name: "one event of 2 MiB", genuine: 3, after: -1, wantErr: ErrBadSession,
			push: func(string) []any { return []any{strings.Repeat("x", 2<<20)} }},
		{name: "one forged event of a normal size", genuine: 3, after: -1, wantErr: ErrBadSession,
			push: func(string) []any { return []any{strings.Repeat("x", 100)} }},
	}
	for i, tc := range tests {
		id := fmt.Sprintf("SESSION-REPLAY-%d", i)
		if err := a.OpenEvents(ctx, id, "", ttl); err != nil {
			t.Fatal(err)
		}
		for n := range tc.genuine {
			if _, err := a.AppendEvent(ctx, id, "", fmt.Appendf(nil, `{"n":%d}`, n), 0, ttl); err != nil {
				t.Fatal(err)
			}
		}
		list, _, _ := a.eventKeys(id, "")
		if tc.push != nil {
			if _, err := srv.Do("RPUSH", append([]any{list}, tc.push(list)...)...); err != nil {
				t.Fatal(err)
			}
		}
		got, err := a.EventsAfter(ctx, id, "", tc.after)
		switch {
		case tc.wantErr != nil:
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %d events, %v; want %v", tc.name, len(got), err, tc.wantErr)
			}
		case err != nil || len(got) != tc.wantN:
			t.Errorf("%s: %d events, %v; want %d", tc.name, len(got), err, tc.wantN)
		}
	}
}
