package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/enrich/enrichtest"
)

// TestEnrichDailyBudget: a gateway sends no more tools a day than the
// budget allows, says so (one line, with when it resumes), keeps the
// spend across a restart, and starts again on a new UTC day.
func TestEnrichDailyBudget(t *testing.T) {
	t.Parallel()
	stand := enrichtest.New(t, enrichtest.Anthropic, goodAnswers)
	state := t.TempDir()
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, state,
		map[string]any{"batch": 1, "dailyBudget": map[string]any{"tools": 3}}, nil)
	start := func() *enrichRig {
		return startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{}, nil, true)
	}
	wait := func(r *enrichRig) EnrichStatus {
		return r.waitEnrich(t, "the budget spent", func(s EnrichStatus) bool { return s.State == EnrichBudgetExhausted })
	}
	r := start()
	st := wait(r)
	if n := len(stand.Requests()); n != 3 {
		t.Errorf("%d requests under a budget of 3 tools (one a request)", n)
	}
	if st.Spent.Tools != 3 || st.Remaining.Tools != 0 || !strings.Contains(st.Reason, "today's budget") ||
		!strings.Contains(st.Reason, "3 of 3 tools") || st.NextRun == nil || st.NextRun.UTC().Hour() != 0 {
		t.Errorf("status %+v", st)
	}
	if _, h := r.health(t); h == nil || h.State != EnrichBudgetExhausted || h.Remaining.Tools != 0 {
		t.Errorf("/healthz enrich %+v", h)
	}
	_, metrics := get(t, r.base, "/metrics")
	if !strings.Contains(metrics, `toolsearch_enrich_budget_remaining{unit="tools"} 0`) || !strings.Contains(metrics, `toolsearch_enrich_state{state="budget_exhausted"} 1`) {
		t.Error("/metrics does not show the spent budget")
	}
	// The state is shown a moment before the record holding it is written.
	var rec enrichRecord
	var err error
	waitFor(t, "the record of the spent budget", 20*time.Second, func() bool {
		rec, err = loadEnrichRecord(state)
		return err == nil && rec.State == EnrichBudgetExhausted
	})
	if rec.Spent.Tools != 3 || rec.Day != time.Now().UTC().Format(time.DateOnly) {
		t.Fatalf("the record: %+v, %v", rec, err)
	}
	// A restart on the same directory sends nothing.
	r.stop()
	before := len(stand.Requests())
	r2 := start()
	wait(r2)
	if n := len(stand.Requests()); n != before {
		t.Errorf("a restart sent %d more tools on a spent budget", n-before)
	}
	r2.stop()
	// A new day: the record of yesterday counts nothing.
	if err := setEnrichRecordDay(state, time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}
	r3 := start()
	wait(r3)
	if n := len(stand.Requests()); n != before+3 {
		t.Errorf("on a new day %d more requests, want 3", n-before)
	}
	sent := map[string]int{}
	for _, q := range stand.Requests() {
		for _, n := range q.Tools {
			sent[n]++
		}
	}
	for n, k := range sent {
		if k != 1 {
			t.Errorf("%s sent %d times", n, k)
		}
	}
	r3.stop()
	if files, _ := filepath.Glob(filepath.Join(state, ".*.tmp")); len(files) > 0 {
		t.Errorf("temporary files left: %v", files)
	}
}

// enrichRecord is what the tests read of the state directory's
// enrich.json, which background enrichment keeps (package enrichment).
type enrichRecord struct {
	Day   string       `json:"day"`
	Spent EnrichAmount `json:"spent"`
	State string       `json:"state"`
}

// loadEnrichRecord reads the enrichment record of the state directory.
func loadEnrichRecord(state string) (enrichRecord, error) {
	var r enrichRecord
	data, err := os.ReadFile(filepath.Join(state, "enrich.json"))
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	return r, err
}

// setEnrichRecordDay makes the enrichment record of the state directory
// a record of day, all else kept.
func setEnrichRecordDay(state, day string) error {
	path := filepath.Join(state, "enrich.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	r["day"] = day
	if data, err = json.Marshal(r); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
