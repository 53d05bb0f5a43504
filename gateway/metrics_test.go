package gateway

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolsearch/toolsearch/gateway/metrics"
)

// scrape fetches base/metrics over loopback and parses it as the
// Prometheus text format.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := httpGet(t, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// sample is the value of the series of family name whose labels include
// every pair of labels, and whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsScrape runs gateways side by side in front of a real echo
// server, makes a known number of searches and calls on each, and reads
// /metrics back with the Prometheus parser: every gateway counts only its
// own work (a registry each), the types and labels are the documented
// ones, and the Go runtime and process collectors are there.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		hits, misses     int // searches that find the echo tool, and that find nothing
		calls            int // calls of the echo tool
		unknown          int // calls of a tool that does not exist
		badQueries       int
		wantSearchBucket bool
	}{
		{name: "idle"},
		{name: "searches only", hits: 2, misses: 1, badQueries: 1, wantSearchBucket: true},
		{name: "searches and calls", hits: 1, calls: 3, unknown: 2, wantSearchBucket: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
			srv := serveHTTP(t, g.Handler("search"))
			// The server comes up in the background; /metrics shows it
			// ready, and then searches find its tool.
			waitFor(t, "the echo server ready in /metrics", 20*time.Second, func() bool {
				v, _ := sample(scrape(t, srv.URL), "toolsearch_upstream_state", map[string]string{"server": "echo", "state": string(StateReady)})
				return v == 1
			})
			c := connectHTTP(t, srv.URL+"/mcp", nil)
			var echo string
			for range tc.hits {
				hits := c.search(t, "echo the text back unchanged")
				if i := slices.IndexFunc(hits, func(h string) bool { return strings.Contains(h, "echo") }); i >= 0 {
					echo = hits[i]
				} else {
					t.Fatalf("search for the echo tool found %v", hits)
				}
			}
			for range tc.misses {
				if hits := c.search(t, "qqqzzzxxx"); len(hits) != 0 {
					t.Fatalf("a nonsense query found %v", hits)
				}
			}
			for range tc.badQueries {
				if _, isErr := c.call(t, searchToolName, map[string]any{"query": "select:"}); !isErr {
					t.Fatal("a query of select: and no name was not refused")
				}
			}
			for i := range tc.calls {
				text, isErr := c.call(t, callToolName, map[string]any{"name": echo, "arguments": map[string]any{"text": fmt.Sprint(i)}})
				if isErr {
					t.Fatalf("calling %s: %s", echo, text)
				}
			}
			for range tc.unknown {
				if _, isErr := c.call(t, callToolName, map[string]any{"name": "no_such_tool"}); !isErr {
					t.Fatal("a call of no_such_tool succeeded")
				}
			}

			// The session is counted once the gateway has handled its
			// notifications/initialized, which may be just after connecting.
			var fams map[string]*dto.MetricFamily
			waitFor(t, "the session counted in /metrics", 20*time.Second, func() bool {
				fams = scrape(t, srv.URL)
				n, _ := sample(fams, "toolsearch_sessions", nil)
				return n == 1
			})
			searches := tc.hits + tc.misses + tc.badQueries
			checks := []struct {
				name   string
				labels map[string]string
				typ    dto.MetricType
				want   float64
			}{
				{"toolsearch_searches_total", nil, dto.MetricType_COUNTER, float64(searches)},
				{"toolsearch_search_bad_queries_total", nil, dto.MetricType_COUNTER, float64(tc.badQueries)},
				{"toolsearch_search_misses_total", nil, dto.MetricType_COUNTER, float64(tc.misses)},
				{"toolsearch_search_seconds", nil, dto.MetricType_HISTOGRAM, float64(tc.hits + tc.misses)},
				{"toolsearch_upstream_state", map[string]string{"server": "echo", "state": string(StateReady)}, dto.MetricType_GAUGE, 1},
				{"toolsearch_upstream_state", map[string]string{"server": "echo", "state": string(StateFailed)}, dto.MetricType_GAUGE, 0},
				{"toolsearch_sessions", nil, dto.MetricType_GAUGE, 1},
				{"toolsearch_http_sessions_expired_total", map[string]string{"reason": expiredIdle}, dto.MetricType_COUNTER, 0},
				{"toolsearch_http_sessions_expired_total", map[string]string{"reason": expiredUninitialized}, dto.MetricType_COUNTER, 0},
			}
			if tc.calls > 0 {
				checks = append(checks, struct {
					name   string
					labels map[string]string
					typ    dto.MetricType
					want   float64
				}{"toolsearch_calls_total", map[string]string{"server": "echo", "outcome": "ok"}, dto.MetricType_COUNTER, float64(tc.calls)})
			}
			if tc.unknown > 0 {
				checks = append(checks, struct {
					name   string
					labels map[string]string
					typ    dto.MetricType
					want   float64
				}{"toolsearch_calls_total", map[string]string{"server": "", "outcome": "unknown_tool"}, dto.MetricType_COUNTER, float64(tc.unknown)})
			}
			for _, ck := range checks {
				f := fams[ck.name]
				if f == nil {
					t.Errorf("/metrics has no %s", ck.name)
					continue
				}
				if f.GetType() != ck.typ {
					t.Errorf("%s is a %v, want a %v", ck.name, f.GetType(), ck.typ)
				}
				if f.GetHelp() == "" {
					t.Errorf("%s has no HELP", ck.name)
				}
				got, ok := sample(fams, ck.name, ck.labels)
				if !ok || got != ck.want {
					t.Errorf("%s%v = %v (present %v), want %v", ck.name, ck.labels, got, ok, ck.want)
				}
			}
			if _, ok := fams["toolsearch_calls_total"]; ok != (tc.calls+tc.unknown > 0) {
				t.Errorf("toolsearch_calls_total present = %v with %d calls", ok, tc.calls+tc.unknown)
			}
			// Every tool's tokens, the built-in tools' with the server's.
			want := 0
			for _, s := range g.Snapshot().Servers() {
				want += s.Tokens()
			}
			if tok, _ := sample(fams, "toolsearch_catalog_tokens", nil); tok <= 0 || tok != float64(want) {
				t.Errorf("toolsearch_catalog_tokens = %v, want %d (every tool of the catalog)", tok, want)
			}
			loaded, _ := sample(fams, "toolsearch_tokens_loaded", nil)
			held, _ := sample(fams, "toolsearch_tokens_held_back", nil)
			if total, _ := sample(fams, "toolsearch_catalog_tokens", nil); loaded+held < total {
				t.Errorf("tokens loaded %v + held back %v < catalog %v for one session", loaded, held, total)
			}
			if h := fams["toolsearch_search_seconds"]; tc.wantSearchBucket {
				var bounds []float64
				for _, b := range h.GetMetric()[0].GetHistogram().GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						bounds = append(bounds, b.GetUpperBound())
					}
				}
				if !slices.Equal(bounds, metrics.LatencyBounds()) {
					t.Errorf("toolsearch_search_seconds has buckets %v, want %v", bounds, metrics.LatencyBounds())
				}
			}
			for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds"} {
				if fams[name] == nil {
					t.Errorf("/metrics has no %s (Go runtime and process collectors)", name)
				}
			}
		})
	}
}

// TestMetricsStatesOneHot: every upstream server has a series per state, and
// exactly one of them is 1, as the server moves from state to state.
func TestMetricsStatesOneHot(t *testing.T) {
	t.Parallel()
	m := metrics.New(downstreamVersions, upstreamStates)
	srv := serveHTTP(t, m.Handler())
	for _, st := range []State{StateStarting, StateReady, StateRestarting, StateFailed, StateStopped} {
		m.SetState("a", string(st))
		m.SetState("b", string(StateIdle))
		fams := scrape(t, srv.URL)
		for server, want := range map[string]State{"a": st, "b": StateIdle} {
			for _, s := range upstreamStates {
				v, ok := sample(fams, "toolsearch_upstream_state", map[string]string{"server": server, "state": string(s)})
				if !ok {
					t.Fatalf("no toolsearch_upstream_state for %s in %s", server, s)
				}
				if (v == 1) != (s == string(want)) {
					t.Errorf("after %s: toolsearch_upstream_state{server=%q,state=%q} = %v", want, server, s, v)
				}
			}
		}
	}
	m.ClientRequest("1999-01-01")
	m.ClientRequest(downstreamVersions[0])
	fams := scrape(t, srv.URL)
	for v, want := range map[string]float64{"other": 1, downstreamVersions[0]: 1} {
		if got, _ := sample(fams, "toolsearch_client_requests_total", map[string]string{"protocol": v}); got != want {
			t.Errorf("toolsearch_client_requests_total{protocol=%q} = %v, want %v", v, got, want)
		}
	}
	if got, _ := sample(fams, "toolsearch_client_requests_total", map[string]string{"protocol": "1999-01-01"}); got != 0 {
		t.Errorf("an unserved version has a series of its own")
	}
}
