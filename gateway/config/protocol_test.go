package config

import (
	"errors"
	"strings"
	"testing"
)

// TestProtocolVersion: "latest" and no value both mean the newest version
// (empty); a known version pins the server; anything else is an error that
// names the server, the field and the versions there are.
func TestProtocolVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value   string
		want    string
		wantErr string
	}{
		{``, "", ""},
		{`"latest"`, "", ""},
		{`"Latest"`, "", ""},
		{`"2025-11-25"`, "2025-11-25", ""},
		{`"2026-07-28"`, "2026-07-28", ""},
		{`" 2024-11-05 "`, "2024-11-05", ""},
		{`"2027-01-01"`, "", `unknown protocol version "2027-01-01"`},
		{`"newest"`, "", `want latest or one of 2026-07-28, 2025-11-25`},
		{`7`, "", "want string"},
	} {
		t.Run(c.value, func(t *testing.T) {
			t.Parallel()
			entry := `{"command": "x"}`
			if c.value != "" {
				entry = `{"command": "x", "protocolVersion": ` + c.value + `}`
			}
			cfg, err := Parse("p.json", []byte(`{"mcpServers": {"a": `+entry+`}}`), nil)
			if c.wantErr != "" {
				var ce *Error
				if !errors.As(err, &ce) || ce.Server != "a" || ce.Field != "protocolVersion" || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want one at a.protocolVersion saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers[0].ProtocolVersion; got != c.want {
				t.Errorf("ProtocolVersion = %q, want %q", got, c.want)
			}
		})
	}
}
