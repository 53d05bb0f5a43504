package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// TestLeases: a lease is taken by one replica at a time; the holder may
// take it again, mark it done (the others see it done) or give it up
// (another takes it); a lease not renewed expires.
func TestLeases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "lz")
	b, _ := open(t, srv.URL(0), "b", "lz")
	ctx := context.Background()
	take := func(c *Cluster, ttl time.Duration, names ...string) (taken, done []string) {
		t.Helper()
		taken, done, err := c.TakeLeases(ctx, "enrich", names, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return taken, done
	}
	if taken, _ := take(a, time.Hour, "x", "y"); !slices.Equal(taken, []string{"x", "y"}) {
		t.Fatalf("a took %v, want x and y", taken)
	}
	if taken, done := take(b, time.Hour, "x", "y", "z"); !slices.Equal(taken, []string{"z"}) || len(done) != 0 {
		t.Errorf("b took %v (done %v), want only z", taken, done)
	}
	if taken, _ := take(a, time.Hour, "x"); !slices.Equal(taken, []string{"x"}) {
		t.Errorf("the holder taking its lease again got %v", taken)
	}
	if err := a.FinishLeases(ctx, "enrich", []string{"x", "z"}, time.Hour); err != nil { // z is b's: untouched
		t.Fatal(err)
	}
	if taken, done := take(b, time.Hour, "x", "y"); len(taken) != 0 || !slices.Equal(done, []string{"x"}) {
		t.Errorf("b took %v, saw done %v; want nothing taken and x done", taken, done)
	}
	if err := a.ReleaseLeases(ctx, "enrich", []string{"y"}); err != nil {
		t.Fatal(err)
	}
	if taken, _ := take(b, time.Hour, "y"); !slices.Equal(taken, []string{"y"}) {
		t.Errorf("after a gave y up, b took %v", taken)
	}
	if taken, _ := take(a, 100*time.Millisecond, "short"); len(taken) != 1 {
		t.Fatal("a did not take a free lease")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if taken, _ := take(b, time.Hour, "short"); len(taken) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lease of 100ms was still held after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := a.TakeLeases(ctx, "enrich", []string{"a:b"}, time.Hour); err == nil || !strings.Contains(err.Error(), "cannot name") {
		t.Errorf("a name with a colon: %v", err)
	}
	// Replicas asking at once for the same names: each is taken once.
	names := make([]string, 60)
	for i := range names {
		names[i] = fmt.Sprintf("n%02d", i)
	}
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			taken, _, err := c.TakeLeases(ctx, "race", names, time.Hour)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, n := range taken {
				count[n]++
			}
		})
	}
	wg.Wait()
	for _, n := range names {
		// A replica's two callers share its owner name, so a name may
		// count twice on one replica, never on both.
		if count[n] < 1 || count[n] > 4 {
			t.Errorf("%s taken %d times", n, count[n])
		}
	}
	ta, _, _ := a.TakeLeases(ctx, "race", names, time.Hour)
	tb, _, _ := b.TakeLeases(ctx, "race", names, time.Hour)
	if len(ta)+len(tb) != len(names) {
		t.Errorf("a holds %d and b %d of %d names: want every one held by exactly one", len(ta), len(tb), len(names))
	}
}

// TestSpend: reservations are granted in order while they fit the limit,
// replicas reserving at once never pass it together, and settling moves
// the spend both ways without going below zero.
func TestSpend(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, _ := open(t, srv.URL(0), "a", "sp")
	b, _ := open(t, srv.URL(0), "b", "sp")
	ctx := context.Background()
	limit := config.EnrichBudget{Tools: 5, Tokens: 1000}
	n, spent, err := a.ReserveSpend(ctx, "enrich", "2026-12-03", limit, []int64{100, 100, 100})
	if err != nil || n != 3 || spent != (config.EnrichBudget{Tools: 3, Tokens: 300}) {
		t.Fatalf("reserve = %d, %+v, %v", n, spent, err)
	}
	// The next grant stops at the first tool that does not fit.
	n, spent, err = b.ReserveSpend(ctx, "enrich", "2026-12-03", limit, []int64{600, 200, 50})
	if err != nil || n != 1 || spent != (config.EnrichBudget{Tools: 4, Tokens: 900}) {
		t.Fatalf("second reserve = %d, %+v, %v", n, spent, err)
	}
	n, _, _ = b.ReserveSpend(ctx, "enrich", "2026-12-03", limit, []int64{200})
	if n != 0 {
		t.Errorf("a reservation over the token limit was granted")
	}
	// Another day is another budget.
	if n, spent, _ := a.ReserveSpend(ctx, "enrich", "2026-12-04", limit, []int64{1}); n != 1 || spent.Tools != 1 {
		t.Errorf("the next day's reserve = %d, %+v", n, spent)
	}
	if got, err := a.AddSpend(ctx, "enrich", "2026-12-03", config.EnrichBudget{Tools: -1, Tokens: -5000}); err != nil || got != (config.EnrichBudget{Tools: 3, Tokens: 0}) {
		t.Errorf("settle = %+v, %v; want 3 tools and 0 tokens", got, err)
	}
	if _, _, err := a.ReserveSpend(ctx, "enrich", "tomorrow", limit, []int64{1}); err == nil {
		t.Error("a day that is not YYYY-MM-DD was accepted")
	}
	// Many reservations at once from two replicas: never past the limit.
	big := config.EnrichBudget{Tools: 50, Tokens: 1 << 40}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := range 16 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			n, _, err := c.ReserveSpend(ctx, "race", "2026-12-03", big, []int64{1, 1, 1, 1, 1, 1, 1})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			granted += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if granted != 50 {
		t.Errorf("granted %d tools under a limit of 50 (asked 112)", granted)
	}
}
