package enrichment

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// clock is a settable time for budgets.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestBudgetLocal: a reservation is granted tool by tool while the
// day's budget holds, settling moves the spend both ways, the spend is in
// the state directory (a restart sees it), a new UTC day starts from zero,
// and a broken record starts from zero and is replaced.
func TestBudgetLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{t: time.Date(2026, 12, 3, 23, 30, 0, 0, time.UTC)}
	limit := config.EnrichBudget{Tools: 5, Tokens: 1000}
	newBudget := func() *budget {
		return &budget{limit: limit, rec: &recordFile{path: recordPath(dir)}, now: clk.now}
	}
	b := newBudget()
	n, day, spent := b.reserve(ctx, []int64{100, 100, 900, 10})
	if n != 2 || day != "2026-12-03" || spent != (config.EnrichBudget{Tools: 2, Tokens: 200}) {
		t.Fatalf("reserve = %d %s %+v; want 2 tools (the third does not fit the tokens, and none after it goes)", n, day, spent)
	}
	b.settle(ctx, day, config.EnrichBudget{Tools: -1, Tokens: 50})
	if _, s := b.spent(ctx, true); s != (config.EnrichBudget{Tools: 1, Tokens: 250}) {
		t.Errorf("after settling: %+v, want 1 tool and 250 tokens", s)
	}
	// A restart reads the spend back.
	b2 := newBudget()
	if d, s := b2.spent(ctx, true); d != "2026-12-03" || s != (config.EnrichBudget{Tools: 1, Tokens: 250}) {
		t.Errorf("a new budget on the same directory sees %s %+v", d, s)
	}
	if n, _, _ := b2.reserve(ctx, []int64{1, 1, 1, 1, 1, 1}); n != 4 {
		t.Errorf("the rest of the day's tools: granted %d, want 4", n)
	}
	if !b2.exhausted(config.EnrichBudget{Tools: 5}) || b2.exhausted(config.EnrichBudget{Tools: 4, Tokens: 999}) {
		t.Error("exhausted is wrong at the bounds")
	}
	// The next UTC day starts from zero; a late settle of the day before
	// changes nothing.
	clk.set(clk.now().Add(time.Hour))
	if d, s := b.spent(ctx, true); d != "2026-12-04" || s != (config.EnrichBudget{}) {
		t.Errorf("the next day: %s %+v, want nothing spent", d, s)
	}
	b.settle(ctx, "2026-12-03", config.EnrichBudget{Tools: 3, Tokens: 3})
	if n, _, s := b.reserve(ctx, []int64{10}); n != 1 || s != (config.EnrichBudget{Tools: 1, Tokens: 10}) {
		t.Errorf("the next day's reserve = %d %+v", n, s)
	}
	if got := b.remaining(config.EnrichBudget{Tools: 9, Tokens: 10}); got != (config.EnrichBudget{Tools: 0, Tokens: 990}) {
		t.Errorf("remaining %+v", got)
	}
	// The record is JSON written whole; a broken one starts from zero.
	if err := os.WriteFile(recordPath(dir), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, s := b.spent(ctx, true); s != (config.EnrichBudget{}) {
		t.Errorf("a broken record: %+v", s)
	}
	if n, _, _ := b.reserve(ctx, []int64{1}); n != 1 {
		t.Fatal("no grant over a broken record")
	}
	if r, err := loadRecord(recordPath(dir)); err != nil || r.Spent.Tools != 1 || r.Day != "2026-12-04" {
		t.Errorf("the record written over the broken one: %+v, %v", r, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only enrich.json", len(entries))
	}
}

// fakeCoordinator is a Coordinator in memory that can be down.
type fakeCoordinator struct {
	mu    sync.Mutex
	down  bool
	spend map[string]config.EnrichBudget
	calls int
}

var errFakeDown = errors.New("fake cluster down")

func (f *fakeCoordinator) TakeLeases(context.Context, string, []string, time.Duration) ([]string, []string, error) {
	return nil, nil, errFakeDown
}
func (f *fakeCoordinator) FinishLeases(context.Context, string, []string, time.Duration) error {
	return errFakeDown
}
func (f *fakeCoordinator) ReleaseLeases(context.Context, string, []string) error { return errFakeDown }

func (f *fakeCoordinator) ReserveSpend(_ context.Context, _, day string, limit config.EnrichBudget, costs []int64) (int, config.EnrichBudget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		return 0, config.EnrichBudget{}, errFakeDown
	}
	s, n := f.spend[day], 0
	for _, k := range costs {
		if s.Tools+1 > limit.Tools || s.Tokens+k > limit.Tokens {
			break
		}
		s.Tools++
		s.Tokens += k
		n++
	}
	f.spend[day] = s
	return n, s, nil
}

func (f *fakeCoordinator) AddSpend(_ context.Context, _, day string, d config.EnrichBudget) (config.EnrichBudget, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		return config.EnrichBudget{}, errFakeDown
	}
	s := f.spend[day]
	s.Tools, s.Tokens = max(0, s.Tools+d.Tools), max(0, s.Tokens+d.Tokens)
	f.spend[day] = s
	return s, nil
}

func (f *fakeCoordinator) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

// TestBudgetShared: with a cluster the spend is the cluster's (and
// mirrored in the state directory); while it is down the replica counts
// against the last total it saw plus its own, and adds its own to the
// cluster's when it is back.
func TestBudgetShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	coord := &fakeCoordinator{spend: map[string]config.EnrichBudget{"2026-12-03": {Tools: 3, Tokens: 300}}} // another replica's
	b := &budget{limit: config.EnrichBudget{Tools: 10, Tokens: 10_000}, rec: &recordFile{path: recordPath(dir)}, coord: coord, now: clk.now}
	if n, _, s := b.reserve(ctx, []int64{10, 10}); n != 2 || s != (config.EnrichBudget{Tools: 5, Tokens: 320}) {
		t.Fatalf("reserve = %d %+v, want the cluster's 3 tools plus 2", n, s)
	}
	if r := b.rec.load(); r.Spent != (Amount{Tools: 5, Tokens: 320}) {
		t.Errorf("the state directory's mirror: %+v", r.Spent)
	}
	coord.setDown(true)
	if n, _, s := b.reserve(ctx, []int64{5}); n != 1 || s != (config.EnrichBudget{Tools: 6, Tokens: 325}) {
		t.Errorf("reserve with the cluster down = %d %+v, want the mirror plus 1", n, s)
	}
	b.settle(ctx, "2026-12-03", config.EnrichBudget{Tokens: 5})
	coord.setDown(false)
	if n, _, s := b.reserve(ctx, []int64{1}); n != 1 || s != (config.EnrichBudget{Tools: 7, Tokens: 331}) {
		t.Errorf("after the cluster came back: %d %+v, want what was spent meanwhile added, and 1 more", n, s)
	}
	coord.mu.Lock()
	calls := coord.calls
	coord.mu.Unlock()
	// A status read within spendRefresh asks the cluster nothing.
	if _, s := b.spent(ctx, true); s.Tools != 7 {
		t.Errorf("spent %+v", s)
	}
	coord.mu.Lock()
	defer coord.mu.Unlock()
	if coord.calls != calls {
		t.Errorf("a fresh status asked the cluster %d times", coord.calls-calls)
	}
}
