package config

// The dashboard settings: what serve --http shows at /ui. Under the
// "toolsearch" key:
//
//	"dashboard": {
//	  "enabled": true,          // false serves no /ui and records nothing
//	  "keep": 1000,             // events kept in memory, oldest dropped first
//	  "retention": "1h",        // events older than this are dropped
//	  "recordArguments": false  // true keeps tool calls' arguments and results
//	}
//
// docs/dashboard.md describes the pages.

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Defaults of the dashboard settings.
const (
	DefaultDashboardKeep      = 1000
	DefaultDashboardRetention = time.Hour
	// MaxDashboardKeep bounds keep: the events are held in memory.
	MaxDashboardKeep = 100_000
)

// Dashboard configures the live dashboard at /ui (toolsearch.dashboard).
type Dashboard struct {
	// Enabled serves the dashboard over HTTP; it is on unless turned off.
	Enabled bool
	// Keep bounds the events kept in memory; the oldest go first.
	Keep int
	// Retention is how long an event is kept.
	Retention time.Duration
	// RecordArguments keeps the arguments and results of tool calls. Off,
	// nothing of either is kept or shown.
	RecordArguments bool
}

// DefaultDashboard is the dashboard of a file that does not configure it.
func DefaultDashboard() Dashboard {
	return Dashboard{Enabled: true, Keep: DefaultDashboardKeep, Retention: DefaultDashboardRetention}
}

// rawDashboardTop is the JSON shape of the dashboard settings, as they sit
// in the "toolsearch" object.
type rawDashboardTop struct {
	Dashboard *struct {
		Enabled         *bool           `json:"enabled"`
		Keep            *int            `json:"keep"`
		Retention       json.RawMessage `json:"retention"`
		RecordArguments bool            `json:"recordArguments"`
	} `json:"dashboard"`
}

// parseDashboard reads toolsearch.dashboard from the top-level object.
func parseDashboard(cfg *Config, top map[string]json.RawMessage) *Error {
	cfg.Gateway.Dashboard = DefaultDashboard()
	raw, ok := top["toolsearch"]
	if !ok || string(raw) == "null" {
		return nil
	}
	errAt := func(field string, err error) *Error { return &Error{Field: "toolsearch.dashboard" + field, Err: err} }
	var rt rawDashboardTop
	if err := json.Unmarshal(raw, &rt); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: "toolsearch." + te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	rd := rt.Dashboard
	if rd == nil {
		return nil
	}
	d := &cfg.Gateway.Dashboard
	if rd.Enabled != nil {
		d.Enabled = *rd.Enabled
	}
	if rd.Keep != nil {
		if *rd.Keep < 1 || *rd.Keep > MaxDashboardKeep {
			return errAt(".keep", fmt.Errorf("want a count of events from 1 to %d, got %d", MaxDashboardKeep, *rd.Keep))
		}
		d.Keep = *rd.Keep
	}
	ret, err := ParseDuration(rd.Retention)
	if err != nil {
		return errAt(".retention", err)
	}
	if len(rd.Retention) > 0 && string(rd.Retention) != "null" && ret == 0 {
		return errAt(".retention", errors.New(`want a positive time, such as "1h"`))
	}
	if ret > 0 {
		d.Retention = ret
	}
	d.RecordArguments = rd.RecordArguments
	return nil
}
