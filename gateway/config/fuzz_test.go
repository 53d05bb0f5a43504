package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// FuzzParseSettings builds a file from one server entry and one
// "toolsearch" object and checks that whatever Parse accepts is usable as
// it stands: every setting in its range (the threshold a number of tokens
// between 0 and the context window, the limits positive), every server
// with a valid key and what its transport needs, every policy pattern
// non-empty; and that whatever it refuses is refused with an error that
// names the file.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []struct{ key, server, settings string }{
		{"gh", `{"command": "npx", "args": ["-y", "x"], "env": {"T": "${TOKEN}"}, "startTimeout": "5s", "deny": ["delete_*"]}`, `{"exposure": "search", "threshold": "5%"}`},
		{"docs", `{"type": "http", "url": "https://example.com/mcp", "headers": {"A": "Bearer ${env:TOKEN}"}}`, `{"threshold": 20, "contextWindow": 100000}`},
		{"old", `{"type": "sse", "url": "http://127.0.0.1:1/sse", "disabled": true}`, `{"limits": {"maxResults": 8, "resultTokens": 100, "startTimeout": 2, "callTimeout": "1m", "maxRestarts": 0, "restartCooldown": "90s"}}`},
		{"w", `{"serverUrl": "https://w.example/mcp"}`, `{"threshold": "auto:15", "policy": {"allow": ["*"], "deny": ["*/rm"], "ask": ["x/y"]}}`},
		{"x", `{"url": "${HOST}/mcp"}`, `{"lazy": true, "stateDir": "~/cache", "builtins": {"glob": false}}`},
		{"bad key", `{"command": "x"}`, `{}`},
		{"a", `{"command": ""}`, `{"exposure": "everything"}`},
		{"a", `{"type": "ws", "url": "ws://x"}`, `{"threshold": 0}`},
		{"a", `{"command": "x", "startTimeout": -1}`, `{"contextWindow": 10}`},
		{"a", `{"command": "x", "args": [1]}`, `{"limits": {"maxResults": 51}}`},
		{"a", `{"command": "x"}`, `{"limits": {"callTimeout": "forever"}}`},
		{"a", `null`, `null`},
		{"cc", `{"command": "x"}`, `{"clients": {"claude-code": "search", "my-agent": "AUTO"}, "limits": {"firstListWait": "2s"}}`},
		{"cc", `{"command": "x"}`, `{"clients": {"": "full"}, "limits": {"firstListWait": -3}}`},
		{"d", `{"command": "x"}`, `{"dashboard": {"enabled": false, "keep": 10, "retention": "5m", "recordArguments": true}}`},
		{"d", `{"command": "x"}`, `{"dashboard": {"keep": -1, "retention": 0}}`},
	} {
		f.Add(s.key, s.server, s.settings)
	}
	lookup := env(map[string]string{"TOKEN": "t0k", "HOST": "http://h", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, key, server, settings string) {
		k, _ := json.Marshal(key)
		data := `{"mcpServers": {` + string(k) + `: ` + server + `}, "toolsearch": ` + settings + `}`
		cfg, err := Parse("f.json", []byte(data), lookup)
		again, err2 := Parse("f.json", []byte(data), lookup)
		if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(cfg, again)) {
			t.Fatalf("Parse is not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != "f.json" || !strings.HasPrefix(err.Error(), "config f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		gw := cfg.Gateway
		if _, err := ParseExposure(gw.Exposure); err != nil || gw.Exposure != strings.ToLower(gw.Exposure) {
			t.Fatalf("exposure %q accepted", gw.Exposure)
		}
		if !(gw.ThresholdPercent > 0 && gw.ThresholdPercent <= 100) {
			t.Fatalf("threshold %v%% accepted", gw.ThresholdPercent)
		}
		if gw.ContextWindow < 1000 {
			t.Fatalf("context window %d accepted", gw.ContextWindow)
		}
		if th := gw.Threshold(); th < 0 || th > gw.ContextWindow {
			t.Fatalf("threshold of %v%% of %d is %d tokens", gw.ThresholdPercent, gw.ContextWindow, th)
		}
		l := gw.Limits
		if l.MaxResults < 1 || l.MaxResults > 50 || l.ResultTokens < 100 || l.MaxRestarts < 0 ||
			l.StartTimeout <= 0 || l.CallTimeout <= 0 || l.RestartCooldown <= 0 {
			t.Fatalf("limits %+v accepted", l)
		}
		if l.FirstListWait < 0 || l.FirstListWait > time.Minute {
			t.Fatalf("firstListWait %v accepted", l.FirstListWait)
		}
		if d := gw.Dashboard; d.Keep < 1 || d.Keep > MaxDashboardKeep || d.Retention <= 0 || d.Retention > MaxDuration {
			t.Fatalf("dashboard %+v accepted", d)
		}
		for name, e := range gw.Clients {
			if strings.TrimSpace(name) == "" {
				t.Fatalf("an empty client name accepted: %q", gw.Clients)
			}
			if x, err := ParseExposure(e); err != nil || x != e {
				t.Fatalf("client %q: exposure %q accepted", name, e)
			}
		}
		for _, pats := range [][]string{gw.Policy.Allow, gw.Policy.Deny, gw.Policy.Ask} {
			for _, p := range pats {
				if strings.TrimSpace(p) == "" {
					t.Fatalf("empty policy pattern accepted: %q", pats)
				}
			}
		}
		var wantKey string // the key as it reads in the file (invalid UTF-8 replaced)
		_ = json.Unmarshal(k, &wantKey)
		for _, s := range cfg.Servers {
			if err := catalog.ValidKey(s.Key); err != nil || s.Key != wantKey {
				t.Fatalf("server key %q accepted (%v)", s.Key, err)
			}
			if s.StartTimeout < 0 {
				t.Fatalf("server %s: start timeout %v", s.Key, s.StartTimeout)
			}
			for _, pats := range [][]string{s.Allow, s.Deny, s.Ask} {
				for _, p := range pats {
					if strings.TrimSpace(p) == "" {
						t.Fatalf("server %s: empty policy pattern accepted: %q", s.Key, pats)
					}
				}
			}
			switch s.Transport {
			case TransportStdio:
				if s.Command == "" && s.Problem == nil {
					t.Fatalf("server %s: stdio without a command", s.Key)
				}
			case TransportHTTP, TransportSSE:
				if s.Problem == nil && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					t.Fatalf("server %s: url %q accepted", s.Key, s.URL)
				}
			default:
				t.Fatalf("server %s: transport %q", s.Key, s.Transport)
			}
			if s.Problem != nil && !strings.Contains(s.Problem.Error(), "server "+strconvQuote(s.Key)) {
				t.Fatalf("server %s: the problem does not name the server: %v", s.Key, s.Problem)
			}
		}
	})
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzExpand checks variable expansion: text without "${" is unchanged; a
// variable reported unset is a well-formed name the text refers to; with
// every variable set, none is reported unset, and a lone reference
// expands to its value.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "${A:-d}", "${env:A}", "x${UNSET}y", "${UNSET:-dflt}", "${EMPTY:-e}", "${}", "${1A}",
		"${input:x}", "$A", "${A", "${A}${B}", "}${A}{", "${A:-${B}}", "${env:}", "${A:-}", "${é}"} {
		f.Add(s, "value")
	}
	f.Fuzz(func(t *testing.T, s, val string) {
		some := func(k string) (string, bool) {
			switch k {
			case "A":
				return val, true
			case "EMPTY":
				return "", true
			}
			return "", false
		}
		out, missing := Expand(s, some)
		if !strings.Contains(s, "${") && (out != s || missing != nil) {
			t.Fatalf("Expand(%q) = %q, %q; want it unchanged", s, out, missing)
		}
		for _, m := range missing {
			if !validVarName(m) || !strings.Contains(s, m) {
				t.Fatalf("Expand(%q) reports %q unset", s, m)
			}
		}
		every := func(k string) (string, bool) { return "v", true }
		if _, missing := Expand(s, every); len(missing) > 0 {
			t.Fatalf("Expand(%q) with every variable set reports %q unset", s, missing)
		}
		if out, _ := Expand("${A}", some); out != val {
			t.Fatalf("${A} = %q, want %q", out, val)
		}
	})
}
