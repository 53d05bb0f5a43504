package tracing

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// Kind says what a span stands for, as OTLP numbers it.
type Kind int

// The kinds of span the gateway makes.
const (
	KindInternal Kind = 1 // work inside the gateway
	KindServer   Kind = 2 // a request the gateway serves
	KindClient   Kind = 3 // a request the gateway makes
)

// StatusCode is the outcome of a span, as OTLP numbers it.
type StatusCode int

// The outcomes of a span.
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

// Status is the outcome of a span: its code, and the error's description.
type Status struct {
	Code        StatusCode
	Description string
}

// Span is one operation of a trace. Start it with Provider.Start; its
// methods are safe from any goroutine, and do nothing on a nil Span or a
// span that is not recorded (its trace is not sampled). Once ended a
// span does not change: its accessors are what an exporter reads.
type Span struct {
	sc     SpanContext
	parent SpanContext
	// p is the provider of a recorded span, nil for a span that records
	// nothing (unsampled, or a remote parent).
	p     *Provider
	name  string
	kind  Kind
	start time.Time

	mu      sync.Mutex
	ended   bool
	end     time.Time
	attrs   []Attr
	dropped int
	status  Status
}

// SpanContext returns the span's ids, flags and tracestate.
func (s *Span) SpanContext() SpanContext {
	if s == nil {
		return SpanContext{}
	}
	return s.sc
}

// Parent returns the span context of the span's parent, invalid for a
// root.
func (s *Span) Parent() SpanContext {
	if s == nil {
		return SpanContext{}
	}
	return s.parent
}

// IsRecording reports whether the span records what it is given: its
// trace is sampled and it has not ended.
func (s *Span) IsRecording() bool {
	if s == nil || s.p == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// SetAttributes sets attributes of the span: a key set twice keeps its
// last value; past the provider's bound on their number, new keys are
// dropped (and counted), and a string longer than its bound on a value
// is clipped.
func (s *Span) SetAttributes(attrs ...Attr) {
	if s == nil || s.p == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	for _, a := range attrs {
		a.Value = s.p.limit(a.Value)
		if i := slices.IndexFunc(s.attrs, func(b Attr) bool { return b.Key == a.Key }); i >= 0 {
			s.attrs[i] = a
		} else if len(s.attrs) < s.p.maxAttrs {
			s.attrs = append(s.attrs, a)
		} else {
			s.dropped++
		}
	}
}

// SetStatus sets the span's outcome. A description goes only with
// StatusError; StatusOK is final, and StatusUnset changes nothing.
func (s *Span) SetStatus(code StatusCode, description string) {
	if s == nil || s.p == nil || code == StatusUnset {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.status.Code == StatusOK {
		return
	}
	if code != StatusError {
		description = ""
	}
	s.status = Status{Code: code, Description: description}
}

// End ends the span and hands it to the provider's processor. Only the
// first End counts; it never waits for an exporter.
func (s *Span) End() {
	if s == nil || s.p == nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.end = time.Now()
	s.mu.Unlock()
	if proc := s.p.proc; proc != nil {
		proc.OnEnd(s)
	}
}

// Name returns the span's name.
func (s *Span) Name() string { return s.name }

// Kind returns the span's kind.
func (s *Span) Kind() Kind { return s.kind }

// StartTime returns when the span started.
func (s *Span) StartTime() time.Time { return s.start }

// EndTime returns when the span ended, the zero time before.
func (s *Span) EndTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// Attributes returns the span's attributes, in the order they were
// first set. The list is the span's own: the caller must not change it.
func (s *Span) Attributes() []Attr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attrs[:len(s.attrs):len(s.attrs)]
}

// DroppedAttributes returns how many attributes were dropped, past the
// bound on their number.
func (s *Span) DroppedAttributes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Status returns the span's outcome.
func (s *Span) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Resource returns what describes the process that made the span (nil
// for a span that records nothing).
func (s *Span) Resource() *Resource {
	if s.p == nil {
		return nil
	}
	return s.p.res
}

// Resource describes the process spans come from: service.name and the
// like.
type Resource struct {
	attrs     []Attr
	schemaURL string
}

// NewResource returns the resource of attrs, sorted by key; of a key
// given twice the last value is kept. schemaURL names the version of the
// semantic conventions the keys follow ("" for none).
func NewResource(schemaURL string, attrs ...Attr) *Resource {
	r := &Resource{schemaURL: schemaURL}
	for _, a := range attrs {
		if i := slices.IndexFunc(r.attrs, func(b Attr) bool { return b.Key == a.Key }); i >= 0 {
			r.attrs[i] = a
		} else {
			r.attrs = append(r.attrs, a)
		}
	}
	slices.SortFunc(r.attrs, func(a, b Attr) int { return cmp.Compare(a.Key, b.Key) })
	return r
}

// Attributes returns the resource's attributes, sorted by key. The list
// is the resource's own: the caller must not change it.
func (r *Resource) Attributes() []Attr {
	if r == nil {
		return nil
	}
	return r.attrs
}

// SchemaURL returns the schema of the resource's keys.
func (r *Resource) SchemaURL() string {
	if r == nil {
		return ""
	}
	return r.schemaURL
}

// Sampler decides whether a span starting under parent (invalid for a
// root) in trace id is recorded and exported.
type Sampler func(parent SpanContext, id TraceID) bool

// AlwaysSample samples every span.
func AlwaysSample(SpanContext, TraceID) bool { return true }

// NeverSample samples no span.
func NeverSample(SpanContext, TraceID) bool { return false }

// RatioSampler samples the share ratio (0 to 1) of traces, decided by
// the trace id alone so that every process that reads it decides alike:
// its last 8 bytes, as a number, against ratio of their range (the rule
// of the OpenTelemetry SDKs' TraceIDRatioBased sampler).
func RatioSampler(ratio float64) Sampler {
	switch {
	case ratio >= 1:
		return AlwaysSample
	case !(ratio > 0):
		return NeverSample
	}
	bound := uint64(ratio * (1 << 63))
	return func(_ SpanContext, id TraceID) bool {
		return binary.BigEndian.Uint64(id[8:])>>1 < bound
	}
}

// ParentBased follows the parent's sampling decision, and root's for a
// span without a parent.
func ParentBased(root Sampler) Sampler {
	return func(parent SpanContext, id TraceID) bool {
		if parent.IsValid() {
			return parent.IsSampled()
		}
		return root(parent, id)
	}
}

// SpanProcessor receives the spans of a provider as they end.
type SpanProcessor interface {
	// OnEnd takes an ended span; it must not block.
	OnEnd(s *Span)
	// Shutdown sends what the processor holds, within ctx.
	Shutdown(ctx context.Context) error
}

// ProviderOptions configure a Provider.
type ProviderOptions struct {
	// Sampler decides which traces are recorded; nil follows the parent,
	// and samples every root.
	Sampler Sampler
	// Processor receives the ended spans that were sampled; nil drops
	// them.
	Processor SpanProcessor
	// Resource describes the process in every span.
	Resource *Resource
	// MaxAttributes bounds the attributes of a span (DefaultMaxAttributes
	// when 0).
	MaxAttributes int
	// MaxAttributeBytes bounds a string attribute value, and each string
	// of a list, in bytes; 0 is no bound.
	MaxAttributeBytes int
}

// DefaultMaxAttributes is how many attributes a span holds, unless its
// provider says otherwise.
const DefaultMaxAttributes = 128

// Provider starts spans, samples them and hands those sampled to its
// processor when they end. Make it with NewProvider; it is safe from any
// goroutine.
type Provider struct {
	sample   Sampler
	proc     SpanProcessor
	res      *Resource
	maxAttrs int
	maxBytes int
	stopped  atomic.Bool

	mu  sync.Mutex
	rng *rand.ChaCha8 // ids: a cryptographically strong generator
}

// NewProvider returns a provider configured by o.
func NewProvider(o ProviderOptions) *Provider {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // it does not fail, crashing the program if it must
	p := &Provider{sample: o.Sampler, proc: o.Processor, res: o.Resource, maxAttrs: o.MaxAttributes,
		maxBytes: o.MaxAttributeBytes, rng: rand.NewChaCha8(seed)}
	if p.sample == nil {
		p.sample = ParentBased(AlwaysSample)
	}
	if p.maxAttrs <= 0 {
		p.maxAttrs = DefaultMaxAttributes
	}
	return p
}

// Start starts a span named name, a child of ctx's span (a root when it
// has none), and returns it with a ctx that carries it. A span of a
// trace that is not sampled, or of a provider shut down, records
// nothing but has ids of its own, to carry the trace on.
func (p *Provider) Start(ctx context.Context, name string, kind Kind) (context.Context, *Span) {
	parent := SpanContextFromContext(ctx)
	s := &Span{parent: parent}
	p.mu.Lock()
	if parent.IsValid() {
		s.sc.TraceID, s.sc.TraceState = parent.TraceID, parent.TraceState
	} else {
		for !s.sc.TraceID.IsValid() {
			binary.NativeEndian.PutUint64(s.sc.TraceID[:8], p.rng.Uint64())
			binary.NativeEndian.PutUint64(s.sc.TraceID[8:], p.rng.Uint64())
		}
	}
	for !s.sc.SpanID.IsValid() {
		binary.NativeEndian.PutUint64(s.sc.SpanID[:], p.rng.Uint64())
	}
	p.mu.Unlock()
	if !p.stopped.Load() && p.sample(parent, s.sc.TraceID) {
		s.sc.Flags = FlagsSampled
		s.p, s.name, s.kind, s.start = p, name, kind, time.Now()
	}
	return ContextWithSpan(ctx, s), s
}

// Resource returns the resource of the provider's spans.
func (p *Provider) Resource() *Resource { return p.res }

// Shutdown stops the provider: spans started later record nothing, and
// the processor sends what it holds, within ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	p.stopped.Store(true)
	if p.proc == nil {
		return nil
	}
	return p.proc.Shutdown(ctx)
}

// limit bounds a value's strings to the provider's bound on a value.
func (p *Provider) limit(v Value) Value {
	if p.maxBytes <= 0 {
		return v
	}
	switch v.typ {
	case TypeString:
		if len(v.s) > p.maxBytes {
			v.s = p.clip(v.s)
		}
	case TypeStringSlice:
		if slices.ContainsFunc(v.ss, func(s string) bool { return len(s) > p.maxBytes }) {
			ss := make([]string, len(v.ss))
			for i, s := range v.ss {
				ss[i] = s
				if len(s) > p.maxBytes {
					ss[i] = p.clip(s)
				}
			}
			v.ss = ss
		}
	}
	return v
}

// clip cuts s to the bound on a value: with "…" when there is room for
// it, valid UTF-8.
func (p *Provider) clip(s string) string {
	if p.maxBytes <= len("…") {
		return strings.ToValidUTF8(utf8cut.Prefix(s, p.maxBytes), "")
	}
	return clip(s, p.maxBytes)
}

// Recorder is a SpanProcessor that keeps every span in memory, for
// tests and for programs that read their own spans.
type Recorder struct {
	mu    sync.Mutex
	spans []*Span
}

// OnEnd keeps s.
func (r *Recorder) OnEnd(s *Span) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
}

// Shutdown does nothing: the spans stay readable.
func (r *Recorder) Shutdown(context.Context) error { return nil }

// Ended returns the spans ended so far, in the order they ended.
func (r *Recorder) Ended() []*Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}
