// Package prom keeps the gateway's counters, gauges and histogram and
// writes them in the Prometheus text exposition format (version 0.0.4),
// with a few Go runtime (go_*) and process (process_*) metrics beside
// them. It holds what /metrics needs and no more: a full client library
// would cost the command more to build than everything else it serves.
package prom

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the media type of the text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry holds metric families in the order they were made.
type Registry struct {
	mu   sync.Mutex
	fams []*family
	// runtime says whether the Go runtime and process metrics are
	// written.
	runtime bool
}

// NewRegistry returns an empty registry; with runtime, every scrape also
// writes the Go runtime and process metrics.
func NewRegistry(runtime bool) *Registry { return &Registry{runtime: runtime} }

// family is one metric name: its series by label values.
type family struct {
	name, help, typ string
	labels          []string
	bounds          []float64 // histogram only

	mu     sync.Mutex
	series map[string]*series // by the label values joined with 0xff
}

// series is one set of label values and its value (a float64's bits), or
// a histogram's counts.
type series struct {
	values []string
	bits   atomic.Uint64
	hist   *histogram
}

func (r *Registry) add(name, help, typ string, labels []string, bounds []float64) *family {
	f := &family{name: name, help: help, typ: typ, labels: labels, bounds: bounds, series: map[string]*series{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.fams {
		if g.name == name {
			panic("prom: " + name + " is registered twice") // a programming error, caught by any test
		}
	}
	r.fams = append(r.fams, f)
	return f
}

// with returns the series of the label values, made at its first use.
func (f *family) with(values []string) *series {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("prom: %s takes %d label values, got %d", f.name, len(f.labels), len(values)))
	}
	key := strings.Join(values, "\xff")
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.series[key]
	if s == nil {
		s = &series{values: slices.Clone(values)}
		if f.typ == "histogram" {
			s.hist = &histogram{counts: make([]atomic.Uint64, len(f.bounds))}
		}
		f.series[key] = s
	}
	return s
}

// Counter is a value that only goes up.
type Counter struct{ s *series }

// Inc adds one.
func (c Counter) Inc() { c.Add(1) }

// Add adds v, which must not be negative.
func (c Counter) Add(v float64) {
	if v < 0 {
		return
	}
	addFloat(&c.s.bits, v)
}

// Value returns the count.
func (c Counter) Value() float64 { return math.Float64frombits(c.s.bits.Load()) }

// Gauge is a value that is set.
type Gauge struct{ s *series }

// Set sets the value.
func (g Gauge) Set(v float64) { g.s.bits.Store(math.Float64bits(v)) }

// Value returns the value.
func (g Gauge) Value() float64 { return math.Float64frombits(g.s.bits.Load()) }

func addFloat(bits *atomic.Uint64, v float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Counter registers a counter without labels.
func (r *Registry) Counter(name, help string) Counter {
	return Counter{r.add(name, help, "counter", nil, nil).with(nil)}
}

// Gauge registers a gauge without labels.
func (r *Registry) Gauge(name, help string) Gauge {
	return Gauge{r.add(name, help, "gauge", nil, nil).with(nil)}
}

// CounterVec is a counter per set of label values.
type CounterVec struct{ f *family }

// With returns the counter of the label values, in the order the labels
// were named.
func (v CounterVec) With(values ...string) Counter { return Counter{v.f.with(values)} }

// CounterVec registers a counter with labels.
func (r *Registry) CounterVec(name, help string, labels ...string) CounterVec {
	return CounterVec{r.add(name, help, "counter", labels, nil)}
}

// GaugeVec is a gauge per set of label values.
type GaugeVec struct{ f *family }

// With returns the gauge of the label values.
func (v GaugeVec) With(values ...string) Gauge { return Gauge{v.f.with(values)} }

// GaugeVec registers a gauge with labels.
func (r *Registry) GaugeVec(name, help string, labels ...string) GaugeVec {
	return GaugeVec{r.add(name, help, "gauge", labels, nil)}
}

// Histogram counts observations in buckets of upper bounds.
type Histogram struct {
	s      *series
	bounds []float64
}

type histogram struct {
	counts []atomic.Uint64 // per bound, not cumulative
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

// Histogram registers a histogram with the given bucket upper bounds, in
// increasing order (+Inf is implied).
func (r *Registry) Histogram(name, help string, bounds []float64) Histogram {
	if !slices.IsSorted(bounds) {
		panic("prom: " + name + ": bucket bounds out of order")
	}
	f := r.add(name, help, "histogram", nil, slices.Clone(bounds))
	return Histogram{s: f.with(nil), bounds: f.bounds}
}

// Observe counts one observation.
func (h Histogram) Observe(v float64) {
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		h.s.hist.counts[i].Add(1)
	}
	h.s.hist.count.Add(1)
	addFloat(&h.s.hist.sum, v)
}

// Handler serves the registry's text at GET.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		_ = r.WriteText(w)
	})
}

// WriteText writes every family, its series sorted by label values, in
// the text format; then the runtime metrics if the registry has them.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	fams := slices.Clone(r.fams)
	r.mu.Unlock()
	var b strings.Builder
	for _, f := range fams {
		f.write(&b)
	}
	if r.runtime {
		writeRuntime(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (f *family) write(b *strings.Builder) {
	f.mu.Lock()
	list := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		list = append(list, s)
	}
	f.mu.Unlock()
	if len(list) == 0 {
		return // a family with labels shows once it has a series, as in the client library
	}
	slices.SortFunc(list, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
	for _, s := range list {
		if s.hist == nil {
			sample(b, f.name, f.labels, s.values, "", "", math.Float64frombits(s.bits.Load()))
			continue
		}
		var cum uint64
		for i, bound := range f.bounds {
			cum += s.hist.counts[i].Load()
			sample(b, f.name+"_bucket", f.labels, s.values, "le", formatFloat(bound), float64(cum))
		}
		count := s.hist.count.Load()
		sample(b, f.name+"_bucket", f.labels, s.values, "le", "+Inf", float64(count))
		sample(b, f.name+"_sum", f.labels, s.values, "", "", math.Float64frombits(s.hist.sum.Load()))
		sample(b, f.name+"_count", f.labels, s.values, "", "", float64(count))
	}
}

// sample writes one line: the name, the labels sorted by name (and an
// extra one, le, for a bucket), the value.
func sample(b *strings.Builder, name string, labels, values []string, extra, extraValue string, v float64) {
	b.WriteString(name)
	if len(labels) > 0 || extra != "" {
		type pair struct{ k, v string }
		pairs := make([]pair, 0, len(labels)+1)
		for i, l := range labels {
			pairs = append(pairs, pair{l, values[i]})
		}
		slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
		if extra != "" {
			pairs = append(pairs, pair{extra, extraValue})
		}
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.k)
			b.WriteString(`="`)
			b.WriteString(escapeLabel(p.v))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
