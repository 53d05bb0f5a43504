package config

// The learning settings: ranking that learns from which tool is called
// after a search (package core/usage). Under the "toolsearch" key:
//
//	"learning": {
//	  "enabled": true,      // off by default
//	  "halfLife": "168h",   // how long a recorded call takes to count half
//	  "maxEntries": 10000   // (query terms → tool) pairs kept; the weakest go first
//	}
//
// halfLife is a duration like every other (a number of seconds or a Go
// duration string), but from a minute to a year (8760h): learning is
// about weeks, where other durations stop at a day. The record lives in
// the state directory's usage.json (docs/learning.md).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/usage"
)

// Defaults and bounds of the learning settings (those of core/usage).
const (
	DefaultLearningHalfLife   = usage.DefaultHalfLife
	MinLearningHalfLife       = usage.MinHalfLife
	MaxLearningHalfLife       = usage.MaxHalfLife
	DefaultLearningMaxEntries = usage.DefaultMaxEntries
	MaxLearningMaxEntries     = usage.MaxMaxEntries
)

// Learning configures ranking that learns from use (toolsearch.learning).
// The zero value is learning off.
type Learning struct {
	// Enabled turns learning on; it is off by default.
	Enabled bool
	// HalfLife is how long a recorded call takes to count half.
	HalfLife time.Duration
	// MaxEntries caps the (query terms → tool) pairs kept.
	MaxEntries int
}

// DefaultLearning is learning as a configuration without
// toolsearch.learning has it: off, with the default half-life and size.
func DefaultLearning() Learning {
	return Learning{HalfLife: DefaultLearningHalfLife, MaxEntries: DefaultLearningMaxEntries}
}

// rawLearningTop is the JSON shape of the learning settings, as they sit
// in the "toolsearch" object.
type rawLearningTop struct {
	Learning *struct {
		Enabled    bool            `json:"enabled"`
		HalfLife   json.RawMessage `json:"halfLife"`
		MaxEntries *int            `json:"maxEntries"`
	} `json:"learning"`
}

// parseLearning reads toolsearch.learning from raw, the "toolsearch"
// object.
func parseLearning(g *Gateway, raw json.RawMessage) error {
	errAt := func(field string, err error) error { return &Error{Field: "toolsearch.learning" + field, Err: err} }
	var rt rawLearningTop
	if err := json.Unmarshal(raw, &rt); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: "toolsearch." + te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	l := DefaultLearning()
	if rl := rt.Learning; rl != nil {
		l.Enabled = rl.Enabled
		if len(rl.HalfLife) > 0 && string(rl.HalfLife) != "null" {
			d, err := parseHalfLife(rl.HalfLife)
			if err != nil {
				return errAt(".halfLife", err)
			}
			l.HalfLife = d
		}
		if rl.MaxEntries != nil {
			if *rl.MaxEntries < 1 || *rl.MaxEntries > MaxLearningMaxEntries {
				return errAt(".maxEntries", fmt.Errorf("%d is out of range 1..%d", *rl.MaxEntries, MaxLearningMaxEntries))
			}
			l.MaxEntries = *rl.MaxEntries
		}
	}
	g.Learning = l
	return nil
}

// parseHalfLife reads a half-life: a number of seconds or a Go duration
// string, from MinLearningHalfLife to MaxLearningHalfLife.
func parseHalfLife(raw json.RawMessage) (time.Duration, error) {
	var d time.Duration
	var secs float64
	var s string
	switch {
	case json.Unmarshal(raw, &secs) == nil:
		if math.IsNaN(secs) || secs < 0 || secs > MaxLearningHalfLife.Seconds() {
			return 0, fmt.Errorf("%v seconds is out of range %v..%v", secs, MinLearningHalfLife, MaxLearningHalfLife)
		}
		d = time.Duration(secs * float64(time.Second))
	case json.Unmarshal(raw, &s) == nil:
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration: want a number of seconds or a string such as \"168h\"", s)
		}
		d = v
	default:
		return 0, fmt.Errorf("want a number of seconds or a duration string such as \"168h\", got %s", raw)
	}
	if d < MinLearningHalfLife || d > MaxLearningHalfLife {
		return 0, fmt.Errorf("%v is out of range %v..%v", d, MinLearningHalfLife, MaxLearningHalfLife)
	}
	return d, nil
}
