package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestSubscriptionsOutliveTheirConnection: a replica's subscriptions
// carry on when its pub/sub connection is lost, the server closing it or
// Redis restarting: the replica connects again and subscribes anew, and
// messages published after that reach it.
func TestSubscriptionsOutliveTheirConnection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(srv *redistest.Server) error
	}{
		{name: "the server closes the connection", lose: func(srv *redistest.Server) error {
			_, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub")
			return err
		}},
		{name: "Redis restarts", lose: func(srv *redistest.Server) error {
			srv.Kill()
			srv.Restart()
			return nil
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			prefix := fmt.Sprint("ps", i)
			a, _ := open(t, srv.URL(0), "a", prefix)
			b, _ := open(t, srv.URL(0), "b", prefix)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go a.Run(ctx)
			go b.Run(ctx)
			msgs, stop, err := b.SubscribeStream(ctx, "S1")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			publishUntilHeard(t, a, msgs, "before")
			if err := tc.lose(srv); err != nil {
				t.Fatal(err)
			}
			publishUntilHeard(t, a, msgs, "after")
		})
	}
}

// publishUntilHeard publishes text on session S1's stream from a until
// it comes on msgs (a SUBSCRIBE may still be on its way, Redis may be
// coming back), for at most 20 s.
func publishUntilHeard(t *testing.T, a *Cluster, msgs <-chan []byte, text string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _ = a.PublishStream(context.Background(), "S1", []byte(text))
		select {
		case m := <-msgs:
			if string(m) != text {
				t.Fatalf("received %q, want %q", m, text)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not reach the subscribed replica within 20s", text)
		}
	}
}

// TestSilentConnectionIsReplaced: pings keep an idle pub/sub connection
// (no reconnection while nothing is published), and a connection whose
// network goes silent, dropping everything but closing nothing, is taken
// for dead once a ping goes unanswered, and replaced.
func TestSilentConnectionIsReplaced(t *testing.T) {
	oldEvery, oldWait := subPingEvery, subPingWait
	subPingEvery, subPingWait = 200*time.Millisecond, 800*time.Millisecond
	t.Cleanup(func() { subPingEvery, subPingWait = oldEvery, oldWait })
	srv := redistest.Start(t)
	px := newSilentProxy(t, srv.Addr())
	a, _ := open(t, srv.URL(0), "a", "quiet")
	b, _ := open(t, "redis://"+px.ln.Addr().String()+"/0", "b", "quiet") // subscribes through the proxy
	ctx := context.Background()
	msgs, stop, err := b.SubscribeStream(ctx, "S1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	publishUntilHeard(t, a, msgs, "before")
	first := pubsubClients(t, srv)
	time.Sleep(3 * (subPingEvery + subPingWait)) // idle, but pinged
	if now := pubsubClients(t, srv); now != first {
		t.Fatalf("an idle subscription was connected again: %s, then %s", first, now)
	}
	px.silence()
	publishUntilHeard(t, a, msgs, "after")
	if now := pubsubClients(t, srv); now == first {
		t.Errorf("still on the silenced connection %s", first)
	}
}

// pubsubClients names the server's pub/sub clients by their ids.
func pubsubClients(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	list, err := redis.String(srv.Do("CLIENT", "LIST", "TYPE", "pubsub"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		id, _, _ := strings.Cut(line, " ")
		ids = append(ids, id)
	}
	return strings.Join(ids, ",")
}

// silentProxy is a TCP proxy on loopback whose connections silence can
// make drop everything they carry while staying open, as a network that
// loses packets does. Connections made after that carry on.
type silentProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	quiet []*atomic.Bool
	conns []net.Conn
}

func newSilentProxy(t *testing.T, target string) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln}
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			quiet := &atomic.Bool{}
			p.mu.Lock()
			p.quiet = append(p.quiet, quiet)
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go pipeUnlessQuiet(up, c, quiet)
			go pipeUnlessQuiet(c, up, quiet)
		}
	}()
	return p
}

// silence makes the connections open now drop what they carry.
func (p *silentProxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.quiet {
		q.Store(true)
	}
}

// pipeUnlessQuiet copies from src to dst, dropping what it reads once
// quiet is set; when either side ends it closes both.
func pipeUnlessQuiet(dst, src net.Conn, quiet *atomic.Bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !quiet.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
