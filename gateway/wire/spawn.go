package wire

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Starting a stdio server is a burst of CPU (a runtime to load, a program
// to read), then mostly waiting. A gateway that spawns a hundred servers at
// once has a hundred processes wanting the CPU together: the system shares
// it out thread by thread, so for as long as the burst lasts the gateway's
// own threads get a hundredth of it, and /healthz or a tools/list waits
// for its turn for a tenth of a second or more. So only a few servers are
// spawned at once (spawnSlots): each holds its slot until it answers
// initialize, exits, or spawnHold has passed, whichever comes first. A
// server that takes seconds to answer holds its slot for spawnHold only,
// so slow servers never queue behind one another for long; fast ones go
// through as quickly as the CPU lets them anyway.

// spawnHold is the longest a starting server holds its slot.
var spawnHold = 100 * time.Millisecond

// spawnSlots is how many stdio servers may be in their first moments at
// once: one per CPU the gateway uses and one more (one is often waiting
// for its program to be read), at least three. On two CPUs, against a
// fleet of 113 servers, two per CPU left /healthz a p90 of 61-95 ms during
// start; one more than the CPUs, 43-48 ms, for about the same time to a
// complete index; one per CPU, 25-28 ms, but a start up to 0.6 s longer.
func spawnSlots() int { return max(3, runtime.GOMAXPROCS(0)+1) }

// SpawnSlots are the slots stdio servers are spawned in: a server holds
// one for its first moments (see above).
type SpawnSlots struct {
	taken chan struct{} // a token for each slot held
}

// NewSpawnSlots returns n slots, or, for n <= 0, one per CPU the gateway
// uses and one more, at least three.
func NewSpawnSlots(n int) *SpawnSlots {
	if n <= 0 {
		n = spawnSlots()
	}
	return &SpawnSlots{taken: make(chan struct{}, n)}
}

// Take waits for a slot to spawn a server in, or for ctx to end. The
// returned release gives the slot back (at most once; it is given back by
// itself after spawnHold).
func (s *SpawnSlots) Take(ctx context.Context) (release func(), err error) {
	select {
	case s.taken <- struct{}{}:
	case <-ctx.Done():
		return func() {}, ctx.Err()
	}
	var once sync.Once
	give := func() { once.Do(func() { <-s.taken }) }
	timer := time.AfterFunc(spawnHold, give)
	return func() {
		timer.Stop()
		give()
	}, nil
}
