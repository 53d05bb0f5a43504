package prom

import (
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads the text format with the Prometheus project's own parser.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestWriteText checks each kind of metric as a Prometheus parser reads
// it: values, types, help, label escaping, and a histogram's cumulative
// buckets, sum and count.
func TestWriteText(t *testing.T) {
	t.Parallel()
	r := NewRegistry(false)
	c := r.Counter("t_requests_total", "Requests.\nTwo lines, a \\ too.")
	g := r.Gauge("t_open", "Open.")
	cv := r.CounterVec("t_calls_total", "Calls.", "server", "outcome")
	gv := r.GaugeVec("t_state", "State.", "state")
	r.CounterVec("t_unused_total", "Never used.", "x")
	h := r.Histogram("t_seconds", "Latency.", []float64{0.01, 0.1, 1})
	c.Inc()
	c.Add(2.5)
	c.Add(-4) // ignored: a counter only goes up
	g.Set(-3)
	cv.With(`we"ird\name`+"\n", "ok").Add(2)
	cv.With("a", "error").Inc()
	gv.With("ready").Set(1)
	for _, v := range []float64{0.005, 0.05, 0.05, 0.5, 7} {
		h.Observe(v)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	fams := parse(t, b.String())
	if _, ok := fams["t_unused_total"]; ok {
		t.Error("a family with labels and no series is written")
	}
	checks := []struct {
		name string
		typ  dto.MetricType
		want float64
		lbl  map[string]string
	}{
		{"t_requests_total", dto.MetricType_COUNTER, 3.5, nil},
		{"t_open", dto.MetricType_GAUGE, -3, nil},
		{"t_calls_total", dto.MetricType_COUNTER, 2, map[string]string{"server": `we"ird\name` + "\n", "outcome": "ok"}},
		{"t_calls_total", dto.MetricType_COUNTER, 1, map[string]string{"server": "a", "outcome": "error"}},
		{"t_state", dto.MetricType_GAUGE, 1, map[string]string{"state": "ready"}},
	}
	for _, ck := range checks {
		f := fams[ck.name]
		if f == nil || f.GetType() != ck.typ || f.GetHelp() == "" {
			t.Errorf("%s: family %v", ck.name, f)
			continue
		}
		found := false
		for _, m := range f.GetMetric() {
			got := labelsOf(m)
			if len(got) != len(ck.lbl) {
				continue
			}
			same := true
			for k, v := range ck.lbl {
				same = same && got[k] == v
			}
			if !same {
				continue
			}
			found = true
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if v != ck.want {
				t.Errorf("%s%v = %v, want %v", ck.name, ck.lbl, v, ck.want)
			}
		}
		if !found {
			t.Errorf("%s%v is missing", ck.name, ck.lbl)
		}
	}
	if got := fams["t_requests_total"].GetHelp(); got != "Requests.\nTwo lines, a \\ too." {
		t.Errorf("help read back as %q", got)
	}
	hist := fams["t_seconds"].GetMetric()[0].GetHistogram()
	wantCum := []uint64{1, 3, 4}
	for i, bk := range hist.GetBucket() {
		if math.IsInf(bk.GetUpperBound(), 1) {
			continue
		}
		if bk.GetCumulativeCount() != wantCum[i] {
			t.Errorf("bucket le=%v holds %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), wantCum[i])
		}
	}
	if hist.GetSampleCount() != 5 || math.Abs(hist.GetSampleSum()-7.605) > 1e-9 {
		t.Errorf("count %d sum %v, want 5 and 7.605", hist.GetSampleCount(), hist.GetSampleSum())
	}
	if i, j := strings.Index(b.String(), `outcome="error",server="a"`), strings.Index(b.String(), `outcome="ok"`); i < 0 || j < 0 || i > j {
		t.Errorf("labels are not in name order, or series not sorted:\n%s", b.String())
	}
}

// TestRuntimeMetrics checks that the handler serves the runtime and
// process metrics with the text format's media type.
func TestRuntimeMetrics(t *testing.T) {
	t.Parallel()
	r := NewRegistry(true)
	r.Counter("t_total", "T.").Inc()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Errorf("content type %q", ct)
	}
	fams := parse(t, rec.Body.String())
	for _, name := range []string{"t_total", "go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds", "process_resident_memory_bytes"} {
		f := fams[name]
		if f == nil {
			t.Errorf("%s is missing", name)
			continue
		}
		if v := f.GetMetric()[0].GetGauge().GetValue() + f.GetMetric()[0].GetCounter().GetValue(); v <= 0 {
			t.Errorf("%s = %v, want above zero", name, v)
		}
	}
}

// TestConcurrentUpdates checks that updates from many goroutines while
// scrapes run are all counted (run with -race).
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	r := NewRegistry(false)
	cv := r.CounterVec("t_total", "T.", "k")
	h := r.Histogram("t_seconds", "S.", []float64{1})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				cv.With([]string{"a", "b"}[i%2]).Inc()
				h.Observe(0.5)
			}
		}()
	}
	for range 10 {
		var b strings.Builder
		_ = r.WriteText(&b)
	}
	wg.Wait()
	if a, b := cv.With("a").Value(), cv.With("b").Value(); a != 4000 || b != 4000 {
		t.Errorf("counted %v and %v, want 4000 each", a, b)
	}
	if n := h.s.hist.count.Load(); n != 8000 {
		t.Errorf("histogram count %d, want 8000", n)
	}
}

// TestMisuse checks that registering a name twice, or a label count that
// does not match, is caught at once.
func TestMisuse(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(r *Registry){
		"twice":       func(r *Registry) { r.Counter("x", "X."); r.Gauge("x", "X.") },
		"label count": func(r *Registry) { r.CounterVec("x", "X.", "a", "b").With("a") },
		"bounds":      func(r *Registry) { r.Histogram("x", "X.", []float64{2, 1}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(NewRegistry(false))
		}()
	}
}
