package gateway

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// metrics counts what the gateway does, for /metrics in the Prometheus text
// format. It is written by hand: a few counters do not need a client library.
type metrics struct {
	mu           sync.Mutex
	searches     int64
	hits         int64 // tools returned
	misses       int64 // searches that found nothing
	badQueries   int64
	latencySum   float64
	latencyCount int64
	latencyBkt   []int64 // cumulative buckets of latencyBounds
	calls        map[[2]string]int64
	callSeconds  map[string]float64
	states       map[string]string
	restarts     map[string]int64
	oversized    map[[2]string]int64 // server, action → messages over the size limit
	catalogTok   int
	fullBuilds   int64 // tool lists of full exposure built (fulllist.go)
	sessions     int
	// HTTP sessions (sessions.go): open now (initialized or not), refused
	// at the cap, closed by the gateway per reason.
	httpOpen    int
	httpRefused int64
	httpExpired map[string]int64
	// byProtocol counts client requests per protocol version (era.go).
	byProtocol map[string]int64
}

var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

func newMetrics() *metrics {
	return &metrics{calls: map[[2]string]int64{}, callSeconds: map[string]float64{}, states: map[string]string{},
		restarts: map[string]int64{}, oversized: map[[2]string]int64{}, httpExpired: map[string]int64{}, byProtocol: map[string]int64{}, latencyBkt: make([]int64, len(latencyBounds))}
}

func (m *metrics) search(d time.Duration, hits int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.searches++
	if err != nil {
		m.badQueries++
		return
	}
	m.hits += int64(hits)
	if hits == 0 {
		m.misses++
	}
	s := d.Seconds()
	m.latencySum += s
	m.latencyCount++
	for i, b := range latencyBounds {
		if s <= b {
			m.latencyBkt[i]++
		}
	}
}

func (m *metrics) call(server, outcome string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[[2]string{server, outcome}]++
	m.callSeconds[server] += d.Seconds()
}

func (m *metrics) setState(server, state string) {
	m.mu.Lock()
	m.states[server] = state
	m.mu.Unlock()
}

func (m *metrics) restart(server string) {
	m.mu.Lock()
	m.restarts[server]++
	m.mu.Unlock()
}

func (m *metrics) oversize(server, action string) {
	m.mu.Lock()
	m.oversized[[2]string{server, action}]++
	m.mu.Unlock()
}

func (m *metrics) fullListBuilt() {
	m.mu.Lock()
	m.fullBuilds++
	m.mu.Unlock()
}

// clientRequest counts a client request of protocol version v; a version
// the gateway does not serve counts as "other", so the labels stay few.
func (m *metrics) clientRequest(v string) {
	if !slices.Contains(downstreamVersions, v) {
		v = "other"
	}
	m.mu.Lock()
	m.byProtocol[v]++
	m.mu.Unlock()
}

func (m *metrics) setHTTPSessions(n int) {
	m.mu.Lock()
	m.httpOpen = n
	m.mu.Unlock()
}

func (m *metrics) sessionRefused() {
	m.mu.Lock()
	m.httpRefused++
	m.mu.Unlock()
}

func (m *metrics) sessionExpired(reason string) {
	m.mu.Lock()
	m.httpExpired[reason]++
	m.mu.Unlock()
}

func (m *metrics) setTokens(n int) {
	m.mu.Lock()
	m.catalogTok = n
	m.mu.Unlock()
}

func (m *metrics) setSessions(n int) {
	m.mu.Lock()
	m.sessions = n
	m.mu.Unlock()
}

func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	loaded, held := 0, 0
	for _, s := range g.sessionList() {
		s.mu.Lock()
		l := s.loadedTok
		s.mu.Unlock()
		loaded += l
		g.metrics.mu.Lock()
		total := g.metrics.catalogTok
		g.metrics.mu.Unlock()
		held += max(total-l, 0)
	}
	if g.cluster != nil { // every sample names the replica (cluster.go)
		g.writeReplicaMetrics(w, func(w io.Writer) { g.metrics.write(w, loaded, held) })
		return
	}
	g.metrics.write(w, loaded, held)
}

func (m *metrics) write(w io.Writer, loaded, held int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("# HELP toolsearch_searches_total Searches run, including bad queries.")
	p("# TYPE toolsearch_searches_total counter")
	p("toolsearch_searches_total %d", m.searches)
	p("# HELP toolsearch_search_bad_queries_total Searches refused as bad queries.")
	p("# TYPE toolsearch_search_bad_queries_total counter")
	p("toolsearch_search_bad_queries_total %d", m.badQueries)
	p("# HELP toolsearch_search_hits_total Tools returned by searches.")
	p("# TYPE toolsearch_search_hits_total counter")
	p("toolsearch_search_hits_total %d", m.hits)
	p("# HELP toolsearch_search_misses_total Searches that found nothing.")
	p("# TYPE toolsearch_search_misses_total counter")
	p("toolsearch_search_misses_total %d", m.misses)
	p("# HELP toolsearch_search_seconds Search latency.")
	p("# TYPE toolsearch_search_seconds histogram")
	for i, b := range latencyBounds {
		p("toolsearch_search_seconds_bucket{le=\"%g\"} %d", b, m.latencyBkt[i])
	}
	p("toolsearch_search_seconds_bucket{le=\"+Inf\"} %d", m.latencyCount)
	p("toolsearch_search_seconds_sum %g", m.latencySum)
	p("toolsearch_search_seconds_count %d", m.latencyCount)
	p("# HELP toolsearch_calls_total Tool calls per server and outcome.")
	p("# TYPE toolsearch_calls_total counter")
	keys := make([][2]string, 0, len(m.calls))
	for k := range m.calls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		p("toolsearch_calls_total{server=%q,outcome=%q} %d", k[0], k[1], m.calls[k])
	}
	p("# HELP toolsearch_call_seconds_total Time spent in tool calls per server.")
	p("# TYPE toolsearch_call_seconds_total counter")
	for _, s := range sortedKeysOf(m.callSeconds) {
		p("toolsearch_call_seconds_total{server=%q} %g", s, m.callSeconds[s])
	}
	p("# HELP toolsearch_upstream_state 1 for the state each upstream server is in.")
	p("# TYPE toolsearch_upstream_state gauge")
	for _, s := range sortedKeysOf(m.states) {
		for _, st := range []State{StateIdle, StateStarting, StateReady, StateFailed, StateRestarting, StateStopped} {
			v := 0
			if m.states[s] == string(st) {
				v = 1
			}
			p("toolsearch_upstream_state{server=%q,state=%q} %d", s, st, v)
		}
	}
	p("# HELP toolsearch_upstream_restarts_total Restarts per upstream server.")
	p("# TYPE toolsearch_upstream_restarts_total counter")
	for _, s := range sortedKeysOf(m.restarts) {
		p("toolsearch_upstream_restarts_total{server=%q} %d", s, m.restarts[s])
	}
	p("# HELP toolsearch_upstream_oversized_messages_total Messages over the size limit per upstream server and what was done: call_failed, dropped or restarted.")
	p("# TYPE toolsearch_upstream_oversized_messages_total counter")
	okeys := make([][2]string, 0, len(m.oversized))
	for k := range m.oversized {
		okeys = append(okeys, k)
	}
	sort.Slice(okeys, func(i, j int) bool { return okeys[i][0]+"\x00"+okeys[i][1] < okeys[j][0]+"\x00"+okeys[j][1] })
	for _, k := range okeys {
		p("toolsearch_upstream_oversized_messages_total{server=%q,action=%q} %d", k[0], k[1], m.oversized[k])
	}
	p("# HELP toolsearch_full_list_builds_total Tool lists of full exposure built: one per catalog version that a session in full mode saw.")
	p("# TYPE toolsearch_full_list_builds_total counter")
	p("toolsearch_full_list_builds_total %d", m.fullBuilds)
	p("# HELP toolsearch_catalog_tokens Tokens of every visible tool definition.")
	p("# TYPE toolsearch_catalog_tokens gauge")
	p("toolsearch_catalog_tokens %d", m.catalogTok)
	p("# HELP toolsearch_tokens_loaded Tokens of the tool lists sessions hold now, summed over sessions.")
	p("# TYPE toolsearch_tokens_loaded gauge")
	p("toolsearch_tokens_loaded %d", loaded)
	p("# HELP toolsearch_tokens_held_back Tokens of definitions kept out of sessions' tool lists, summed over sessions.")
	p("# TYPE toolsearch_tokens_held_back gauge")
	p("toolsearch_tokens_held_back %d", held)
	p("# HELP toolsearch_sessions Connected client sessions.")
	p("# TYPE toolsearch_sessions gauge")
	p("toolsearch_sessions %d", m.sessions)
	p("# HELP toolsearch_client_requests_total Client requests per MCP protocol version.")
	p("# TYPE toolsearch_client_requests_total counter")
	for _, v := range sortedKeysOf(m.byProtocol) {
		p("toolsearch_client_requests_total{protocol=%q} %d", v, m.byProtocol[v])
	}
	p("# HELP toolsearch_http_sessions_open MCP sessions open over HTTP, initialized or not.")
	p("# TYPE toolsearch_http_sessions_open gauge")
	p("toolsearch_http_sessions_open %d", m.httpOpen)
	p("# HELP toolsearch_http_sessions_refused_total New MCP sessions refused because maxSessions were open.")
	p("# TYPE toolsearch_http_sessions_refused_total counter")
	p("toolsearch_http_sessions_refused_total %d", m.httpRefused)
	p("# HELP toolsearch_http_sessions_expired_total MCP sessions the gateway closed: uninitialized (no notifications/initialized in time) or idle.")
	p("# TYPE toolsearch_http_sessions_expired_total counter")
	for _, r := range []string{expiredIdle, expiredUninitialized} {
		p("toolsearch_http_sessions_expired_total{reason=%q} %d", r, m.httpExpired[r])
	}
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ = strings.TrimSpace
