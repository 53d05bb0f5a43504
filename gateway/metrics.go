package gateway

import (
	"net/http"

	"github.com/toolsearch/toolsearch/gateway/metrics"
	"github.com/toolsearch/toolsearch/internal/prom"
)

// The gateway's metrics (package metrics) and /metrics.

// enrichStates are the states toolsearch_enrich_state has a series for.
var enrichStates = []string{EnrichUnavailable, EnrichWaiting, EnrichRunning, EnrichIdle, EnrichBackoff, EnrichBudgetExhausted}

// upstreamStates are the states toolsearch_upstream_state has a series for.
var upstreamStates = []string{string(StateIdle), string(StateStarting), string(StateReady), string(StateFailed), string(StateRestarting), string(StateStopped)}

// serveMetrics answers GET /metrics. The token gauges summed over sessions
// are worked out here, at each scrape, rather than kept up to date on every
// change of every session's tool list. The session count and the catalog's
// tokens are set only here, from the same list and total, so that one
// scrape is consistent: it never counts a session, or a catalog, whose
// tokens it left out of the sums.
func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request) {
	g.metrics.Scrape(func() { g.scrape(w, r) })
}

// scrape sets the gauges worked out at a scrape and writes the metrics.
func (g *Gateway) scrape(w http.ResponseWriter, r *http.Request) {
	total := g.visibleTokens(g.cur.Load())
	g.metrics.SetCatalogTokens(total)
	loaded, held := 0, 0
	skillsLoaded, skillsHeld := 0, 0
	sv := g.skillView()
	skillsTotal := sv.listTokens(false, nil)
	list := g.sessionList()
	g.metrics.SetSessions(len(list))
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
	st := g.SkillStats()
	g.metrics.SetSkills(st.Skills, st.ListTokens, st.FileBytes)
	g.metrics.SetSkillTokens(skillsLoaded, skillsHeld)
	g.metrics.SetTokens(loaded, held)
	if g.enr.On() {
		e := g.enr.Status(r.Context(), true)
		g.metrics.SetEnrich(metrics.Enrich{RemainingTools: e.Remaining.Tools, RemainingTokens: e.Remaining.Tokens,
			SpentTools: e.Spent.Tools, SpentTokens: e.Spent.Tokens, Pending: int64(e.Tools - e.WithHints), State: e.State})
	}
	if g.cluster != nil { // every sample names the replica (cluster.go)
		w.Header().Set("Content-Type", prom.ContentType)
		g.writeReplicaMetrics(w, g.metrics.WriteText)
		return
	}
	g.metrics.Handler().ServeHTTP(w, r)
}
