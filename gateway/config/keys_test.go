package config

import (
	"strings"
	"testing"
)

func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		want      string // "" means the file loads
		server    string
		field     string
	}{
		{"exposure typo", "{\n  \"mcpServers\": {},\n  \"toolsearch\": {\"exposre\": \"search\"}\n}", `line 3, column 18: unknown key "exposre"; did you mean "exposure"?`, "", "toolsearch.exposre"},
		{"threshold typo", `{"toolsearch": {"treshold": 5}}`, `did you mean "threshold"?`, "", "toolsearch.treshold"},
		{"builtins typo", `{"toolsearch": {"builtin": {}}}`, `did you mean "builtins"?`, "", "toolsearch.builtin"},
		{"server disable typo", "{\"mcpServers\": {\n  \"mem\": {\"command\": \"x\",\n   \"disable\": true}}}", `line 3, column 4: unknown key "disable"; did you mean "disabled"?`, "mem", "disable"},
		{"nested limits typo", `{"toolsearch": {"limits": {"startTimout": "5s"}}}`, `did you mean "startTimeout"?`, "", "toolsearch.limits.startTimout"},
		{"enrich budget typo", "{\"toolsearch\": {\"enrich\": {\n  \"dailyBudget\": {\"tool\": 5}}}}", `line 2, column 19: unknown key "tool"; did you mean "tools"?`, "", "toolsearch.enrich.dailyBudget.tool"},
		{"enrich key variable typo", `{"toolsearch": {"enrich": {"apiKey": "ANTHROPIC_API_KEY"}}}`, `did you mean "apiKeyEnv"?`, "", "toolsearch.enrich.apiKey"},
		{"http typo", `{"toolsearch": {"http": {"allowedHost": ["a"]}}}`, `did you mean "allowedHosts"?`, "", "toolsearch.http.allowedHost"},
		{"far from anything", `{"toolsearch": {"zzzzzzzzzz": 1}}`, `unknown key "zzzzzzzzzz"; known keys here: `, "", "toolsearch.zzzzzzzzzz"},
		{"top-level near miss", `{"mcpServer": {"a": {"command": "x"}}}`, `did you mean "mcpServers"?`, "", "mcpServer"},
		{"enabled is not disabled", `{"mcpServers": {"a": {"command": "x", "enabledd": false}}}`, `unknown key "enabledd"`, "a", "enabledd"},
		{"in a comment-bearing file", "// servers\n{\n  // the memory server\n  \"mcpServers\": {\"m\": {\"command\": \"x\", \"argz\": []}}\n}", `line 4, column 40: unknown key "argz"; did you mean "args"?`, "m", "argz"},
		// What loads.
		{"a client's own top-level settings", `{"globalShortcut": "Ctrl+Space", "mcpServers": {"a": {"command": "x"}}}`, "", "", ""},
		{"other clients' server keys", `{"mcpServers": {"a": {"command": "x", "autoApprove": ["t"], "alwaysAllow": [], "timeout": 60, "envFile": ".env", "description": "d"}}}`, "", "", ""},
		{"keys in another case", `{"toolsearch": {"Exposure": "search"}}`, "", "", ""},
		{"env names are the user's", `{"mcpServers": {"a": {"command": "x", "env": {"ANY_NAME": "1", "exposre": "2"}}}}`, "", "", ""},
		{"builtins are read elsewhere", `{"toolsearch": {"builtins": {"whatever": {}}}}`, "", "", ""},
		{"vs code servers key", `{"servers": {"a": {"type": "stdio", "command": "x"}}, "inputs": []}`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/ts.json", []byte(tc.doc), nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("does not load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to hold %q", err, tc.want)
			}
			ce, ok := err.(*Error)
			if !ok || ce.File != "/etc/ts.json" || ce.Server != tc.server || ce.Field != tc.field {
				t.Errorf("error %#v: want file /etc/ts.json, server %q, field %q", err, tc.server, tc.field)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"exposre", "exposure", 1}, {"treshold", "threshold", 1},
		{"kitten", "sitting", 3}, {"größe", "grösse", 2}, {"abc", "abc", 0},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
