package gateway

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/internal/prom"
)

// metrics counts what the gateway does, for /metrics in the Prometheus text
// format. Each Gateway has a registry of its own (no global state), holding
// the gateway's metrics and the Go runtime and process ones.
//
// The methods below are what the rest of the gateway calls; they keep the
// metric names and label values in this one file.
type metrics struct {
	reg     *prom.Registry
	handler http.Handler // reg's

	searches    prom.Counter
	badQueries  prom.Counter
	hits        prom.Counter // tools returned
	misses      prom.Counter // searches that found nothing
	latency     prom.Histogram
	calls       prom.CounterVec // server, outcome
	callSeconds prom.CounterVec // server
	states      prom.GaugeVec   // server, state: 1 for the state it is in
	restarts    prom.CounterVec // server
	oversized   prom.CounterVec // server, action
	fullBuilds  prom.Counter    // tool lists of full exposure built (fulllist.go)
	catalogTok  prom.Gauge      // set on each scrape (serveMetrics)
	tokLoaded   prom.Gauge      // set on each scrape (serveMetrics)
	tokHeld     prom.Gauge      // set on each scrape (serveMetrics)
	sessions    prom.Gauge      // set on each scrape (serveMetrics)
	// HTTP sessions (httpsessions.go): open now (initialized or not), refused
	// at the cap, closed by the gateway per reason.
	httpOpen    prom.Gauge
	httpRefused prom.Counter
	httpExpired prom.CounterVec // reason
	// byProtocol counts client requests per protocol version (era.go).
	byProtocol prom.CounterVec

	// Skills (skills.go): what clients can see, set on each scrape, and
	// what they did with it.
	skillsVisible   prom.Gauge      // skills skills/list gives
	skillsListTok   prom.Gauge      // a client's first skills/list page
	skillsFileBytes prom.Gauge      // the visible skills' files, by their manifests
	skillsLoaded    prom.Gauge      // set on each scrape (serveMetrics)
	skillsHeld      prom.Gauge      // set on each scrape (serveMetrics)
	skillHits       prom.Counter    // skills returned by searches
	skillLists      prom.Counter    // skills/list pages served
	skillGets       prom.CounterVec // outcome: ok, error
	skillReads      prom.CounterVec // outcome: verified, refused, error

	// Background enrichment (package enrichment): registered when it is on
	// (enrichOn); the gauges are set on each scrape (setEnrich).
	enrichOnce sync.Once
	// scrapeMu makes one scrape's sums and its output one piece: a
	// second scrape waits (serveMetrics).
	scrapeMu        sync.Mutex
	enrichReady     atomic.Bool     // the enrich* metrics are registered
	enrichTools     prom.CounterVec // outcome: written, rejected, failed
	enrichTokens    prom.CounterVec // direction: input, output
	enrichRequests  prom.Counter
	enrichRemaining prom.GaugeVec // unit: tools, tokens
	enrichSpent     prom.GaugeVec // unit: tools, tokens
	enrichPending   prom.Gauge
	enrichState     prom.GaugeVec // state: 1 for the state it is in
}

// enrichStates are the states toolsearch_enrich_state has a series for.
var enrichStates = []string{EnrichUnavailable, EnrichWaiting, EnrichRunning, EnrichIdle, EnrichBackoff, EnrichBudgetExhausted}

// enrichOn registers the metrics of background enrichment.
func (m *metrics) enrichOn() {
	m.enrichOnce.Do(func() {
		defer m.enrichReady.Store(true)
		m.enrichTools = m.reg.CounterVec("toolsearch_enrich_tools_total",
			"Tools sent for search hints, by outcome: written, rejected (the answer failed the checks) or failed (the request failed).", "outcome")
		m.enrichTokens = m.reg.CounterVec("toolsearch_enrich_tokens_total",
			"Tokens of enrichment requests and answers, as the provider counted them, by direction: input or output.", "direction")
		m.enrichRequests = m.reg.Counter("toolsearch_enrich_requests_total",
			"Requests sent to the enrichment provider, retries included.")
		m.enrichRemaining = m.reg.GaugeVec("toolsearch_enrich_budget_remaining",
			"What is left of the day's enrichment budget (UTC), by unit: tools or tokens.", "unit")
		m.enrichSpent = m.reg.GaugeVec("toolsearch_enrich_spent_today",
			"What enrichment spent today (UTC), by unit: tools or tokens; every replica's, with a cluster.", "unit")
		m.enrichPending = m.reg.Gauge("toolsearch_enrich_tools_without_hints",
			"Visible tools without search hints for their current definition.")
		m.enrichState = m.reg.GaugeVec("toolsearch_enrich_state",
			"1 for the state background enrichment is in.", "state")
		for _, o := range []string{"written", "rejected", "failed"} {
			m.enrichTools.With(o) // every outcome shows, at 0, from the start
		}
		for _, d := range []string{"input", "output"} {
			m.enrichTokens.With(d)
		}
	})
}

// enrichCounted counts a round of enrichment.
func (m *metrics) enrichCounted(res enrich.Result) {
	if !m.enrichReady.Load() {
		return
	}
	m.enrichTools.With("written").Add(float64(res.Written))
	m.enrichTools.With("rejected").Add(float64(res.Rejected))
	m.enrichTools.With("failed").Add(float64(res.Failed))
	m.enrichTokens.With("input").Add(float64(res.InputTokens))
	m.enrichTokens.With("output").Add(float64(res.OutputTokens))
	m.enrichRequests.Add(float64(res.Requests))
}

// setEnrich sets the gauges of enrichment from its status.
func (m *metrics) setEnrich(st EnrichStatus) {
	if !m.enrichReady.Load() {
		return
	}
	m.enrichRemaining.With("tools").Set(float64(st.Remaining.Tools))
	m.enrichRemaining.With("tokens").Set(float64(st.Remaining.Tokens))
	m.enrichSpent.With("tools").Set(float64(st.Spent.Tools))
	m.enrichSpent.With("tokens").Set(float64(st.Spent.Tokens))
	m.enrichPending.Set(float64(st.Tools - st.WithHints))
	for _, s := range enrichStates {
		v := 0.0
		if s == st.State {
			v = 1
		}
		m.enrichState.With(s).Set(v)
	}
}

// latencyBounds are the upper bounds, in seconds, of the search latency
// histogram's buckets.
var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// upstreamStates are the states toolsearch_upstream_state has a series for.
var upstreamStates = []State{StateIdle, StateStarting, StateReady, StateFailed, StateRestarting, StateStopped}

func newMetrics() *metrics {
	reg := prom.NewRegistry(true)
	counter, gauge, counterVec := reg.Counter, reg.Gauge, reg.CounterVec
	m := &metrics{reg: reg, handler: reg.Handler()}
	m.searches = counter("toolsearch_searches_total", "Searches run, including bad queries.")
	m.badQueries = counter("toolsearch_search_bad_queries_total", "Searches refused as bad queries.")
	m.hits = counter("toolsearch_search_hits_total", "Tools returned by searches.")
	m.misses = counter("toolsearch_search_misses_total", "Searches that found nothing.")
	m.latency = reg.Histogram("toolsearch_search_seconds", "Search latency.", latencyBounds)
	m.calls = counterVec("toolsearch_calls_total", "Tool calls per server and outcome.", "server", "outcome")
	m.callSeconds = counterVec("toolsearch_call_seconds_total", "Time spent in tool calls per server.", "server")
	m.states = reg.GaugeVec("toolsearch_upstream_state", "1 for the state each upstream server is in.", "server", "state")
	m.restarts = counterVec("toolsearch_upstream_restarts_total", "Restarts per upstream server.", "server")
	m.oversized = counterVec("toolsearch_upstream_oversized_messages_total",
		"Messages over the size limit per upstream server and what was done: call_failed, dropped or restarted.", "server", "action")
	m.fullBuilds = counter("toolsearch_full_list_builds_total", "Tool lists of full exposure built: one per catalog version that a session in full mode saw.")
	m.catalogTok = gauge("toolsearch_catalog_tokens", "Tokens of every visible tool definition.")
	m.tokLoaded = gauge("toolsearch_tokens_loaded", "Tokens of the tool lists sessions hold now, summed over sessions.")
	m.tokHeld = gauge("toolsearch_tokens_held_back", "Tokens of definitions kept out of sessions' tool lists, summed over sessions.")
	m.sessions = gauge("toolsearch_sessions", "Connected client sessions.")
	m.byProtocol = counterVec("toolsearch_client_requests_total", "Client requests per MCP protocol version.", "protocol")
	m.httpOpen = gauge("toolsearch_http_sessions_open", "MCP sessions open over HTTP, initialized or not.")
	m.httpRefused = counter("toolsearch_http_sessions_refused_total", "New MCP sessions refused because maxSessions were open.")
	m.httpExpired = counterVec("toolsearch_http_sessions_expired_total",
		"MCP sessions the gateway closed: uninitialized (no notifications/initialized in time) or idle.", "reason")
	for _, r := range []string{expiredIdle, expiredUninitialized} {
		m.httpExpired.With(r) // both reasons show, at 0, from the start
	}
	m.skillsVisible = gauge("toolsearch_skills", "Skills clients can see: what skills/list gives, over every page.")
	m.skillsListTok = gauge("toolsearch_skills_list_tokens",
		"Tokens of a client's first skills/list page: what listing the skills costs before any is used.")
	m.skillsFileBytes = gauge("toolsearch_skills_file_bytes",
		"Bytes of the visible skills' files by their manifests: held back until a client reads them.")
	m.skillsLoaded = gauge("toolsearch_skills_tokens_loaded",
		"Tokens of the skill entries sessions' skills/list gives now (every page), summed over sessions.")
	m.skillsHeld = gauge("toolsearch_skills_tokens_held_back",
		"Tokens of visible skill entries kept out of sessions' skills/list (deferred), summed over sessions.")
	m.skillHits = counter("toolsearch_search_skill_hits_total", "Skills returned by searches.")
	m.skillLists = counter("toolsearch_skills_list_pages_total", "Pages of skills/list served to clients.")
	m.skillGets = counterVec("toolsearch_skills_fetched_total", "skills/get calls of clients, by outcome: ok or error.", "outcome")
	m.skillReads = counterVec("toolsearch_skill_files_read_total",
		"Reads of skill files by clients, by outcome: verified (served), refused (failed verification against the manifest) or error.", "outcome")
	for _, o := range []string{"ok", "error"} {
		m.skillGets.With(o)
	}
	for _, o := range []string{skillReadVerified, skillReadRefused, skillReadError} {
		m.skillReads.With(o)
	}
	return m
}

func (m *metrics) search(d time.Duration, hits int, err error) {
	m.searches.Inc()
	if err != nil {
		m.badQueries.Inc()
		return
	}
	m.hits.Add(float64(hits))
	if hits == 0 {
		m.misses.Inc()
	}
	m.latency.Observe(d.Seconds())
}

func (m *metrics) call(server, outcome string, d time.Duration) {
	m.calls.With(server, outcome).Inc()
	m.callSeconds.With(server).Add(d.Seconds())
}

func (m *metrics) setState(server, state string) {
	for _, st := range upstreamStates {
		v := 0.0
		if string(st) == state {
			v = 1
		}
		m.states.With(server, string(st)).Set(v)
	}
}

func (m *metrics) restart(server string) { m.restarts.With(server).Inc() }

func (m *metrics) oversize(server, action string) {
	m.oversized.With(server, action).Inc()
}

func (m *metrics) fullListBuilt() { m.fullBuilds.Inc() }

// Outcomes of a read of a skill file.
const (
	skillReadVerified = "verified"
	skillReadRefused  = "refused"
	skillReadError    = "error"
)

func (m *metrics) skillSearch(hits int) { m.skillHits.Add(float64(hits)) }

func (m *metrics) skillsListed() { m.skillLists.Inc() }

func (m *metrics) skillFetched(err error) {
	if err != nil {
		m.skillGets.With("error").Inc()
		return
	}
	m.skillGets.With("ok").Inc()
}

func (m *metrics) skillRead(outcome string) { m.skillReads.With(outcome).Inc() }

// setSkills sets the skill gauges from what clients can see.
func (m *metrics) setSkills(st SkillStats) {
	m.skillsVisible.Set(float64(st.Skills))
	m.skillsListTok.Set(float64(st.ListTokens))
	m.skillsFileBytes.Set(float64(st.FileBytes))
}

// clientRequest counts a client request of protocol version v; a version
// the gateway does not serve counts as "other", so the labels stay few.
func (m *metrics) clientRequest(v string) {
	if !slices.Contains(downstreamVersions, v) {
		v = "other"
	}
	m.byProtocol.With(v).Inc()
}

func (m *metrics) setHTTPSessions(n int) { m.httpOpen.Set(float64(n)) }

func (m *metrics) sessionRefused() { m.httpRefused.Inc() }

func (m *metrics) sessionExpired(reason string) { m.httpExpired.With(reason).Inc() }

func (m *metrics) setSessions(n int) { m.sessions.Set(float64(n)) }

// serveMetrics answers GET /metrics. The token gauges summed over sessions
// are worked out here, at each scrape, rather than kept up to date on every
// change of every session's tool list. The session count and the catalog's
// tokens are set only here, from the same list and total, so that one
// scrape is consistent: it never counts a session, or a catalog, whose
// tokens it left out of the sums.
func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request) {
	g.metrics.scrapeMu.Lock()
	defer g.metrics.scrapeMu.Unlock()
	total := g.visibleTokens(g.cur.Load())
	g.metrics.catalogTok.Set(float64(total))
	loaded, held := 0, 0
	skillsLoaded, skillsHeld := 0, 0
	sv := g.skillView()
	skillsTotal := sv.listTokens(false, nil)
	list := g.sessionList()
	g.metrics.setSessions(len(list))
	for _, s := range list {
		s.mu.Lock()
		l := s.loadedTok
		s.mu.Unlock()
		loaded += l
		held += max(total-l, 0)
		sl := sv.listTokens(s.skillsListing())
		skillsLoaded += sl
		skillsHeld += max(skillsTotal-sl, 0)
	}
	g.metrics.setSkills(g.SkillStats())
	g.metrics.skillsLoaded.Set(float64(skillsLoaded))
	g.metrics.skillsHeld.Set(float64(skillsHeld))
	g.metrics.tokLoaded.Set(float64(loaded))
	g.metrics.tokHeld.Set(float64(held))
	if g.enr.On() {
		g.metrics.setEnrich(g.enr.Status(r.Context(), true))
	}
	if g.cluster != nil { // every sample names the replica (cluster.go)
		w.Header().Set("Content-Type", prom.ContentType)
		g.writeReplicaMetrics(w, g.metrics.writeText)
		return
	}
	g.metrics.handler.ServeHTTP(w, r)
}

// writeText writes every metric of the registry in the Prometheus text
// format (for the replica labels cluster.go adds to the text).
func (m *metrics) writeText(w io.Writer) {
	if err := m.reg.WriteText(w); err != nil {
		fmt.Fprintf(w, "# toolsearch: writing metrics: %v\n", err)
	}
}
