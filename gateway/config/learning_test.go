package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseLearning(t *testing.T) {
	t.Parallel()
	def := Learning{HalfLife: DefaultLearningHalfLife, MaxEntries: DefaultLearningMaxEntries}
	tests := []struct {
		name    string
		gw      string
		want    Learning // compared when wantErr is ""
		wantErr string   // substring of the error
	}{
		{name: "absent", gw: `{}`, want: def},
		{name: "on with defaults", gw: `{"learning": {"enabled": true}}`, want: Learning{Enabled: true, HalfLife: DefaultLearningHalfLife, MaxEntries: DefaultLearningMaxEntries}},
		{name: "everything", gw: `{"learning": {"enabled": true, "halfLife": "720h", "maxEntries": 500}}`,
			want: Learning{Enabled: true, HalfLife: 720 * time.Hour, MaxEntries: 500}},
		{name: "seconds", gw: `{"learning": {"halfLife": 3600}}`, want: Learning{HalfLife: time.Hour, MaxEntries: DefaultLearningMaxEntries}},
		{name: "null half-life", gw: `{"learning": {"halfLife": null}}`, want: def},
		{name: "half-life too short", gw: `{"learning": {"halfLife": "5s"}}`, wantErr: `"toolsearch.learning.halfLife": 5s is out of range 1m0s..8760h0m0s`},
		{name: "half-life too long", gw: `{"learning": {"halfLife": "9000h"}}`, wantErr: "out of range"},
		{name: "half-life negative", gw: `{"learning": {"halfLife": -1}}`, wantErr: "toolsearch.learning.halfLife"},
		{name: "half-life not a duration", gw: `{"learning": {"halfLife": "a week"}}`, wantErr: `"a week" is not a duration`},
		{name: "half-life wrong type", gw: `{"learning": {"halfLife": true}}`, wantErr: "want a number of seconds or a duration string"},
		{name: "no entries", gw: `{"learning": {"maxEntries": 0}}`, wantErr: `"toolsearch.learning.maxEntries": 0 is out of range 1..100000`},
		{name: "too many entries", gw: `{"learning": {"maxEntries": 100001}}`, wantErr: "out of range"},
		{name: "enabled not a bool", gw: `{"learning": {"enabled": "yes"}}`, wantErr: "toolsearch.learning.enabled"},
		{name: "unknown key", gw: `{"learning": {"enable": true}}`, wantErr: `"enabled"`},
		{name: "not an object", gw: `{"learning": true}`, wantErr: "toolsearch.learning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("x.json", []byte(`{"toolsearch": `+tc.gw+`}`), env(nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Gateway.Learning; got != tc.want {
				t.Errorf("learning = %+v, want %+v", got, tc.want)
			}
		})
	}
}
