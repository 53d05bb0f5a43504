package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDashboard(t *testing.T) {
	t.Parallel()
	def := DefaultDashboard()
	tests := []struct {
		name    string
		gw      string
		want    Dashboard // compared when wantErr is ""
		wantErr string    // substring of the error
	}{
		{name: "absent", gw: `{}`, want: def},
		{name: "empty", gw: `{"dashboard": {}}`, want: def},
		{name: "off", gw: `{"dashboard": {"enabled": false}}`, want: Dashboard{Keep: DefaultDashboardKeep, Retention: DefaultDashboardRetention}},
		{name: "everything", gw: `{"dashboard": {"enabled": true, "keep": 50, "retention": "10m", "recordArguments": true}}`,
			want: Dashboard{Enabled: true, Keep: 50, Retention: 10 * time.Minute, RecordArguments: true}},
		{name: "retention in seconds", gw: `{"dashboard": {"retention": 90}}`,
			want: Dashboard{Enabled: true, Keep: DefaultDashboardKeep, Retention: 90 * time.Second}},
		{name: "keep zero", gw: `{"dashboard": {"keep": 0}}`, wantErr: `toolsearch.dashboard.keep": want a count of events from 1`},
		{name: "keep huge", gw: `{"dashboard": {"keep": 100000000}}`, wantErr: "toolsearch.dashboard.keep"},
		{name: "retention zero", gw: `{"dashboard": {"retention": 0}}`, wantErr: "want a positive time"},
		{name: "retention negative", gw: `{"dashboard": {"retention": "-5m"}}`, wantErr: "toolsearch.dashboard.retention"},
		{name: "retention words", gw: `{"dashboard": {"retention": "an hour"}}`, wantErr: "toolsearch.dashboard.retention"},
		{name: "retention over a day", gw: `{"dashboard": {"retention": "48h"}}`, wantErr: "toolsearch.dashboard.retention"},
		{name: "wrong type", gw: `{"dashboard": {"enabled": "yes"}}`, wantErr: "toolsearch.dashboard.enabled"},
		{name: "not an object", gw: `{"dashboard": true}`, wantErr: "toolsearch.dashboard"},
		{name: "typo", gw: `{"dashboard": {"recordArgument": true}}`, wantErr: `did you mean "recordArguments"`},
		{name: "typo of the key", gw: `{"dashbord": {}}`, wantErr: `did you mean "dashboard"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("x.json", []byte(`{"toolsearch": `+tc.gw+`}`), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Gateway.Dashboard != tc.want {
				t.Errorf("dashboard %+v, want %+v", cfg.Gateway.Dashboard, tc.want)
			}
		})
	}
	if d := Default().Gateway.Dashboard; d != def {
		t.Errorf("Default() has dashboard %+v, want %+v", d, def)
	}
}
