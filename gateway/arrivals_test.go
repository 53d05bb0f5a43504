package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// arrivalWords are the words made-up tool descriptions are drawn from.
var arrivalWords = strings.Fields(`create update delete list get search find archive export import send
	read write issue repository branch commit message channel user team project ticket invoice payment order
	customer calendar event meeting file folder document page record report dashboard metric alert log query
	table row column database schema job run deployment service cluster node pod secret key token webhook`)

// fleetManifests makes, for each of n servers, a manifest of tools
// made-up definitions, each with a description of a few dozen words and a
// schema of three properties.
func fleetManifests(n, tools int) []*upstream.Manifest {
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func() string { return arrivalWords[rnd.IntN(len(arrivalWords))] }
	out := make([]*upstream.Manifest, n)
	for i := range out {
		m := &upstream.Manifest{Key: fmt.Sprintf("s%03d", i)}
		for j := range tools {
			desc := make([]string, 30+rnd.IntN(30))
			for k := range desc {
				desc[k] = word()
			}
			def := map[string]any{
				"name":        fmt.Sprintf("%s_%s_%d", word(), word(), j),
				"description": strings.Join(desc, " ") + ".",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
					word():         map[string]any{"type": "string", "description": word() + " " + word()},
					word() + "_id": map[string]any{"type": "string"},
					"limit":        map[string]any{"type": "integer"},
				}},
			}
			raw, err := json.Marshal(def)
			if err != nil {
				panic(err)
			}
			m.Tools = append(m.Tools, raw)
		}
		out[i] = m
	}
	return out
}

// fleetGateway is a gateway configured with a server per manifest (never
// started: their manifests are published as if they had listed them),
// telling feed.
func fleetGateway(tb testing.TB, ms []*upstream.Manifest, feed Feed) *Gateway {
	tb.Helper()
	servers := map[string]any{}
	for _, m := range ms {
		servers[m.Key] = map[string]any{"command": "never-started"}
	}
	cfg, err := config.Load(writeConfig(tb, servers, map[string]any{"exposure": "search", "stateDir": tb.TempDir()}))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := New(cfg, Options{Feed: feed})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// arriveAll publishes every manifest at once, each from its own goroutine
// as the servers' starts do, each server made ready once published; check,
// when set, runs as each publish returns.
func arriveAll(tb testing.TB, g *Gateway, ms []*upstream.Manifest, check func(key string)) {
	var wg sync.WaitGroup
	for _, m := range ms {
		u := g.ups()[m.Key]
		// Each publish keeps what it is given, as a server's listing does.
		mm := &upstream.Manifest{Key: m.Key, Tools: append(m.Tools[:0:0], m.Tools...)}
		wg.Go(func() {
			if err := g.publish(tb.Context(), u, mm, true); err != nil {
				tb.Error(err)
				return
			}
			if check != nil {
				check(m.Key)
			}
			u.SetState(StateReady, nil)
		})
	}
	wg.Wait()
}

// TestArrivalsTogether: servers whose lists arrive at once are each
// searchable when their publish returns, and all of them are in the
// catalog, the index and the names once every publish has.
func TestArrivalsTogether(t *testing.T) {
	t.Parallel()
	ms := fleetManifests(24, 12)
	g := fleetGateway(t, ms, &serversFeed{})
	arriveAll(t, g, ms, func(key string) {
		v := g.cur.Load()
		srv, ok := v.snap.Server(key)
		if !ok || len(srv.Tools) != 12 {
			t.Errorf("server %s: not in the catalog once published", key)
			return
		}
		res, err := g.Search(context.Background(), "select:"+srv.Tools[0].WireName(), 5)
		if err != nil || len(res.Hits) != 1 || res.Hits[0].Tool != srv.Tools[0] {
			t.Errorf("server %s: select of its first tool found %v (%v) once published", key, res.Hits, err)
		}
	})
	v := g.cur.Load()
	want := 0
	for _, m := range ms {
		want += len(m.Tools)
		if _, ok := v.tokens[m.Key]; !ok {
			t.Errorf("server %s: no token count in the view", m.Key)
		}
	}
	got := 0
	for _, s := range v.snap.Servers() {
		if s.Key != "builtin" {
			got += len(s.Tools)
		}
	}
	if got != want || v.index.Len() < want {
		t.Errorf("the catalog holds %d tools and the index %d, want %d", got, v.index.Len(), want)
	}
	for _, m := range ms {
		srv, _ := v.snap.Server(m.Key)
		for _, tool := range srv.Tools {
			if v.names.tools[tool] == "" {
				t.Fatalf("tool %s has no exposed name", tool.ID())
			}
		}
	}
}

// BenchmarkFleetArrivals publishes the lists of 113 servers of 32 made-up
// tools each (about the shared fleet) at once, each from its own
// goroutine, as a gateway's start does: catalog, index, names and session
// sync, and the feed of a dashboard. ns/op is one whole start.
func BenchmarkFleetArrivals(b *testing.B) {
	for _, n := range []int{16, 113} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			ms := fleetManifests(n, 32)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				g := fleetGateway(b, ms, &serversFeed{})
				b.StartTimer()
				arriveAll(b, g, ms, nil)
			}
		})
	}
}

// TestTakeTurn holds servers' list preparation to one at a time: a second
// server waits while the first holds the turn, goes on once it is given
// back or its lease ends, and a giveBack after the lease ended does not
// free the turn its next holder took; a wait whose context ends takes
// nothing and gives nothing back.
func TestTakeTurn(t *testing.T) {
	t.Parallel()
	t.Run("one at a time", func(t *testing.T) {
		t.Parallel()
		a := arrivals{turn: make(chan struct{}, 1), lease: time.Minute}
		var mu sync.Mutex
		active, most := 0, 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				giveBack := a.takeTurn(t.Context())
				mu.Lock()
				active++
				most = max(most, active)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				active--
				mu.Unlock()
				giveBack()
				giveBack() // a second call does nothing
			})
		}
		wg.Wait()
		if most != 1 {
			t.Fatalf("%d servers held the turn at once, want 1", most)
		}
		wantHeld(t, &a, false, "after every server gave it back")
	})
	t.Run("the lease passes it on", func(t *testing.T) {
		t.Parallel()
		a := arrivals{turn: make(chan struct{}, 1), lease: 20 * time.Millisecond}
		slow := a.takeTurn(t.Context()) // a server slow to answer: not given back
		a.lease = time.Minute           // the next holder keeps it until it gives it back
		next := make(chan func())
		go func() { next <- a.takeTurn(t.Context()) }()
		var giveNext func()
		select {
		case giveNext = <-next:
		case <-time.After(30 * time.Second):
			t.Fatal("the next server never got the turn while the first held it past its lease")
		}
		slow() // late: must not free the turn the next server holds
		wantHeld(t, &a, true, "after a giveBack that came once the lease had ended")
		giveNext()
		wantHeld(t, &a, false, "after its holder gave it back")
	})
	t.Run("a wait cut short", func(t *testing.T) {
		t.Parallel()
		a := arrivals{turn: make(chan struct{}, 1), lease: time.Minute}
		held := a.takeTurn(t.Context())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		a.takeTurn(ctx)() // returns at once; gives back nothing
		wantHeld(t, &a, true, "after a wait whose context ended")
		held()
		wantHeld(t, &a, false, "after its holder gave it back")
	})
	t.Run("no turn", func(t *testing.T) {
		t.Parallel()
		var a arrivals // a gateway not made by New
		a.takeTurn(t.Context())()
	})
}

// wantHeld fails t unless the turn of a is held (or free) as held says.
func wantHeld(t *testing.T, a *arrivals, held bool, when string) {
	t.Helper()
	if got := len(a.turn) == 1; got != held {
		t.Fatalf("the turn is held: %v %s, want %v", got, when, held)
	}
}
