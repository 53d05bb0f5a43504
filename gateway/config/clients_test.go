package config

import (
	"strings"
	"testing"
	"time"
)

// TestClientsAndFirstListWait checks toolsearch.clients and
// limits.firstListWait: read when well-formed, refused with an error
// naming the field otherwise.
func TestClientsAndFirstListWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, gw  string
		wait      time.Duration
		clients   map[string]string
		wantError string
	}{
		{"defaults", `{}`, DefaultFirstListWait, nil, ""},
		{"a duration", `{"limits": {"firstListWait": "1500ms"}}`, 1500 * time.Millisecond, nil, ""},
		{"seconds", `{"limits": {"firstListWait": 2}}`, 2 * time.Second, nil, ""},
		{"zero turns it off", `{"limits": {"firstListWait": 0}}`, 0, nil, ""},
		{"clients", `{"clients": {"claude-code": "Search", "my-agent": "full"}}`, DefaultFirstListWait,
			map[string]string{"claude-code": "search", "my-agent": "full"}, ""},
		{"too long", `{"limits": {"firstListWait": "2m"}}`, 0, nil, `"toolsearch.limits.firstListWait": 2m0s is longer than a minute`},
		{"negative", `{"limits": {"firstListWait": "-1s"}}`, 0, nil, `"toolsearch.limits.firstListWait": "-1s" is negative`},
		{"not a duration", `{"limits": {"firstListWait": "soon"}}`, 0, nil, `"toolsearch.limits.firstListWait"`},
		{"unknown exposure", `{"clients": {"claude-code": "everything"}}`, 0, nil, `"toolsearch.clients.claude-code": unknown exposure "everything"`},
		{"empty name", `{"clients": {" ": "full"}}`, 0, nil, `"toolsearch.clients": a client name is empty`},
		{"not an object", `{"clients": ["claude-code"]}`, 0, nil, `toolsearch.clients`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("t.json", []byte(`{"mcpServers": {}, "toolsearch": `+c.gw+`}`), func(string) (string, bool) { return "", false })
			if c.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantError) {
					t.Fatalf("error %v, want one holding %s", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Gateway.Limits.FirstListWait != c.wait {
				t.Errorf("firstListWait %v, want %v", cfg.Gateway.Limits.FirstListWait, c.wait)
			}
			if len(cfg.Gateway.Clients) != len(c.clients) {
				t.Fatalf("clients %v, want %v", cfg.Gateway.Clients, c.clients)
			}
			for k, v := range c.clients {
				if cfg.Gateway.Clients[k] != v {
					t.Errorf("clients[%s] = %q, want %q", k, cfg.Gateway.Clients[k], v)
				}
			}
		})
	}
}
