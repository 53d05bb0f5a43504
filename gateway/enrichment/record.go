package enrichment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/internal/safefile"
)

// The state directory's enrich.json is what background enrichment keeps
// across restarts: what it spent on the current UTC day (so that a
// restart does not reset the daily budget), what came of that day's
// tools, and the state and last error of the last run, which toolsearch
// status shows. It is written whole and atomically (safefile.WriteFile)
// by the gateway holding the state directory's run lock (lock.go),
// so two gateways sharing the directory never write it at once.
//
//	{"version": 1, "day": "2026-12-03", "spent": {"tools": 40, "tokens": 18000},
//	 "written": 38, "rejected": 2, "failed": 0,
//	 "state": "idle", "reason": "", "lastRun": "…", "nextRun": "…",
//	 "lastError": "…", "lastErrorAt": "…"}

// recordName is the state directory's enrichment record.
const recordName = "enrich.json"

// recordVersion is the version of the record's layout.
const recordVersion = 1

// maxRecordBytes bounds the record read back.
const maxRecordBytes = 1 << 20

// record is the content of enrich.json.
type record struct {
	Version int `json:"version"`
	// Day is the UTC day (YYYY-MM-DD) Spent and the counts are of.
	Day   string `json:"day"`
	Spent Amount `json:"spent"`
	// Written, Rejected and Failed count that day's tools by outcome.
	Written  int64 `json:"written"`
	Rejected int64 `json:"rejected"`
	Failed   int64 `json:"failed"`
	// State and Reason are the state the last run left (Status).
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	// LastRun is when the last run ended; NextRun when the next is due
	// (nil: at the next change of the catalog).
	LastRun *time.Time `json:"lastRun,omitempty"`
	NextRun *time.Time `json:"nextRun,omitempty"`
	// LastError is the last problem (secrets hidden), at LastErrorAt.
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
}

// recordPath is the record's path in the state directory dir.
func recordPath(dir string) string { return filepath.Join(dir, recordName) }

// loadRecord reads the record at path. A missing file is an empty
// record; one that cannot be read is an empty record and an error (the
// next write replaces it).
func loadRecord(path string) (record, error) {
	data, err := safefile.ReadFile(path, maxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return record{Version: recordVersion}, nil
	}
	if err != nil {
		return record{Version: recordVersion}, fmt.Errorf("enrichment record: %w", err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return record{Version: recordVersion}, fmt.Errorf("enrichment record %s: %w", path, err)
	}
	if r.Version != recordVersion {
		return record{Version: recordVersion}, fmt.Errorf("enrichment record %s: version %d, want %d", path, r.Version, recordVersion)
	}
	if r.Spent.Tools < 0 || r.Spent.Tokens < 0 {
		r.Spent = Amount{}
	}
	return r, nil
}

// save writes the record to path atomically.
func (r record) save(path string) error {
	r.Version = recordVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("enrichment record: %w", err)
	}
	return safefile.WriteFile(path, append(data, '\n'), 0o644)
}

// today is the record as of day: a record of an earlier day starts the
// day's spend and counts from zero (its state and last error stay).
func (r record) today(day string) record {
	if r.Day != day {
		r.Day, r.Spent, r.Written, r.Rejected, r.Failed = day, Amount{}, 0, 0, 0
	}
	return r
}

// recordFile reads and writes enrich.json for one gateway; its mutex
// keeps the gateway's own changes from crossing (the run lock keeps other
// gateways' out).
type recordFile struct {
	path string
	mu   sync.Mutex
}

// load reads the record; one that cannot be read is empty (the next
// update replaces it).
func (f *recordFile) load() record {
	r, _ := loadRecord(f.path)
	return r
}

// update reads the record as of day, changes it with change, and writes
// it back; it returns the record written.
func (f *recordFile) update(day string, change func(*record)) (record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.load().today(day)
	change(&r)
	return r, r.save(f.path)
}
