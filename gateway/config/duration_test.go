package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDuration: the one rule for durations accepts what the two readers it
// replaced accepted (seconds as a number, Go duration strings, 0) and
// refuses the rest with an error that says what was wrong.
func TestDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string // "" when in is accepted
	}{
		{in: `30`, want: 30 * time.Second},
		{in: `0.5`, want: 500 * time.Millisecond},
		{in: `0`, want: 0},
		{in: `86400`, want: 24 * time.Hour},
		{in: `"30s"`, want: 30 * time.Second},
		{in: `"1m30s"`, want: 90 * time.Second},
		{in: `"250ms"`, want: 250 * time.Millisecond},
		{in: `" 2s "`, want: 2 * time.Second},
		{in: `"0s"`, want: 0},
		{in: `"24h"`, want: 24 * time.Hour},
		{in: `-1`, err: "-1 seconds is out of range"},
		{in: `86400.5`, err: "out of range"},
		{in: `1e400`, err: `want a duration such as "30s"`},
		{in: `"-1s"`, err: `"-1s" is negative`},
		{in: `"25h"`, err: `"25h" is longer than 24h0m0s`},
		{in: `"30 seconds"`, err: `"30 seconds" is not a duration`},
		{in: `"30"`, err: `"30" is not a duration`},
		{in: `""`, err: `"" is not a duration`},
		{in: `true`, err: `want a duration such as "30s" or a number of seconds`},
		{in: `{"s": 1}`, err: `want a duration`},
		{in: `["1s"]`, err: `want a duration`},
		{in: `"` + strings.Repeat("9", 200) + `s"`, err: "…"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(json.RawMessage(tc.in))
			var d Duration
			uerr := json.Unmarshal([]byte(tc.in), &d)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseDuration(%s) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				if uerr == nil || uerr.Error() != err.Error() {
					t.Errorf("Duration.UnmarshalJSON(%s) = %v; want %v", tc.in, uerr, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDuration(%s) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if uerr != nil || time.Duration(d) != tc.want {
				t.Errorf("Duration.UnmarshalJSON(%s) = %v, %v; want %v", tc.in, d, uerr, tc.want)
			}
		})
	}
}

// TestDurationAbsent: no value and null are 0 with no error (the field's
// default), and null leaves a Duration as it was.
func TestDurationAbsent(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "null"} {
		if d, err := ParseDuration(json.RawMessage(raw)); d != 0 || err != nil {
			t.Errorf("ParseDuration(%q) = %v, %v", raw, d, err)
		}
	}
	var v struct{ D Duration }
	v.D = Duration(time.Minute)
	if err := json.Unmarshal([]byte(`{"D": null}`), &v); err != nil || time.Duration(v.D) != time.Minute {
		t.Errorf("null changed a Duration: %v, %v", v.D, err)
	}
}

// TestConfigDurations: every duration key of a config file follows the
// rule, and an error names the key.
func TestConfigDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, errKey string
	}{
		{"server start timeout over a day", `{"mcpServers": {"a": {"command": "x", "startTimeout": "25h"}}}`, "startTimeout"},
		{"call timeout negative", `{"toolsearch": {"limits": {"callTimeout": -5}}}`, "limits.callTimeout"},
		{"shutdown timeout as text", `{"toolsearch": {"shutdownTimeout": "ten seconds"}}`, "shutdownTimeout"},
		{"session idle timeout of another type", `{"toolsearch": {"http": {"sessionIdleTimeout": true}}}`, "http.sessionIdleTimeout"},
		{"every form accepted", `{"mcpServers": {"a": {"command": "x", "startTimeout": 0.25}}, "toolsearch": {"shutdownTimeout": "24h", "limits": {"callTimeout": "90s", "firstListWait": 0}}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("toolsearch.json", []byte(tc.doc), func(string) (string, bool) { return "", false })
			if tc.errKey == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errKey) {
				t.Fatalf("Parse = %v, want an error naming %s", err, tc.errKey)
			}
		})
	}
}

// FuzzDuration: no input panics; an accepted one is within 0 and
// MaxDuration, and writing it out reads back the same.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{`30`, `"1m30s"`, `-1`, `"25h"`, `null`, `"x"`, `1e308`, `"9223372036854775807ns"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ParseDuration(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if d < 0 || d > MaxDuration {
			t.Fatalf("%s read as %v, out of range", in, d)
		}
		b, err := json.Marshal(Duration(d))
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseDuration(b)
		if err != nil || back != d {
			t.Fatalf("%v wrote %s, read back %v, %v", d, b, back, err)
		}
	})
}
