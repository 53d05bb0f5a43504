package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxDuration is the longest length of time a config file may give.
const MaxDuration = 24 * time.Hour

// Duration is a length of time in a config file, written either as a
// number of seconds (30, 0.5) or as a Go duration string ("30s", "1m30s",
// "250ms"). Every duration in a config follows one rule: it is from 0 to 24
// hours (MaxDuration). null, like a key left out, means the field's
// default; what 0 means is up to the field (the default for most, "do not
// wait" for limits.firstListWait), and a field that needs a positive time
// says so when given 0.
//
// Anything else is an error that says what was wrong: a negative time, one
// over 24 hours, a string that is not a duration ("30 seconds"), or a JSON
// value of another type.
type Duration time.Duration

// UnmarshalJSON reads a Duration by the rule above; null leaves d as it is.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := parseDurationJSON(b)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes d as a Go duration string ("1m30s"), which
// UnmarshalJSON reads back to the same value.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// String is d as a Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// ParseDuration reads the JSON of a Duration. An absent value (empty) or
// null is 0 with no error, for the caller's default.
func ParseDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	return parseDurationJSON(raw)
}

func parseDurationJSON(raw []byte) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		if secs < 0 || secs > MaxDuration.Seconds() || math.IsNaN(secs) {
			return 0, fmt.Errorf("%v seconds is out of range (0 to %v seconds)", secs, MaxDuration.Seconds())
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, errors.New(`want a duration such as "30s" or a number of seconds`)
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"30s\"", clip(s))
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", clip(s))
	}
	if d > MaxDuration {
		return 0, fmt.Errorf("%q is longer than %v", clip(s), MaxDuration)
	}
	return d, nil
}

// clip bounds text from a config before an error repeats it.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
