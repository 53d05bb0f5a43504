// Package metrics counts what a toolsearch gateway does, for /metrics in
// the Prometheus text format. Each gateway has a Set of its own (no global
// state), whose registry holds the gateway's metrics and the Go runtime and
// process ones. The methods are what the gateway calls; they keep the
// metric names and label values in this one package.
package metrics

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

// Set is one gateway's metrics.
type Set struct {
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
	fullBuilds  prom.Counter    // tool lists of full exposure built
	catalogTok  prom.Gauge      // set on each scrape
	tokLoaded   prom.Gauge      // set on each scrape
	tokHeld     prom.Gauge      // set on each scrape
	sessions    prom.Gauge      // set on each scrape
	// HTTP sessions: open now (initialized or not), refused at the cap,
	// closed by the gateway per reason.
	httpOpen    prom.Gauge
	httpRefused prom.Counter
	httpExpired prom.CounterVec // reason
	// byProtocol counts client requests per protocol version.
	byProtocol prom.CounterVec

	// Skills: what clients can see, set on each scrape, and what they did
	// with it.
	skillsVisible   prom.Gauge      // skills skills/list gives
	skillsListTok   prom.Gauge      // a client's first skills/list page
	skillsFileBytes prom.Gauge      // the visible skills' files, by their manifests
	skillsLoaded    prom.Gauge      // set on each scrape
	skillsHeld      prom.Gauge      // set on each scrape
	skillHits       prom.Counter    // skills returned by searches
	skillLists      prom.Counter    // skills/list pages served
	skillGets       prom.CounterVec // outcome: ok, error
	skillReads      prom.CounterVec // outcome: verified, refused, error

	// Background enrichment: registered when it is on (EnrichOn); the
	// gauges are set on each scrape (SetEnrich).
	enrichOnce sync.Once
	// scrapeMu makes one scrape's sums and its output one piece: a
	// second scrape waits (Scrape).
	scrapeMu        sync.Mutex
	enrichReady     atomic.Bool     // the enrich* metrics are registered
	enrichTools     prom.CounterVec // outcome: written, rejected, failed
	enrichTokens    prom.CounterVec // direction: input, output
	enrichRequests  prom.Counter
	enrichRemaining prom.GaugeVec // unit: tools, tokens
	enrichSpent     prom.GaugeVec // unit: tools, tokens
	enrichPending   prom.Gauge
	enrichState     prom.GaugeVec // state: 1 for the state it is in
	// protocols are the client protocol versions counted by name
	// (ClientRequest); upstreamStates the states toolsearch_upstream_state
	// has a series for (SetState); enrichStates those
	// toolsearch_enrich_state has one for (SetEnrich).
	protocols, upstreamStates, enrichStates []string
}

// Reasons an HTTP session is closed by the gateway (SessionExpired).
const (
	ExpiredUninitialized = "uninitialized" // no notifications/initialized in time
	ExpiredIdle          = "idle"          // no request for the idle timeout
)

// Outcomes of a read of a skill file (SkillRead).
const (
	SkillReadVerified = "verified"
	SkillReadRefused  = "refused"
	SkillReadError    = "error"
)

// latencyBounds are the upper bounds, in seconds, of the search latency
// histogram's buckets.
var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// LatencyBounds returns the upper bounds, in seconds, of the buckets of
// toolsearch_search_seconds.
func LatencyBounds() []float64 { return slices.Clone(latencyBounds) }

// New makes a gateway's metrics. protocols are the client protocol versions
// counted by name (any other counts as "other"); states are the states an
// upstream server can be in, each with a series per server.
func New(protocols, states []string) *Set {
	reg := prom.NewRegistry(true)
	counter, gauge, counterVec := reg.Counter, reg.Gauge, reg.CounterVec
	m := &Set{reg: reg, handler: reg.Handler(), protocols: slices.Clone(protocols), upstreamStates: slices.Clone(states)}
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
	showAtZero(m.httpExpired, ExpiredIdle, ExpiredUninitialized)
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
	showAtZero(m.skillGets, "ok", "error")
	showAtZero(m.skillReads, SkillReadVerified, SkillReadRefused, SkillReadError)
	return m
}

// showAtZero makes the series of v for each of values (a one-label
// vector's) show from the start, at 0, before anything is counted.
func showAtZero(v prom.CounterVec, values ...string) {
	for _, x := range values {
		v.With(x)
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Set) Handler() http.Handler { return m.handler }

// WriteText writes every metric in the Prometheus text format (for a
// caller that adds labels to the text).
func (m *Set) WriteText(w io.Writer) {
	if err := m.reg.WriteText(w); err != nil {
		fmt.Fprintf(w, "# toolsearch: writing metrics: %v\n", err)
	}
}

// Scrape holds the metrics for one scrape: f sets the gauges worked out at
// the scrape and writes them, and a second scrape waits, so that one
// scrape's sums and its output are one piece.
func (m *Set) Scrape(f func()) {
	m.scrapeMu.Lock()
	defer m.scrapeMu.Unlock()
	f()
}

// Search counts a search that took d and returned hits tools, or was
// refused with err.
func (m *Set) Search(d time.Duration, hits int, err error) {
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

// Call counts a tool call of server that ended with outcome after d.
func (m *Set) Call(server, outcome string, d time.Duration) {
	m.calls.With(server, outcome).Inc()
	m.callSeconds.With(server).Add(d.Seconds())
}

// CallCount is how many calls of server ended with outcome.
func (m *Set) CallCount(server, outcome string) float64 { return m.calls.With(server, outcome).Value() }

// SetState records that server is in state: its series for state is 1,
// the others 0.
func (m *Set) SetState(server, state string) {
	for _, st := range m.upstreamStates {
		v := 0.0
		if st == state {
			v = 1
		}
		m.states.With(server, st).Set(v)
	}
}

// Restart counts a restart of server.
func (m *Set) Restart(server string) { m.restarts.With(server).Inc() }

// Oversize counts a message of server over the size limit, and what was
// done with it.
func (m *Set) Oversize(server, action string) { m.oversized.With(server, action).Inc() }

// FullListBuilt counts a tool list of full exposure built.
func (m *Set) FullListBuilt() { m.fullBuilds.Inc() }

// SkillSearch counts the skills a search returned.
func (m *Set) SkillSearch(hits int) { m.skillHits.Add(float64(hits)) }

// SkillsListed counts a page of skills/list served.
func (m *Set) SkillsListed() { m.skillLists.Inc() }

// SkillFetched counts a skills/get, failed when err is set.
func (m *Set) SkillFetched(err error) {
	if err != nil {
		m.skillGets.With("error").Inc()
		return
	}
	m.skillGets.With("ok").Inc()
}

// SkillRead counts a read of a skill file with its outcome
// (SkillReadVerified, SkillReadRefused or SkillReadError).
func (m *Set) SkillRead(outcome string) { m.skillReads.With(outcome).Inc() }

// SetSkills sets the skill gauges from what clients can see: the skills
// skills/list gives, the tokens of a client's first page, and the bytes of
// their files.
func (m *Set) SetSkills(skills, listTokens int, fileBytes int64) {
	m.skillsVisible.Set(float64(skills))
	m.skillsListTok.Set(float64(listTokens))
	m.skillsFileBytes.Set(float64(fileBytes))
}

// SetSkillTokens sets the tokens of the skill entries sessions' skills/list
// gives now and of those kept out of them, summed over sessions.
func (m *Set) SetSkillTokens(loaded, held int) {
	m.skillsLoaded.Set(float64(loaded))
	m.skillsHeld.Set(float64(held))
}

// SetCatalogTokens sets the tokens of every visible tool definition.
func (m *Set) SetCatalogTokens(n int) { m.catalogTok.Set(float64(n)) }

// SetTokens sets the tokens of the tool lists sessions hold and of the
// definitions kept out of them, summed over sessions.
func (m *Set) SetTokens(loaded, held int) {
	m.tokLoaded.Set(float64(loaded))
	m.tokHeld.Set(float64(held))
}

// ClientRequest counts a client request of protocol version v; a version
// not counted by name counts as "other", so the labels stay few.
func (m *Set) ClientRequest(v string) {
	if !slices.Contains(m.protocols, v) {
		v = "other"
	}
	m.byProtocol.With(v).Inc()
}

// SetHTTPSessions sets the MCP sessions open over HTTP.
func (m *Set) SetHTTPSessions(n int) { m.httpOpen.Set(float64(n)) }

// SessionRefused counts a new MCP session refused at the cap.
func (m *Set) SessionRefused() { m.httpRefused.Inc() }

// SessionExpired counts an MCP session the gateway closed, for reason
// (ExpiredIdle or ExpiredUninitialized).
func (m *Set) SessionExpired(reason string) { m.httpExpired.With(reason).Inc() }

// SetSessions sets the connected client sessions.
func (m *Set) SetSessions(n int) { m.sessions.Set(float64(n)) }

// Enrich is what the enrichment gauges show: the day's budget left and
// spent, in tools and tokens, the visible tools without hints, and the
// state enrichment is in.
type Enrich struct {
	RemainingTools, RemainingTokens int64
	SpentTools, SpentTokens         int64
	Pending                         int64
	State                           string
}

// EnrichOn registers the metrics of background enrichment, with a series
// of toolsearch_enrich_state for each of states. Later calls do nothing.
func (m *Set) EnrichOn(states []string) {
	m.enrichOnce.Do(func() {
		defer m.enrichReady.Store(true)
		m.enrichStates = slices.Clone(states)
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
		showAtZero(m.enrichTools, "written", "rejected", "failed")
		showAtZero(m.enrichTokens, "input", "output")
	})
}

// EnrichCounted counts a round of enrichment.
func (m *Set) EnrichCounted(res enrich.Result) {
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

// SetEnrich sets the gauges of enrichment, once EnrichOn registered them.
func (m *Set) SetEnrich(e Enrich) {
	if !m.enrichReady.Load() {
		return
	}
	m.enrichRemaining.With("tools").Set(float64(e.RemainingTools))
	m.enrichRemaining.With("tokens").Set(float64(e.RemainingTokens))
	m.enrichSpent.With("tools").Set(float64(e.SpentTools))
	m.enrichSpent.With("tokens").Set(float64(e.SpentTokens))
	m.enrichPending.Set(float64(e.Pending))
	for _, s := range m.enrichStates {
		v := 0.0
		if s == e.State {
			v = 1
		}
		m.enrichState.With(s).Set(v)
	}
}
