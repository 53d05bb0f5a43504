package builtin

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecide: each rule of Decide, one case per rule, each tool's reason
// checked; the same facts always give the same answer.
func TestDecide(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	client := t.TempDir()
	missing := filepath.Join(ws, "no-such-folder")
	roots := func(dirs ...string) string { b, _ := json.Marshal(dirs); return string(b) }
	type want struct {
		on     bool
		reason string
	}
	for _, tc := range []struct {
		name      string
		raw       string
		client    Client
		resources bool
		want      map[string]want
	}{
		{name: "defaults, no roots", raw: ``, want: map[string]want{
			Glob:          {false, "no roots"},
			Grep:          {false, "no roots"},
			LSP:           {false, "no language server"},
			WebFetch:      {false, "off until configured"},
			WebSearch:     {false, "off until configured"},
			ListResources: {false, "no upstream server declares resources"},
			ReadResource:  {false, "no upstream server declares resources"},
		}},
		{name: "configured roots, resources", raw: `{"roots": ` + roots(ws) + `}`, resources: true, want: map[string]want{
			Glob:          {true, "in the configured roots"},
			Grep:          {true, "in the configured roots"},
			WebFetch:      {false, "off until configured"},
			ListResources: {true, "declares resources"},
		}},
		{name: "client roots win over none", raw: ``, client: Client{Name: "inspector", Roots: []string{"file://" + filepath.ToSlash(client)}}, want: map[string]want{
			Glob: {true, "in the client's 1 root"},
			Grep: {true, "in the client's 1 root"},
		}},
		{name: "client roots that are not folders", raw: `{"roots": ` + roots(missing) + `}`, client: Client{Roots: []string{"https://example.com/x", "file://" + filepath.ToSlash(missing)}}, want: map[string]want{
			Glob: {false, "none of the client's roots"},
		}},
		{name: "web configured", raw: `{"web_fetch": {"allow": ["go.dev"]}, "web_search": {"provider": "searxng", "url": "http://127.0.0.1:1"}}`, want: map[string]want{
			WebFetch:  {true, "set in the configuration (builtins.web_fetch)"},
			WebSearch: {true, "set in the configuration (builtins.web_search)"},
		}},
		{name: "switched off", raw: `{"roots": ` + roots(ws) + `, "glob": false, "resources": {"enabled": false}, "web_fetch": false}`, resources: true, want: map[string]want{
			Glob:          {false, "set to false in the configuration (builtins.glob)"},
			Grep:          {true, "in the configured roots"},
			WebFetch:      {false, "set to false in the configuration (builtins.web_fetch)"},
			ListResources: {false, "set to false in the configuration (builtins.resources)"},
		}},
		{name: "a client with its own tools", raw: `{"roots": ` + roots(ws) + `, "web_fetch": {}}`, resources: true,
			client: Client{Name: "claude-code", OwnTools: true, Roots: []string{client}}, want: map[string]want{
				Glob:          {false, `client "claude-code" has tools of its own`},
				Grep:          {false, "set builtins.grep to true to show it anyway"},
				WebFetch:      {true, "set in the configuration"},
				ListResources: {false, "set builtins.resources to true"},
			}},
		{name: "explicit on wins for a client with its own", raw: `{"grep": true, "resources": true}`, resources: true,
			client: Client{Name: "codex-mcp-client", OwnTools: true, Roots: []string{client}}, want: map[string]want{
				Glob:          {false, "has tools of its own"},
				Grep:          {true, "though client \"codex-mcp-client\" has its own), in the client's 1 root"},
				ListResources: {true, "set in the configuration (builtins.resources)"},
			}},
		{name: "explicit on still needs roots", raw: `{"grep": true}`, client: Client{Name: "codex-mcp-client", OwnTools: true}, want: map[string]want{
			Grep: {false, "no roots"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseConfig(json.RawMessage(tc.raw), nil, noGopls)
			if err != nil {
				t.Fatal(err)
			}
			s := New(cfg, nil)
			defer s.Close()
			got := s.Decide(tc.client, tc.resources)
			if len(got) != len(Tools) {
				t.Fatalf("%d decisions, want one per tool (%d)", len(got), len(Tools))
			}
			byTool := map[string]Decision{}
			for i, d := range got {
				if d.Tool != Tools[i] {
					t.Errorf("decision %d is for %s, want %s", i, d.Tool, Tools[i])
				}
				if d.Reason == "" {
					t.Errorf("%s: no reason", d.Tool)
				}
				byTool[d.Tool] = d
			}
			for tool, w := range tc.want {
				d := byTool[tool]
				if d.On != w.on || !strings.Contains(d.Reason, w.reason) {
					t.Errorf("%s: on=%v %q, want on=%v with %q", tool, d.On, d.Reason, w.on, w.reason)
				}
			}
			hidden := s.Hidden(tc.client)
			for _, d := range s.Decide(tc.client, true) {
				if hidden[d.Tool] == d.On {
					t.Errorf("Hidden(%s) = %v, but Decide says on=%v", d.Tool, hidden[d.Tool], d.On)
				}
			}
			again := s.Decide(tc.client, tc.resources)
			for i := range got {
				if got[i] != again[i] {
					t.Errorf("a second Decide differs: %+v, then %+v", got[i], again[i])
				}
			}
		})
	}
}
