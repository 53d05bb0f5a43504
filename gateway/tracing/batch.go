package tracing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Exporter sends ended spans somewhere (package otlp posts them to an
// OTLP collector).
type Exporter interface {
	// ExportSpans sends spans, within ctx. It must not keep the slice
	// once it returns.
	ExportSpans(ctx context.Context, spans []*Span) error
	// Shutdown releases the exporter; later exports fail.
	Shutdown(ctx context.Context) error
}

// BatchOptions configure a Batcher; a field left zero takes the default
// named beside it.
type BatchOptions struct {
	// MaxQueue is how many ended spans wait to be sent; past it, spans
	// are dropped (DefaultMaxQueue).
	MaxQueue int
	// MaxBatch is how many spans one export sends at most
	// (DefaultMaxBatch).
	MaxBatch int
	// Interval is how long a span waits before it is sent, when no batch
	// fills (DefaultInterval).
	Interval time.Duration
	// ExportTimeout bounds one export (DefaultExportTimeout).
	ExportTimeout time.Duration
	// OnError is told of each failed export and of spans dropped; nil
	// ignores them.
	OnError func(error)
}

// The defaults of BatchOptions (those of the OpenTelemetry SDKs' batch
// span processor).
const (
	DefaultMaxQueue      = 2048
	DefaultMaxBatch      = 512
	DefaultInterval      = 5 * time.Second
	DefaultExportTimeout = 30 * time.Second
)

// Batcher is a SpanProcessor that sends ended spans to an exporter in
// batches, from a goroutine of its own: a batch goes when it is full or
// when Interval has passed, and what is left goes on Shutdown. Ending a
// span never waits: while the exporter is slow the spans wait in a
// bounded queue, and when it is full more are dropped and counted.
type Batcher struct {
	exp     Exporter
	o       BatchOptions
	queue   chan *Span
	dropped atomic.Uint64
	stopped atomic.Bool

	ctx    context.Context // ends when Shutdown gives up
	cancel context.CancelFunc
	once   sync.Once
	stop   chan context.Context
	done   chan struct{}
}

// NewBatcher returns a Batcher sending to exp, and starts its goroutine;
// Shutdown ends it.
func NewBatcher(exp Exporter, o BatchOptions) *Batcher {
	if o.MaxQueue <= 0 {
		o.MaxQueue = DefaultMaxQueue
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	o.MaxBatch = min(o.MaxBatch, o.MaxQueue)
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.ExportTimeout <= 0 {
		o.ExportTimeout = DefaultExportTimeout
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	b := &Batcher{exp: exp, o: o, queue: make(chan *Span, o.MaxQueue), stop: make(chan context.Context, 1), done: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	go b.run()
	return b
}

// OnEnd queues s to be sent, or drops it when the queue is full or the
// Batcher shut down.
func (b *Batcher) OnEnd(s *Span) {
	if b.stopped.Load() {
		b.dropped.Add(1)
		return
	}
	select {
	case b.queue <- s:
	default:
		b.dropped.Add(1)
	}
}

// Dropped returns how many spans were dropped so far.
func (b *Batcher) Dropped() uint64 { return b.dropped.Load() }

// Shutdown sends the spans queued and shuts the exporter down, within
// ctx; when ctx ends first, the export under way is cancelled and the
// rest dropped. Later spans are dropped.
func (b *Batcher) Shutdown(ctx context.Context) error {
	b.once.Do(func() {
		b.stopped.Store(true)
		b.stop <- ctx
	})
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		b.cancel()
		return fmt.Errorf("tracing: sending the last spans: %w", ctx.Err())
	}
}

// run batches the queue's spans and exports them, until Shutdown.
func (b *Batcher) run() {
	defer close(b.done)
	defer b.cancel()
	batch := make([]*Span, 0, b.o.MaxBatch)
	var reported uint64
	timer := time.NewTimer(b.o.Interval)
	defer timer.Stop()
	flush := func(ctx context.Context) {
		if len(batch) > 0 {
			ectx, cancel := context.WithTimeout(ctx, b.o.ExportTimeout)
			if err := b.exp.ExportSpans(ectx, batch); err != nil {
				b.o.OnError(err)
			}
			cancel()
			clear(batch) // let the spans go
			batch = batch[:0]
		}
		if d := b.dropped.Load(); d > reported {
			b.o.OnError(fmt.Errorf("tracing: %d spans dropped: %d were waiting to be sent", d-reported, b.o.MaxQueue))
			reported = d
		}
		timer.Reset(b.o.Interval)
	}
	for {
		select {
		case s := <-b.queue:
			if batch = append(batch, s); len(batch) == b.o.MaxBatch {
				flush(b.ctx)
			}
		case <-timer.C:
			flush(b.ctx)
		case ctx := <-b.stop:
			// The last spans: under Shutdown's ctx, and b.ctx, which
			// ends if Shutdown stops waiting.
			ctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(b.ctx, cancel)
			for drained := false; !drained; {
				select {
				case s := <-b.queue:
					if batch = append(batch, s); len(batch) == b.o.MaxBatch {
						flush(ctx)
					}
				default:
					drained = true
				}
			}
			flush(ctx)
			if err := b.exp.Shutdown(ctx); err != nil {
				b.o.OnError(err)
			}
			stop()
			cancel()
			return
		}
	}
}
