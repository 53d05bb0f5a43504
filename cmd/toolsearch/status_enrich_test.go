package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
)

// TestStatusEnrich: status says in one line whether background
// enrichment can run and, when serve ran it with the same state
// directory, what its last run left: its state and reason, today's spend
// against the budget, the day's outcomes and the last error; in text and
// in JSON. It never asks a model.
func TestStatusEnrich(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC().Format(time.DateOnly)
	next := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	record := map[string]any{"version": 1, "day": today, "spent": map[string]any{"tools": 40, "tokens": 18000},
		"written": 38, "rejected": 2, "failed": 0, "state": "backoff",
		"reason":    "the provider refused the key: HTTP 401 Unauthorized: invalid x-api-key; next try at 10:00:00 UTC",
		"lastError": "the provider refused the key: HTTP 401 Unauthorized: invalid x-api-key", "lastErrorAt": next.Add(-time.Hour), "nextRun": next}
	tests := []struct {
		name    string
		enrich  map[string]any
		record  map[string]any
		text    []string
		state   string
		spentTo int64
	}{
		{name: "off", text: []string{"background enrichment: off"}, state: gateway.EnrichOff},
		{name: "the key missing",
			enrich: map[string]any{"enabled": true, "provider": "anthropic", "apiKeyEnv": "TOOLSEARCH_STATUS_TEST_UNSET_KEY"},
			text:   []string{"background enrichment (provider anthropic, its default model): unavailable: the anthropic key is missing: $TOOLSEARCH_STATUS_TEST_UNSET_KEY is not set"},
			state:  gateway.EnrichUnavailable},
		{name: "never run", enrich: map[string]any{"enabled": true},
			text:  []string{"background enrichment (provider sampling, its default model): waiting: serve has not run enrichment with this state directory yet"},
			state: gateway.EnrichWaiting},
		{name: "what serve's last run left",
			enrich: map[string]any{"enabled": true, "provider": "openai", "baseURL": "http://127.0.0.1:9/v1", "dailyBudget": map[string]any{"tools": 100}},
			record: record,
			text: []string{"background enrichment (provider openai, its default model): backoff: the provider refused the key: HTTP 401 Unauthorized: invalid x-api-key; next try at 10:00:00 UTC",
				"today (UTC " + today + "): 40 of 100 tools, 18000 of 1000000 tokens; 38 tools written, 2 rejected, 0 failed",
				"next run: " + next.Format("2006-01-02 15:04:05 UTC"),
				"last error (", "): the provider refused the key: HTTP 401"},
			state: gateway.EnrichBackoff, spentTo: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			if tc.record != nil {
				b, _ := json.Marshal(tc.record)
				if err := os.MkdirAll(state, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, "enrich.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ts := map[string]any{}
			if tc.enrich != nil {
				ts["enrich"] = tc.enrich
			}
			p := writeConfigJSON(t, filepath.Join(dir, "ts.json"), map[string]any{"mcpServers": map[string]any{}, "toolsearch": ts})
			code, out, errs := runCLI(t, "status", "-c", p, "--state-dir", state)
			if code != exitOK {
				t.Fatalf("exit %d: %s%s", code, out, errs)
			}
			for _, want := range append(tc.text, "search hints: ") {
				if !strings.Contains(out, want) {
					t.Errorf("status lacks %q:\n%s", want, out)
				}
			}
			code, out, errs = runCLI(t, "status", "-c", p, "--state-dir", state, "--json")
			if code != exitOK {
				t.Fatalf("exit %d: %s%s", code, out, errs)
			}
			var st statusJSON
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatal(err)
			}
			e := st.Enrich
			if e.State != tc.state || e.Spent.Tools != tc.spentTo || e.Tools == 0 {
				t.Errorf("enrich %+v, want state %s, %d tools spent, and the built-in tools counted", e, tc.state, tc.spentTo)
			}
			if tc.record != nil && (e.Remaining.Tools != 60 || e.Today.Rejected != 2 || e.NextRun == nil || !strings.Contains(e.LastError, "401")) {
				t.Errorf("enrich %+v: want what the record holds", e)
			}
			// status wrote nothing to the state directory's record.
			if tc.record != nil {
				b, _ := os.ReadFile(filepath.Join(state, "enrich.json"))
				want, _ := json.Marshal(tc.record)
				if string(b) != string(want) {
					t.Errorf("status changed the record:\n%s", b)
				}
			}
		})
	}
}
