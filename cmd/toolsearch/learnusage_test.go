package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	learnusage "github.com/toolsearch/toolsearch/core/usage"
)

// TestUsageShowReset runs usage show and reset over a state directory
// with a learned record, then over the cleared and a corrupt one.
func TestUsageShowReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := learnusage.New(learnusage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Record([]string{"creat", "issu"}, "github/create_issue", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record([]string{"post", "messag"}, "slack/post_message", time.Now()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, learnusage.FileName)
	if err := s.Save(file); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "cfg.json", fmt.Sprintf(`{"mcpServers": {}, "toolsearch": {"stateDir": %q, "learning": {"enabled": true, "halfLife": "48h"}}}`, dir))

	code, out, errs := runCLI(t, "usage", "show", "-c", cfg)
	checkCLI(t, code, exitOK, out, errs, []string{file, "2 entries (learning on, half-life 48h0m0s)", "3.00  github/create_issue", "creat issu", "slack/post_message"}, nil)

	code, out, errs = runCLI(t, "usage", "show", "-c", cfg, "-n", "1", "--json")
	checkCLI(t, code, exitOK, out, errs, nil, nil)
	var js struct {
		Total   int `json:"total"`
		Entries []struct {
			Tool     string   `json:"tool"`
			Terms    []string `json:"terms"`
			Strength float64  `json:"strength"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || js.Total != 2 || len(js.Entries) != 1 || js.Entries[0].Tool != "github/create_issue" {
		t.Fatalf("JSON %v: %s", err, out)
	}

	code, out, errs = runCLI(t, "usage", "reset", "-c", cfg)
	checkCLI(t, code, exitOK, out, errs, []string{"removed " + file}, nil)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}
	code, out, errs = runCLI(t, "usage", "reset", "--state-dir", dir)
	checkCLI(t, code, exitOK, out, errs, []string{"Nothing to clear"}, nil)
	code, out, errs = runCLI(t, "usage", "show", "--state-dir", dir, "-c", writeFile(t, "off.json", `{"mcpServers": {}}`))
	checkCLI(t, code, exitOK, out, errs, []string{"Nothing learned yet", "Learning is off"}, nil)

	if err := os.WriteFile(file, []byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":[],"tool":"a/b","weight":1,"at":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "usage", "show", "--state-dir", dir)
	checkCLI(t, code, exitUsage, out, errs, nil, []string{"entry 0: 0 terms", "usage reset removes the file"})

	for _, bad := range [][]string{{"usage"}, {"usage", "clear"}, {"usage", "show", "extra"}, {"usage", "show", "-n", "-1"}} {
		code, out, errs = runCLI(t, bad...)
		checkCLI(t, code, exitUsage, out, errs, nil, nil)
	}
	code, out, errs = runCLI(t, "usage", "show", "-c", filepath.Join(dir, "none.json"))
	checkCLI(t, code, exitUsage, out, errs, nil, []string{"does not exist"})
}
