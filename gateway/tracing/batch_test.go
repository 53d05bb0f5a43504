package tracing

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeExporter records the batches it is given; while block is open an
// export waits for it (or for its ctx).
type fakeExporter struct {
	mu       sync.Mutex
	batches  [][]string
	shutdown bool
	block    chan struct{}
	exported chan int
	fail     error
}

func newFakeExporter() *fakeExporter {
	return &fakeExporter{exported: make(chan int, 100)}
}

func (f *fakeExporter) ExportSpans(ctx context.Context, spans []*Span) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	f.mu.Lock()
	f.batches = append(f.batches, names)
	f.mu.Unlock()
	f.exported <- len(spans)
	return f.fail
}

func (f *fakeExporter) Shutdown(context.Context) error {
	f.mu.Lock()
	f.shutdown = true
	f.mu.Unlock()
	return nil
}

func (f *fakeExporter) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(f.batches))
	for i, b := range f.batches {
		out[i] = len(b)
	}
	return out
}

// endSpans starts and ends n spans of p.
func endSpans(p *Provider, n int) {
	for range n {
		_, s := p.Start(context.Background(), "s", KindInternal)
		s.End()
	}
}

// TestBatcherBatches: a full batch goes at once, a partial one after the
// interval, and Shutdown sends the rest and shuts the exporter down.
func TestBatcherBatches(t *testing.T) {
	t.Parallel()
	exp := newFakeExporter()
	b := NewBatcher(exp, BatchOptions{MaxQueue: 100, MaxBatch: 4, Interval: 50 * time.Millisecond})
	p := NewProvider(ProviderOptions{Processor: b})
	endSpans(p, 9)
	// Two full batches go without waiting for the interval, the ninth
	// span after it.
	for _, want := range []int{4, 4, 1} {
		select {
		case n := <-exp.exported:
			if n != want {
				t.Fatalf("a batch of %d, want %d (batches %v)", n, want, exp.sizes())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no batch of %d was exported (batches %v)", want, exp.sizes())
		}
	}
	endSpans(p, 3)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sizes := exp.sizes()
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total != 12 || !exp.shutdown {
		t.Errorf("batches %v (shut down: %v), want 12 spans in all and the exporter shut down", sizes, exp.shutdown)
	}
	endSpans(p, 1)
	if b.Dropped() != 0 {
		t.Errorf("%d spans dropped: a provider shut down hands no span on", b.Dropped())
	}
}

// TestBatcherDrops: while the exporter is stuck, ending spans never waits,
// at most the queue and one batch are held, the rest are dropped and
// counted, and the drop is reported.
func TestBatcherDrops(t *testing.T) {
	t.Parallel()
	exp := newFakeExporter()
	exp.block = make(chan struct{})
	var mu sync.Mutex
	var reports []error
	b := NewBatcher(exp, BatchOptions{MaxQueue: 8, MaxBatch: 2, Interval: time.Hour, OnError: func(err error) {
		mu.Lock()
		reports = append(reports, err)
		mu.Unlock()
	}})
	p := NewProvider(ProviderOptions{Processor: b})
	endSpans(p, 2) // the batch that gets stuck
	for len(b.queue) > 0 {
		time.Sleep(time.Millisecond)
	}
	endSpans(p, 100) // never blocks, whatever the count
	if b.Dropped() != 100-8 {
		t.Errorf("%d dropped, want %d: the queue holds 8", b.Dropped(), 100-8)
	}
	close(exp.block)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range exp.sizes() {
		total += n
	}
	if total != 10 {
		t.Errorf("%d spans exported, want 10 (a batch of 2 and the queue of 8)", total)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 || !strings.Contains(reports[0].Error(), "92 spans dropped") {
		t.Errorf("reports %v, want the 92 spans dropped", reports)
	}
}

// TestBatcherTimeouts: an export that takes too long is cut at the export
// timeout and reported; Shutdown gives up when its ctx ends.
func TestBatcherTimeouts(t *testing.T) {
	t.Parallel()
	exp := newFakeExporter()
	exp.block = make(chan struct{}) // never opened: every export hangs
	errs := make(chan error, 10)
	b := NewBatcher(exp, BatchOptions{MaxBatch: 1, ExportTimeout: 20 * time.Millisecond, OnError: func(err error) { errs <- err }})
	p := NewProvider(ProviderOptions{Processor: b})
	endSpans(p, 1)
	select {
	case err := <-errs:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("reported %v, want the export's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hung export was never cut")
	}
	_ = p.Shutdown(context.Background())

	// An export that would take an hour is cut when Shutdown gives up.
	b = NewBatcher(exp, BatchOptions{MaxBatch: 1, ExportTimeout: time.Hour})
	p = NewProvider(ProviderOptions{Processor: b})
	endSpans(p, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want it to give up at its deadline", err)
	}
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Error("the Batcher's goroutine did not end after Shutdown gave up")
	}
}

// TestBatcherReportsFailures: a failed export is reported.
func TestBatcherReportsFailures(t *testing.T) {
	t.Parallel()
	exp := newFakeExporter()
	exp.fail = errors.New("collector said no")
	errs := make(chan error, 10)
	b := NewBatcher(exp, BatchOptions{OnError: func(err error) { errs <- err }})
	p := NewProvider(ProviderOptions{Processor: b})
	endSpans(p, 1)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != exp.fail {
		t.Errorf("reported %v, want the exporter's error", err)
	}
}
