package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseServeSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		gw      string
		env     map[string]string
		check   func(t *testing.T, s Serve)
		wantErr string // substring of the error; "" for none
	}{
		{name: "defaults", gw: `{}`, check: func(t *testing.T, s Serve) {
			if s.MaxBodyBytes != DefaultMaxBodyBytes || s.MaxHeaderBytes != DefaultMaxHeaderBytes || s.ShutdownTimeout != DefaultShutdownTimeout ||
				s.ReadHeaderTimeout != DefaultReadHeaderTimeout || s.IdleTimeout != DefaultIdleTimeout ||
				s.RateLimit.On() || s.SessionRateLimit.On() || s.AuthToken != "" || s.AuthTokenProblem != nil {
				t.Errorf("defaults %+v", s)
			}
		}},
		{name: "everything", gw: `{"http": {"authToken": "${TOK}", "allowedOrigins": ["https://app.example.com"], "allowedHosts": ["mcp.example.com"],
			"maxBodyBytes": 2048, "maxHeaderBytes": 4096, "readHeaderTimeout": "3s", "idleTimeout": 30,
			"rateLimit": {"perSecond": 100, "burst": 200}, "sessionRateLimit": {"perSecond": 5}}, "shutdownTimeout": "4s"}`,
			env: map[string]string{"TOK": "0123456789abcdef0123"},
			check: func(t *testing.T, s Serve) {
				if s.AuthToken != "0123456789abcdef0123" || s.AllowedOrigins[0] != "https://app.example.com" || s.AllowedHosts[0] != "mcp.example.com" ||
					s.MaxBodyBytes != 2048 || s.MaxHeaderBytes != 4096 || s.ReadHeaderTimeout != 3*time.Second || s.IdleTimeout != 30*time.Second ||
					s.RateLimit != (Rate{100, 200}) || s.SessionRateLimit != (Rate{5, 5}) || s.ShutdownTimeout != 4*time.Second {
					t.Errorf("settings %+v", s)
				}
			}},
		{name: "unset token variable is a problem, not an error", gw: `{"http": {"authToken": "${NOPE}"}}`, check: func(t *testing.T, s Serve) {
			if s.AuthToken != "" || s.AuthTokenProblem == nil || !strings.Contains(s.AuthTokenProblem.Error(), "${NOPE} is not set") {
				t.Errorf("token %q problem %v", s.AuthToken, s.AuthTokenProblem)
			}
		}},
		{name: "short token", gw: `{"http": {"authToken": "${TOK}"}}`, env: map[string]string{"TOK": "short"}, wantErr: "at least 16"},
		{name: "token with a space", gw: `{"http": {"authToken": "Bearer 0123456789abcdef"}}`, wantErr: "spaces"},
		{name: "tiny body bound", gw: `{"http": {"maxBodyBytes": 10}}`, wantErr: "toolsearch.http.maxBodyBytes"},
		{name: "negative rate", gw: `{"http": {"rateLimit": {"perSecond": -1}}}`, wantErr: "toolsearch.http.rateLimit"},
		{name: "bad timeout", gw: `{"shutdownTimeout": "soon"}`, wantErr: "toolsearch.shutdownTimeout"},
		{name: "empty origin", gw: `{"http": {"allowedOrigins": [" "]}}`, wantErr: "toolsearch.http.allowedOrigins"},
		{name: "wrong type", gw: `{"http": {"maxBodyBytes": "big"}}`, wantErr: "http.maxBodyBytes"},
		{name: "session defaults", gw: `{}`, check: func(t *testing.T, s Serve) {
			if s.MaxSessions != DefaultMaxSessions || s.SessionInitTimeout != DefaultSessionInitTimeout ||
				s.SessionIdleTimeout != DefaultSessionIdleTimeout || s.Exposures != nil {
				t.Errorf("session settings %+v", s)
			}
		}},
		{name: "session settings", gw: `{"http": {"maxSessions": 3, "sessionInitTimeout": "2s", "sessionIdleTimeout": 60, "exposures": ["Search", "full", "search"]}}`,
			check: func(t *testing.T, s Serve) {
				if s.MaxSessions != 3 || s.SessionInitTimeout != 2*time.Second || s.SessionIdleTimeout != time.Minute ||
					!slices.Equal(s.Exposures, []string{"search", "full"}) {
					t.Errorf("session settings %+v", s)
				}
			}},
		{name: "no sessions", gw: `{"http": {"maxSessions": 0}}`, wantErr: "toolsearch.http.maxSessions"},
		{name: "unknown exposure", gw: `{"http": {"exposures": ["everything"]}}`, wantErr: "toolsearch.http.exposures"},
		{name: "bad session timeout", gw: `{"http": {"sessionInitTimeout": "soon"}}`, wantErr: "toolsearch.http.sessionInitTimeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("x.json", []byte(`{"toolsearch": `+tc.gw+`}`), env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "x.json") {
					t.Fatalf("err %v, want one naming x.json and %q", err, tc.wantErr)
				}
				if tc.env["TOK"] != "" && strings.Contains(err.Error(), tc.env["TOK"]) {
					t.Errorf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.Gateway.Serve)
		})
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	data := `{"mcpServers": {
	  "gh": {"command": "npx", "args": ["gh-mcp", "--token=${GH_TOKEN}", "--home=${HOME}"],
	         "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_1234", "MEMORY_FILE_PATH": "/tmp/memory.jsonl", "DEBUG": "1",
	                 "NODE_ENV": "production", "LOG_LEVEL": "info", "PORT": "30000000", "MY_PAT": "abcd"}},
	  "docs": {"type": "http", "url": "https://user:hunter22@docs.example.com/mcp/k3y0123456789abcdefXYZ?api_key=q-secret-value&x=ab",
	           "headers": {"Authorization": "Bearer sk-live-abcdef", "X-Team": "team-7"}}
	}, "toolsearch": {"http": {"authToken": "${TS_TOKEN}"},
	   "builtins": {"web_search": {"provider": "brave", "key": "${BRAVE_KEY}"}, "other": {"apiKey": "lit-eral-key", "url": "http://x"}}}}`
	vars := map[string]string{"GH_TOKEN": "gho_from_env_999", "HOME": "/home/someone", "TS_TOKEN": "ts-token-0123456789", "BRAVE_KEY": "brave-0123"}
	cfg, err := Parse("x.json", []byte(data), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Secrets()
	for _, want := range []string{"ts-token-0123456789", "gho_from_env_999", "ghp_1234", "production", "Bearer sk-live-abcdef",
		"sk-live-abcdef", "team-7", "hunter22", "q-secret-value", "k3y0123456789abcdefXYZ", "abcd", "brave-0123", "lit-eral-key"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	for _, not := range []string{"/tmp/memory.jsonl", "/home/someone", "1", "info", "30000000", "ab", "mcp", "brave", "http://x"} {
		if slices.Contains(got, not) {
			t.Errorf("secrets hold %q, which is not one: %q", not, got)
		}
	}
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) {
			t.Fatalf("secrets not longest first: %q", got)
		}
	}
}

func TestBadURLErrorShowsNoExpandedValue(t *testing.T) {
	t.Parallel()
	_, err := Parse("x.json", []byte(`{"mcpServers": {"d": {"type": "http", "url": "${DOCS_URL}"}}}`),
		env(map[string]string{"DOCS_URL": "ftp://u:pa55word-xyz@host/"}))
	var ce *Error
	if !errors.As(err, &ce) || strings.Contains(err.Error(), "pa55word") || !strings.Contains(err.Error(), "${DOCS_URL}") {
		t.Fatalf("err %v", err)
	}
}

func TestCheckAuthToken(t *testing.T) {
	t.Parallel()
	for tok, ok := range map[string]bool{"0123456789abcdef": true, "0123456789abcde": false, " 0123456789abcdef": false, "0123456789 abcdef": false} {
		if err := CheckAuthToken(tok); (err == nil) != ok {
			t.Errorf("CheckAuthToken(%q) = %v", tok, err)
		}
	}
}

func TestSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"GITHUB_PERSONAL_ACCESS_TOKEN": true, "API_KEY": true, "apiKey": true, "OPENAI_APIKEY": true, "DB_PASSWORD": true,
		"key": true, "authToken": true, "MY_PAT": true, "client-secret": true,
		"PATH": false, "HOME": false, "MEMORY_FILE_PATH": false, "NODE_ENV": false, "OAUTH_URL": false, "url": false, "provider": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v", name, got)
		}
	}
}

func TestServedExposures(t *testing.T) {
	t.Parallel()
	all := []string{ExposureAuto, ExposureFull, ExposureDynamic, ExposureSearch}
	for _, tc := range []struct {
		configured string
		listed     []string
		want       []string
	}{
		{ExposureSearch, nil, []string{ExposureSearch}},
		{ExposureDynamic, nil, []string{ExposureDynamic, ExposureSearch}},
		{ExposureAuto, nil, all},
		{ExposureFull, nil, all},
		{ExposureSearch, []string{ExposureFull}, []string{ExposureSearch, ExposureFull}},
		{ExposureAuto, []string{}, []string{ExposureAuto}},
	} {
		if got := (Serve{Exposures: tc.listed}).ServedExposures(tc.configured); !slices.Equal(got, tc.want) {
			t.Errorf("ServedExposures(%s) with %v = %v, want %v", tc.configured, tc.listed, got, tc.want)
		}
	}
}
