package prom

import (
	"fmt"
	"runtime/metrics"
	"strings"
	"time"
)

// started is when the process began, near enough: when this package was
// initialised.
var started = time.Now()

// runtimeSamples are the Go runtime metrics written, each with the
// runtime/metrics name it is read from.
var runtimeSamples = []struct {
	name, typ, help, from string
}{
	{"go_goroutines", "gauge", "Number of goroutines that currently exist.", "/sched/goroutines:goroutines"},
	{"go_memstats_heap_alloc_bytes", "gauge", "Bytes of allocated heap objects.", "/memory/classes/heap/objects:bytes"},
	{"go_memstats_sys_bytes", "gauge", "Bytes of memory obtained from the system.", "/memory/classes/total:bytes"},
	{"go_gc_cycles_total", "counter", "Completed garbage collection cycles.", "/gc/cycles/total:gc-cycles"},
	{"go_sched_gomaxprocs_threads", "gauge", "The current runtime.GOMAXPROCS setting.", "/sched/gomaxprocs:threads"},
}

// writeRuntime writes the Go runtime metrics and what the system tells of
// the process.
func writeRuntime(b *strings.Builder) {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, r := range runtimeSamples {
		s[i].Name = r.from
	}
	metrics.Read(s)
	for i, r := range runtimeSamples {
		var v float64
		switch s[i].Value.Kind() {
		case metrics.KindUint64:
			v = float64(s[i].Value.Uint64())
		case metrics.KindFloat64:
			v = s[i].Value.Float64()
		default:
			continue // not in this Go version
		}
		gauge(b, r.name, r.typ, r.help, v)
	}
	gauge(b, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.",
		float64(started.UnixNano())/1e9)
	for _, p := range processStats() {
		gauge(b, p.name, p.typ, p.help, p.value)
	}
}

// processStat is one process_* metric.
type processStat struct {
	name, typ, help string
	value           float64
}

func gauge(b *strings.Builder, name, typ, help string, v float64) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, formatFloat(v))
}
