package metrics

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/enrich"
)

// text returns the metrics in the Prometheus text format.
func text(t *testing.T, m *Set) string {
	t.Helper()
	var b bytes.Buffer
	m.WriteText(&b)
	return b.String()
}

func TestSet(t *testing.T) {
	t.Parallel()
	m := New([]string{"2026-07-28"}, []string{"starting", "ready"})
	m.SetState("a", "ready")
	m.ClientRequest("2026-07-28")
	m.ClientRequest("1999-01-01")
	m.Search(2*time.Millisecond, 3, nil)
	m.Search(time.Millisecond, 0, nil)
	m.Search(0, 0, errors.New("bad query"))
	m.Call("a", "ok", time.Second)
	m.SetEnrich(Enrich{State: "running"}) // before EnrichOn: nothing
	out := text(t, m)
	for _, want := range []string{
		`toolsearch_upstream_state{server="a",state="ready"} 1`,
		`toolsearch_upstream_state{server="a",state="starting"} 0`,
		`toolsearch_client_requests_total{protocol="2026-07-28"} 1`,
		`toolsearch_client_requests_total{protocol="other"} 1`,
		"toolsearch_searches_total 3", "toolsearch_search_bad_queries_total 1",
		"toolsearch_search_hits_total 3", "toolsearch_search_misses_total 1",
		`toolsearch_calls_total{outcome="ok",server="a"} 1`,
		`toolsearch_http_sessions_expired_total{reason="idle"} 0`,
		`toolsearch_skill_files_read_total{outcome="verified"} 0`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "toolsearch_enrich_") || strings.Contains(out, `protocol="1999-01-01"`) {
		t.Errorf("enrichment metrics before EnrichOn, or a series for an unknown version:\n%s", out)
	}
	if got := m.CallCount("a", "ok"); got != 1 {
		t.Errorf("CallCount = %v, want 1", got)
	}

	m.EnrichOn([]string{"idle", "running"})
	m.EnrichOn([]string{"other"}) // a second call does nothing
	m.EnrichCounted(enrich.Result{Progress: enrich.Progress{Written: 2, Failed: 1, InputTokens: 100, OutputTokens: 20, Requests: 3}})
	m.SetEnrich(Enrich{RemainingTools: 7, SpentTokens: 120, Pending: 4, State: "running"})
	out = text(t, m)
	for _, want := range []string{
		`toolsearch_enrich_tools_total{outcome="written"} 2`, `toolsearch_enrich_tools_total{outcome="rejected"} 0`,
		`toolsearch_enrich_tokens_total{direction="input"} 100`, "toolsearch_enrich_requests_total 3",
		`toolsearch_enrich_budget_remaining{unit="tools"} 7`, `toolsearch_enrich_spent_today{unit="tokens"} 120`,
		"toolsearch_enrich_tools_without_hints 4",
		`toolsearch_enrich_state{state="running"} 1`, `toolsearch_enrich_state{state="idle"} 0`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, `state="other"`) {
		t.Errorf("a second EnrichOn registered its states")
	}
}
