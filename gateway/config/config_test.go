package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseServers(t *testing.T) {
	t.Parallel()
	data := `{
	  "mcpServers": {
	    "gh": {"command": "npx", "args": ["-y", "gh-mcp", "--token=${TOKEN}"], "env": {"A": "${HOME_X:-/h}"}, "cwd": "/tmp",
	           "alwaysLoad": true, "keywords": ["git"], "deny": ["delete_*"], "lazy": true, "startTimeout": 5},
	    "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
	    "old": {"type": "sse", "url": "http://127.0.0.1:1/sse", "disabled": true},
	    "cursorish": {"url": "http://127.0.0.1:2/mcp", "autoApprove": ["x"]}
	  },
	  "toolsearch": {"exposure": "Search", "threshold": "5%", "contextWindow": 100000, "listen": ":7777",
	                 "limits": {"maxResults": 8, "startTimeout": "2s", "restartCooldown": 90}, "policy": {"deny": ["*/rm"]}}
	}`
	cfg, err := Parse("x.json", []byte(data), env(map[string]string{"TOKEN": "t0k"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 4 || len(cfg.Enabled()) != 3 {
		t.Fatalf("servers: %d, enabled %d", len(cfg.Servers), len(cfg.Enabled()))
	}
	byKey := map[string]*Server{}
	for _, s := range cfg.Servers {
		byKey[s.Key] = s
	}
	gh := byKey["gh"]
	if gh.Transport != TransportStdio || gh.Args[2] != "--token=t0k" || gh.Env["A"] != "/h" || !gh.AlwaysLoad || !gh.Lazy ||
		gh.StartTimeout != 5*time.Second || gh.Deny[0] != "delete_*" || gh.Problem != nil {
		t.Errorf("gh = %+v", gh)
	}
	if d := byKey["docs"]; d.Transport != TransportHTTP || d.Headers["Authorization"] != "Bearer t0k" {
		t.Errorf("docs = %+v", d)
	}
	if o := byKey["old"]; o.Transport != TransportSSE || !o.Disabled {
		t.Errorf("old = %+v", o)
	}
	if c := byKey["cursorish"]; c.Transport != TransportHTTP {
		t.Errorf("cursorish = %+v", c)
	}
	g := cfg.Gateway
	if g.Exposure != ExposureSearch || g.ThresholdPercent != 5 || g.ContextWindow != 100000 || g.Threshold() != 5000 ||
		g.Listen != ":7777" || g.Limits.MaxResults != 8 || g.Limits.StartTimeout != 2*time.Second ||
		g.Limits.CallTimeout != DefaultCallTimeout || g.Limits.RestartCooldown != 90*time.Second || g.Policy.Deny[0] != "*/rm" {
		t.Errorf("gateway = %+v", g)
	}
}

func TestNaming(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("n.json", []byte(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "naming": "Bare"},
	  "c": {"command": "z", "naming": "prefixed"}, "d": {"command": "w", "naming": "auto"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": NamingAuto, "b": NamingBare, "c": NamingPrefixed, "d": NamingAuto}
	for _, s := range cfg.Servers {
		if s.Naming != want[s.Key] {
			t.Errorf("server %s: naming %q, want %q", s.Key, s.Naming, want[s.Key])
		}
	}
}

func TestVSCodeServersKey(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"fs": {"type": "stdio", "command": "fs-mcp"}}, "inputs": []}`), nil)
	if err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Key != "fs" {
		t.Fatalf("cfg=%+v err=%v", cfg, err)
	}
}

func TestUnsetVariableIsAServerProblem(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}, "b": {"command": "y"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Servers[0].Problem
	if p == nil || !strings.Contains(p.Error(), "env.K") || !strings.Contains(p.Error(), "NOPE") || !strings.Contains(p.Error(), `"a"`) {
		t.Fatalf("problem = %v", p)
	}
	if cfg.Servers[1].Problem != nil {
		t.Fatalf("b has a problem: %v", cfg.Servers[1].Problem)
	}
}

func TestErrorsNameFileServerField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, data        string
		server, field, in string
	}{
		{"not json", `{`, "", "", "not valid JSON: hujson: line 1, column 2"},
		{"syntax error on a later line", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}", "", "", "line 3, column 26"},
		{"array", `[]`, "", "", "not a JSON object"},
		{"servers not object", `{"mcpServers": []}`, "", "mcpServers", "object"},
		{"no command", `{"mcpServers": {"a": {}}}`, "a", "command", "needs"},
		{"args wrong type", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, "a", "args", "want"},
		{"bad type", `{"mcpServers": {"a": {"type": "ws", "url": "x"}}}`, "a", "type", "unknown type"},
		{"bad url", `{"mcpServers": {"a": {"type": "http", "url": "ftp://x"}}}`, "a", "url", "not an http"},
		{"bad key", `{"mcpServers": {"a/b": {"command": "x"}}}`, "a/b", "", "invalid server name"},
		{"bad timeout", `{"mcpServers": {"a": {"command": "x", "startTimeout": "soon"}}}`, "a", "startTimeout", "duration"},
		{"bad exposure", `{"toolsearch": {"exposure": "some"}}`, "", "toolsearch.exposure", "unknown exposure"},
		{"bad threshold", `{"toolsearch": {"threshold": 0}}`, "", "toolsearch.threshold", "out of range"},
		{"bad limit", `{"toolsearch": {"limits": {"maxResults": 0}}}`, "", "toolsearch.limits.maxResults", "out of range"},
		{"wrong limit type", `{"toolsearch": {"limits": {"maxResults": "x"}}}`, "", "toolsearch.limits.maxResults", "want"},
		{"empty deny", `{"mcpServers": {"a": {"command": "x", "deny": [""]}}}`, "a", "deny", "empty"},
		{"empty prompt glob", `{"mcpServers": {"a": {"command": "x", "prompts": {"deny": [" "]}}}}`, "a", "prompts.deny", "empty"},
		{"empty global resource glob", `{"toolsearch": {"policy": {"resources": {"allow": [""]}}}}`, "", "toolsearch.policy.resources.allow", "empty"},
		{"prompts not an object", `{"mcpServers": {"a": {"command": "x", "prompts": ["x"]}}}`, "a", "prompts", "want"},
		{"bad naming", `{"mcpServers": {"a": {"command": "x", "naming": "short"}}}`, "a", "naming", `unknown naming "short" (want auto, bare or prefixed)`},
		{"naming not a string", `{"mcpServers": {"a": {"command": "x", "naming": true}}}`, "a", "naming", "want string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("/etc/ts.json", []byte(c.data), nil)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.File != "/etc/ts.json" || ce.Server != c.server || ce.Field != c.field || !strings.Contains(err.Error(), c.in) {
				t.Fatalf("err = %q (server %q field %q)", err, ce.Server, ce.Field)
			}
			if !strings.Contains(err.Error(), "/etc/ts.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	lk := env(map[string]string{"A": "1", "EMPTY": ""})
	cases := []struct{ in, out, missing string }{
		{"plain", "plain", ""},
		{"${A}", "1", ""},
		{"x${A}y${A}", "x1y1", ""},
		{"${env:A}", "1", ""},
		{"${B:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${EMPTY}", "", ""},
		{"${B}", "", "B"},
		{"${input:tok}", "${input:tok}", ""},
		{"$A ${", "$A ${", ""},
		{"${}", "${}", ""},
	}
	for _, c := range cases {
		got, miss := Expand(c.in, lk)
		if got != c.out || strings.Join(miss, ",") != c.missing {
			t.Errorf("Expand(%q) = %q, %v; want %q, %q", c.in, got, miss, c.out, c.missing)
		}
	}
}

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"10": 10, "5%": 5, "auto:20": 20, "0.5": 0.5} {
		if got, err := ParseThreshold(in); err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "x", "0", "101", "-1"} {
		if _, err := ParseThreshold(in); err == nil {
			t.Errorf("ParseThreshold(%q) accepted", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"mcpServers": {"a": {"command": "x", "args": ["${A:-b}"], "env": {"K": "${env:K}"}}}}`)
	f.Add(`{"servers": {"b": {"type": "sse", "url": "http://h/${X}"}}, "toolsearch": {"threshold": "5%"}}`)
	f.Add(`{"toolsearch": {"limits": {"startTimeout": 3, "callTimeout": "1m"}, "policy": {"deny": ["*"]}}}`)
	f.Add(`{"mcpServers": {"a": {"url": 1}}}`)
	f.Add(`null`)
	f.Add(`{"mcpServers": null, "toolsearch": null}`)
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := Parse("f.json", []byte(data), env(map[string]string{"A": "a"}))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, s := range cfg.Servers {
			if s.Transport == "" || s.Key == "" {
				t.Fatalf("server %+v", s)
			}
		}
	})
}

func TestEnvPassthrough(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list    string
		want    []string
		wantErr string
	}{
		{`["AWS_PROFILE", "AWS_*", "*"]`, []string{"AWS_PROFILE", "AWS_*", "*"}, ""},
		{`[]`, []string{}, ""},
		{`["AWS PROFILE"]`, nil, `field "envPassthrough"`},
		{`[""]`, nil, `field "envPassthrough"`},
		{`["1X"]`, nil, `"1X" is not a variable name`},
	} {
		cfg, err := Parse("x.json", []byte(`{"mcpServers": {"s": {"command": "srv", "envPassthrough": `+tc.list+`}}}`), nil)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.list, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.list, err)
		}
		if got := cfg.Servers[0].EnvPassthrough; !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q", tc.list, got)
		}
	}
}

func TestPromptAndResourceGlobs(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("t.json", []byte(`{"mcpServers": {"db": {"command": "x", "deny": ["drop__table"],
		"prompts": {"allow": ["review_*"], "deny": ["admin_*"]}, "resources": {"deny": ["file:///etc/*"]}}},
		"toolsearch": {"policy": {"deny": ["*/rm"], "prompts": {"deny": ["*/secret"]}, "resources": {"allow": ["*/docs://*"]}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Servers[0].Rules()
	if got := fmt.Sprint(r.Deny, r.Prompts.Allow, r.Prompts.Deny, r.Resources.Deny, r.Resources.Allow); got != "[drop__table] [review_*] [admin_*] [file:///etc/*] []" {
		t.Errorf("server rules = %s", got)
	}
	g := cfg.Gateway.Policy
	if got := fmt.Sprint(g.Deny, g.Prompts.Deny, g.Resources.Allow); got != "[*/rm] [*/secret] [*/docs://*]" {
		t.Errorf("global rules = %s", got)
	}
}

func TestHintsAndEnrich(t *testing.T) {
	t.Parallel()
	lookup := env(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-default", "TEAM_KEY": " sk-team "})
	budget := EnrichBudget{Tools: DefaultEnrichDailyTools, Tokens: DefaultEnrichDailyTokens}
	tests := []struct {
		name    string
		gw      string
		want    Enrich
		hints   string
		wantErr string
	}{
		{name: "absent: off", gw: `{}`, want: Enrich{}},
		{name: "defaults", gw: `{"hints": "/x/h.jsonl", "enrich": {"enabled": true}}`, hints: "/x/h.jsonl",
			want: Enrich{Enabled: true, Provider: EnrichSampling, BatchSize: 10, Concurrency: 1, MaxToolsPerRun: DefaultEnrichMaxTools, DailyBudget: budget}},
		{name: "openai", gw: `{"enrich": {"enabled": true, "provider": "OpenAI", "model": "llama3", "baseURL": "http://127.0.0.1:11434/v1", "batch": 5, "concurrency": 2, "maxToolsPerRun": 50}}`,
			want: Enrich{Enabled: true, Provider: EnrichOpenAI, Model: "llama3", BaseURL: "http://127.0.0.1:11434/v1", BatchSize: 5, Concurrency: 2, MaxToolsPerRun: 50,
				APIKeyEnv: OpenAIKeyEnv, DailyBudget: budget}},
		{name: "anthropic: the default variable's key", gw: `{"enrich": {"enabled": true, "provider": "anthropic"}}`,
			want: Enrich{Enabled: true, Provider: EnrichAnthropic, BatchSize: 10, Concurrency: 1, MaxToolsPerRun: DefaultEnrichMaxTools,
				APIKeyEnv: AnthropicKeyEnv, APIKey: "sk-ant-default", DailyBudget: budget}},
		{name: "a variable of one's own, and a budget", gw: `{"enrich": {"enabled": true, "provider": "anthropic", "apiKeyEnv": "TEAM_KEY", "dailyBudget": {"tools": 30, "tokens": 40000}}}`,
			want: Enrich{Enabled: true, Provider: EnrichAnthropic, BatchSize: 10, Concurrency: 1, MaxToolsPerRun: DefaultEnrichMaxTools,
				APIKeyEnv: "TEAM_KEY", APIKey: "sk-team", DailyBudget: EnrichBudget{Tools: 30, Tokens: 40000}}},
		{name: "an unset variable: no key", gw: `{"enrich": {"provider": "openai", "apiKeyEnv": "NOT_SET_ANYWHERE"}}`,
			want: Enrich{Provider: EnrichOpenAI, BatchSize: 10, Concurrency: 1, MaxToolsPerRun: DefaultEnrichMaxTools, APIKeyEnv: "NOT_SET_ANYWHERE", DailyBudget: budget}},
		{name: "zero is the default budget", gw: `{"enrich": {"dailyBudget": {"tools": 0}}}`,
			want: Enrich{Provider: EnrichSampling, BatchSize: 10, Concurrency: 1, MaxToolsPerRun: DefaultEnrichMaxTools, DailyBudget: budget}},
		{name: "unknown provider", gw: `{"enrich": {"provider": "gemini"}}`, wantErr: `field "toolsearch.enrich.provider": unknown provider "gemini"`},
		{name: "bad url", gw: `{"enrich": {"baseURL": "file:///etc/passwd"}}`, wantErr: `field "toolsearch.enrich.baseURL"`},
		{name: "batch out of range", gw: `{"enrich": {"batch": 0}}`, wantErr: `field "toolsearch.enrich.batch": 0 is out of range 1..50`},
		{name: "concurrency out of range", gw: `{"enrich": {"concurrency": 99}}`, wantErr: `field "toolsearch.enrich.concurrency"`},
		{name: "negative budget", gw: `{"enrich": {"dailyBudget": {"tools": -1}}}`, wantErr: `field "toolsearch.enrich.dailyBudget.tools": -1 is out of range 1..10000000`},
		{name: "budget too large", gw: `{"enrich": {"dailyBudget": {"tokens": 1e12}}}`, wantErr: `field "toolsearch.enrich.dailyBudget.tokens"`},
		{name: "budget not a count", gw: `{"enrich": {"dailyBudget": {"tools": "lots"}}}`, wantErr: `field "toolsearch.enrich.dailyBudget.tools": want int64, got a JSON string`},
		{name: "budget not an object", gw: `{"enrich": {"dailyBudget": 5}}`, wantErr: `field "toolsearch.enrich.dailyBudget"`},
		{name: "a key where its variable's name goes", gw: `{"enrich": {"provider": "anthropic", "apiKeyEnv": "sk-ant-api03-secret"}}`,
			wantErr: `field "toolsearch.enrich.apiKeyEnv": want the name of the environment variable that holds the key`},
		{name: "sampling needs no key", gw: `{"enrich": {"apiKeyEnv": "TEAM_KEY"}}`, wantErr: `field "toolsearch.enrich.apiKeyEnv": provider sampling`},
		{name: "hints not a string", gw: `{"hints": 5}`, wantErr: `toolsearch.hints`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("c.json", []byte(`{"mcpServers": {}, "toolsearch": `+tt.gw+`}`), lookup)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "sk-ant-api03") {
					t.Errorf("the error shows what may be a key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Gateway.Enrich != tt.want || cfg.Gateway.Hints != tt.hints {
				t.Errorf("enrich %+v hints %q, want %+v %q", cfg.Gateway.Enrich, cfg.Gateway.Hints, tt.want, tt.hints)
			}
			if k := cfg.Gateway.Enrich.APIKey; k != "" && !slices.Contains(cfg.Secrets(), k) {
				t.Errorf("the key read is not among the secrets %q", cfg.Secrets())
			}
		})
	}
}

// TestEnrichKeyMissing: which providers need a key the environment lacks.
func TestEnrichKeyMissing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    Enrich
		want bool
	}{
		{Enrich{Provider: EnrichSampling}, false},
		{Enrich{Provider: EnrichAnthropic, APIKeyEnv: AnthropicKeyEnv}, true},
		{Enrich{Provider: EnrichAnthropic, APIKeyEnv: AnthropicKeyEnv, APIKey: "k"}, false},
		{Enrich{Provider: EnrichOpenAI, APIKeyEnv: OpenAIKeyEnv}, true},
		{Enrich{Provider: EnrichOpenAI, APIKeyEnv: OpenAIKeyEnv, BaseURL: "http://127.0.0.1:11434/v1"}, false},
		{Enrich{Provider: EnrichOpenAI, APIKeyEnv: "MY_KEY", BaseURL: "http://127.0.0.1:11434/v1"}, true},
	} {
		if got := tc.e.KeyMissing(); got != tc.want {
			t.Errorf("%+v: KeyMissing = %v, want %v", tc.e, got, tc.want)
		}
	}
}

// TestCommentsAndTrailingCommas: a config with comments and trailing commas
// (JSON with comments, as toolsearch init writes it) reads as the same file
// without them.
func TestCommentsAndTrailingCommas(t *testing.T) {
	t.Parallel()
	commented := `// the gateway's servers
{
  "mcpServers": {
    /* a stdio server */
    "memory": {"command": "npx", "args": ["-y", "server-memory",],}, // trailing commas
  },
  "toolsearch": {"exposure": "search",},
}
`
	plain := `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "server-memory"]}}, "toolsearch": {"exposure": "search"}}`
	a, err := Parse("commented.json", []byte(commented), nil)
	if err != nil {
		t.Fatalf("a commented config: %v", err)
	}
	b, err := Parse("plain.json", []byte(plain), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Servers) != 1 || a.Servers[0].Command != b.Servers[0].Command || !slices.Equal(a.Servers[0].Args, b.Servers[0].Args) ||
		a.Gateway.Exposure != b.Gateway.Exposure {
		t.Errorf("the commented config reads as %+v / %q, the plain one as %+v / %q", a.Servers[0], a.Gateway.Exposure, b.Servers[0], b.Gateway.Exposure)
	}
}

// TestEmptySectionIsDefaults: a file without a "toolsearch" object and one
// with an empty (or null) one configure the gateway alike, setting by
// setting, and like Default: a reload that only adds the object changes
// nothing (a difference would be reported as a setting not applied until
// restart).
func TestEmptySectionIsDefaults(t *testing.T) {
	t.Parallel()
	without, err := Parse("a.json", []byte(`{"mcpServers": {}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	def := Default().Gateway
	for _, text := range []string{`{"mcpServers": {}, "toolsearch": {}}`, `{"mcpServers": {}, "toolsearch": null}`} {
		with, err := Parse("a.json", []byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, b, d := reflect.ValueOf(without.Gateway), reflect.ValueOf(with.Gateway), reflect.ValueOf(def)
		for i := range a.NumField() {
			name := a.Type().Field(i).Name
			if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
				t.Errorf("%s: toolsearch.%s is %+v without the object, %+v with it", text, name, a.Field(i).Interface(), b.Field(i).Interface())
			}
			if !reflect.DeepEqual(a.Field(i).Interface(), d.Field(i).Interface()) {
				t.Errorf("toolsearch.%s is %+v in a file without the object, %+v in Default", name, a.Field(i).Interface(), d.Field(i).Interface())
			}
		}
	}
}
