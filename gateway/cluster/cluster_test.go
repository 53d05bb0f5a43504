package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// logBuf collects a Cluster's log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
func (l *logBuf) count(s string) int          { return strings.Count(l.String(), s) }

// ttlOf is the TTL Redis gives key, to the second; negative when the key
// has none, or is absent.
func ttlOf(srv *redistest.Server, key string) time.Duration {
	n, _ := redis.Int64(srv.Do("TTL", key))
	return time.Duration(n) * time.Second
}

// pttlOf is ttlOf to the millisecond.
func pttlOf(srv *redistest.Server, key string) time.Duration {
	n, _ := redis.Int64(srv.Do("PTTL", key))
	return time.Duration(n) * time.Millisecond
}

// testKey is the cluster key of the replicas under test.
const testKey = "cluster-key-of-the-tests-0123456789abcdef"

func open(t *testing.T, url, replica, prefix string) (*Cluster, *logBuf) {
	t.Helper()
	return openKey(t, url, replica, prefix, testKey)
}

// openKey is open with the cluster key key ("" for none).
func openKey(t *testing.T, url, replica, prefix, key string) (*Cluster, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	cfg := config.Cluster{Redis: url, Prefix: prefix, Replica: replica, TTL: time.Hour, MaxBlobBytes: 1 << 20, Key: key}
	c, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, lb
}

func TestBlobs(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "tb")
	b, lb := open(t, srv.URL(0), "b", "tb")
	other, _ := open(t, srv.URL(0), "c", "elsewhere")
	ctx := context.Background()
	big := bytes.Repeat([]byte("x"), 1<<20+1)
	if err := a.PutBlob(ctx, "index", "d1", []byte("index one")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		c           *Cluster
		kind, dig   string
		want        []byte
		wantErr     error
		wantErrText string
	}{
		{name: "another replica reads it", c: b, kind: "index", dig: "d1", want: []byte("index one")},
		{name: "another digest is absent", c: b, kind: "index", dig: "d2"},
		{name: "another kind is absent", c: b, kind: "manifest", dig: "d1"},
		{name: "another prefix is absent", c: other, kind: "index", dig: "d1"},
		{name: "a digest with a colon", c: b, kind: "index", dig: "d1:x", wantErrText: "cannot name a shared value"},
		{name: "an empty kind", c: b, kind: "", dig: "d1", wantErrText: "cannot name a shared value"},
	}
	for _, tc := range tests {
		got, err := tc.c.GetBlob(ctx, tc.kind, tc.dig)
		switch {
		case tc.wantErrText != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErrText) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErrText)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !bytes.Equal(got, tc.want):
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := a.PutBlob(ctx, "index", "big", big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a value over the bound: %v, want ErrTooLarge", err)
	}
	// A value altered in Redis (by hand, or cut short) is refused.
	if _, err := srv.Do("SETRANGE", "tb:blob:index:d1", 40, "X"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetBlob(ctx, "index", "d1"); err != nil || got != nil {
		t.Errorf("an altered value: got %q, %v; want it refused as absent", got, err)
	}
	if lb.count("its tag does not match") != 1 {
		t.Errorf("log %q, want one line about the tag", lb.String())
	}
	// A value too large written by someone else is refused before it is
	// read whole.
	if _, err := srv.Do("SET", "tb:blob:index:huge", append(big, make([]byte, 64)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetBlob(ctx, "index", "huge"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a stored value over the bound: %v, want ErrTooLarge", err)
	}
	// The TTL is set on write.
	if ttl := ttlOf(srv, "tb:blob:index:d1"); ttl <= 0 || ttl > time.Hour {
		t.Errorf("TTL %v, want within an hour", ttl)
	}
}

func TestTakeIsSharedByReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "rl")
	b, _ := open(t, srv.URL(0), "b", "rl")
	ctx := context.Background()
	tests := []struct {
		name      string
		bucket    string
		perSecond float64
		burst     int
		n         int // requests, alternating replicas
		wantPass  int
	}{
		{"burst of five over two replicas", "s1", 1, 5, 12, 5},
		{"burst of one", "s2", 0.5, 1, 4, 1},
		{"burst zero counts as one", "s3", 0.5, 0, 3, 1},
		{"off", "s4", 0, 0, 20, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pass := 0
			var lastWait time.Duration
			for i := range tc.n {
				c := a
				if i%2 == 1 {
					c = b
				}
				wait, err := c.Take(ctx, tc.bucket, tc.perSecond, tc.burst)
				if err != nil {
					t.Fatal(err)
				}
				if wait == 0 {
					pass++
				} else {
					lastWait = wait
				}
			}
			if pass != tc.wantPass {
				t.Errorf("%d of %d passed, want %d", pass, tc.n, tc.wantPass)
			}
			if pass < tc.n {
				if max := time.Duration(float64(time.Second) / tc.perSecond); lastWait <= 0 || lastWait > max {
					t.Errorf("wait %v, want in (0, %v]", lastWait, max)
				}
			}
		})
	}
}

func TestTakeRefills(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "rf")
	ctx := context.Background()
	// 20 a second: after the burst of 2, one more passes every 50ms.
	for range 2 {
		if w, err := a.Take(ctx, "b", 20, 2); err != nil || w != 0 {
			t.Fatalf("within the burst: wait %v, %v", w, err)
		}
	}
	w, err := a.Take(ctx, "b", 20, 2)
	if err != nil || w == 0 {
		t.Fatalf("past the burst: wait %v, %v; want a wait", w, err)
	}
	time.Sleep(w + 5*time.Millisecond)
	if w, err := a.Take(ctx, "b", 20, 2); err != nil || w != 0 {
		t.Errorf("after waiting as told: wait %v, %v; want to pass", w, err)
	}
}

func TestSessionCapAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "sc")
	b, _ := open(t, srv.URL(0), "b", "sc")
	ctx := context.Background()
	var leases []*Lease
	for i := range 3 {
		c := []*Cluster{a, b}[i%2]
		l, ok, err := c.Reserve(ctx, 3)
		if err != nil || !ok {
			t.Fatalf("session %d: ok %v, %v", i, ok, err)
		}
		leases = append(leases, l)
	}
	for _, c := range []*Cluster{a, b} {
		if _, ok, err := c.ReserveSession(ctx, 3); err != nil || ok {
			t.Errorf("replica %s, a fourth session under a cap of 3: ok %v, %v; want refused", c.Replica(), ok, err)
		}
	}
	if n, err := b.OpenSessions(ctx); err != nil || n != 3 {
		t.Errorf("OpenSessions = %d, %v; want 3", n, err)
	}
	leases[0].Release()
	leases[0].Release() // twice is harmless
	if _, ok, err := b.ReserveSession(ctx, 3); err != nil || !ok {
		t.Errorf("after one was released: ok %v, %v; want a place", ok, err)
	}
}

// TestSessionLeasesOfADeadReplicaExpire: a replica that dies without
// releasing its leases stops counting once they expire; a live one renews
// its own.
func TestSessionLeasesOfADeadReplicaExpire(t *testing.T) {
	old := leaseTTL
	leaseTTL = 600 * time.Millisecond
	t.Cleanup(func() { leaseTTL = old })
	srv := redistest.Start(t)
	dead, _ := open(t, srv.URL(0), "dead", "lx")
	live, _ := open(t, srv.URL(0), "live", "lx")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go live.Run(ctx) // the dead one renews nothing
	for _, c := range []*Cluster{dead, live} {
		if _, ok, err := c.ReserveSession(ctx, 2); err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", c.Replica(), ok, err)
		}
	}
	if _, ok, _ := live.ReserveSession(ctx, 2); ok {
		t.Fatal("a third session under a cap of 2 was given a place")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := live.OpenSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still count 5s later, want the live replica's one", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The live replica's lease outlived several TTLs: it was renewed.
	time.Sleep(2 * leaseTTL)
	if n, _ := live.OpenSessions(ctx); n != 1 {
		t.Errorf("%d sessions after two more TTLs, want the live one, renewed", n)
	}
}

func TestRedisDownAndBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, lb := open(t, srv.URL(0), "r1", "db")
	changes := make(chan bool, 4)
	c.OnChange(func(up bool) { changes <- up })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	if err := c.PutBlob(ctx, "index", "d", []byte("v")); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The first command after the crash fails and marks Redis down; no
	// command waits longer than its bound.
	start := time.Now()
	_, err := c.GetBlob(ctx, "index", "d")
	if !errors.Is(err, ErrDown) {
		t.Fatalf("GetBlob with Redis dead: %v, want ErrDown", err)
	}
	if d := time.Since(start); d > 2*commandTimeout {
		t.Errorf("GetBlob took %v with Redis dead, want at most %v", d, 2*commandTimeout)
	}
	if got := <-changes; got {
		t.Error("OnChange said up, want down")
	}
	// While down, every operation fails at once, and the outage is
	// logged once however many fail.
	for range 50 {
		start := time.Now()
		if _, err := c.Take(ctx, "x", 1, 1); !errors.Is(err, ErrDown) {
			t.Fatalf("Take while down: %v, want ErrDown", err)
		}
		if _, _, err := c.ReserveSession(ctx, 10); !errors.Is(err, ErrDown) {
			t.Fatalf("ReserveSession while down: %v, want ErrDown", err)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Fatalf("an operation while down took %v, want it refused at once", d)
		}
	}
	if h := c.Health(); h.Redis != "down" || h.Error == "" || h.Replica != "r1" {
		t.Errorf("Health = %+v, want down with an error", h)
	}
	time.Sleep(1500 * time.Millisecond) // the watcher pings meanwhile
	if n := lb.count("Redis is unreachable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, lb.String())
	}
	srv.Restart()
	select {
	case up := <-changes:
		if !up {
			t.Error("OnChange said down, want up")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Cluster did not rejoin within 5s of Redis's return")
	}
	if h := c.Health(); h.Redis != "up" || h.Error != "" {
		t.Errorf("Health = %+v, want up", h)
	}
	if lb.count("Redis is reachable again") != 1 {
		t.Errorf("the return was not logged once:\n%s", lb.String())
	}
	// The restarted Redis is empty: the value is gone, and can be
	// written again.
	if got, err := c.GetBlob(ctx, "index", "d"); err != nil || got != nil {
		t.Errorf("after the restart: %q, %v; want absent", got, err)
	}
	if err := c.PutBlob(ctx, "index", "d", []byte("v")); err != nil {
		t.Errorf("PutBlob after the return: %v", err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "correct-horse-battery")
	runOpenCases(t, []openCase{
		{name: "no URL", cfg: config.Cluster{}, wantErr: "no Redis URL"},
		{name: "password in the URL", cfg: config.Cluster{Redis: "redis://:correct-horse-battery@" + srv.Addr() + "/0", Replica: "a"},
			wantUp: true, noSecret: "correct-horse-battery", wantWrite: true},
		{name: "password from the environment", cfg: config.Cluster{Redis: "redis://" + srv.Addr() + "/0", Password: "correct-horse-battery", Replica: "a"},
			wantUp: true, noSecret: "correct-horse-battery"},
		{name: "wrong password", cfg: config.Cluster{Redis: "redis://:wrong-password-123@" + srv.Addr() + "/0", Replica: "a"},
			noSecret: "wrong-password-123", wantDown: "WRONGPASS"},
		{name: "nobody listens", cfg: config.Cluster{Redis: "redis://127.0.0.1:1/0", Replica: "a"}, wantDown: "connection refused"},
		{name: "the cluster key's variable is not set", cfg: config.Cluster{Redis: "redis://127.0.0.1:1/0", Replica: "a",
			KeyProblem: errors.New(`"toolsearch.cluster.key": ${NO_KEY} is not set`)}, wantErr: "${NO_KEY} is not set"},
		{name: "a bad database", cfg: config.Cluster{Redis: "redis://:pw-in-bad-url@" + srv.Addr() + "/notanumber"},
			wantErr: "toolsearch.cluster.redis", noSecret: "pw-in-bad-url"},
	})
}

// openCase is one configuration Open is given, and what it must do.
type openCase struct {
	name      string
	cfg       config.Cluster
	wantErr   string // Open's error
	wantUp    bool
	wantDown  string // in Health().Error when down
	noSecret  string // never in the log, the error or the health
	wantWrite bool   // a value written is read back
}

// runOpenCases opens each case's configuration and checks the outcome.
func runOpenCases(t *testing.T, tests []openCase) {
	t.Helper()
	for _, tc := range tests {
		if tc.wantWrite && tc.cfg.Key == "" {
			tc.cfg.Key = testKey // shared values need one
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lb := &logBuf{}
			c, err := Open(context.Background(), tc.cfg, slog.New(slog.NewTextHandler(lb, nil)))
			if tc.noSecret != "" && (strings.Contains(lb.String(), tc.noSecret) || err != nil && strings.Contains(err.Error(), tc.noSecret)) {
				t.Errorf("the password shows: err %v, log %q", err, lb.String())
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			h := c.Health()
			if c.Up() != tc.wantUp {
				t.Fatalf("Up() = %v, want %v (health %+v, log %q)", c.Up(), tc.wantUp, h, lb.String())
			}
			if tc.noSecret != "" && (strings.Contains(h.Error, tc.noSecret) || strings.Contains(h.Addr, tc.noSecret)) {
				t.Errorf("Health shows the password: %+v", h)
			}
			if !tc.wantUp && !strings.Contains(h.Error, tc.wantDown) {
				t.Errorf("down because %q, want it to say %q", h.Error, tc.wantDown)
			}
			if tc.wantWrite {
				ctx := context.Background()
				if err := c.PutBlob(ctx, "index", "open", []byte("written")); err != nil {
					t.Fatalf("PutBlob: %v", err)
				}
				if got, err := c.GetBlob(ctx, "index", "open"); err != nil || string(got) != "written" {
					t.Errorf("GetBlob: %q, %v", got, err)
				}
			}
		})
	}
}

func TestWriteMetrics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, _ := open(t, srv.URL(0), "pod-3", "m")
	ctx := context.Background()
	_ = c.PutBlob(ctx, "index", "d", []byte("v"))
	_, _ = c.GetBlob(ctx, "index", "d")
	_, _ = c.GetBlob(ctx, "index", "none")
	var b bytes.Buffer
	c.WriteMetrics(&b)
	for _, want := range []string{
		`toolsearch_cluster_redis_up{replica="pod-3"} 1`,
		`toolsearch_cluster_shared_reads_total{replica="pod-3",result="hit"} 1`,
		`toolsearch_cluster_shared_reads_total{replica="pod-3",result="miss"} 1`,
		`toolsearch_cluster_shared_writes_total{replica="pod-3"} 1`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

// TestOpenTLS connects to a real redis-server that speaks only TLS: with
// the CA that signed its certificate named in toolsearch.cluster.ca the
// replica joins (and its password still counts); without it, or over
// plain redis://, it stays down and says why; a CA file that is not one
// stops it at the start, naming the file.
func TestOpenTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t, "--requirepass", "tls-horse-battery")
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "notpem.txt")
	keyOnly := filepath.Join(dir, "key.pem")
	os.WriteFile(notPEM, []byte("tls-horse-battery is not a certificate\n"), 0o600)
	os.WriteFile(keyOnly, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	secure := "rediss://:tls-horse-battery@" + srv.Addr() + "/0"
	const pw = "tls-horse-battery"
	tests := []openCase{
		{name: "the CA named", cfg: config.Cluster{Redis: secure, CA: srv.CAFile, Replica: "a"}, wantUp: true, wantWrite: true},
		{name: "the system's CAs", cfg: config.Cluster{Redis: secure, Replica: "a"}, wantDown: "certificate"},
		{name: "the wrong password", cfg: config.Cluster{Redis: "rediss://:wrong-one-123@" + srv.Addr() + "/0", CA: srv.CAFile, Replica: "a"},
			wantDown: "WRONGPASS"},
		{name: "no TLS", cfg: config.Cluster{Redis: "redis://:tls-horse-battery@" + srv.Addr() + "/0", Replica: "a"}},
		{name: "a CA with a plain URL", cfg: config.Cluster{Redis: "redis://" + srv.Addr() + "/0", CA: srv.CAFile},
			wantErr: "is for a rediss:// (TLS) URL"},
		{name: "a CA file that is absent", cfg: config.Cluster{Redis: secure, CA: filepath.Join(dir, "absent.pem")},
			wantErr: "absent.pem"},
		{name: "a CA file that is not PEM", cfg: config.Cluster{Redis: secure, CA: notPEM}, wantErr: "notpem.txt: no PEM certificate"},
		{name: "a key where the CA goes", cfg: config.Cluster{Redis: secure, CA: keyOnly}, wantErr: `a PEM "PRIVATE KEY" block`},
		{name: "a folder where the CA goes", cfg: config.Cluster{Redis: secure, CA: dir}, wantErr: "not a regular file"},
	}
	for i := range tests {
		tests[i].noSecret = pw
	}
	runOpenCases(t, tests)
}
