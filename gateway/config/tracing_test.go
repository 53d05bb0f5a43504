package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseTracing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		gw      string
		env     map[string]string
		want    Tracing // compared when wantErr is ""
		wantErr string  // substring of the error
	}{
		{name: "absent", gw: `{}`, want: Tracing{}},
		{name: "empty block is on", gw: `{"tracing": {}}`, want: Tracing{Enabled: true, SampleRatio: 1}},
		{name: "turned off", gw: `{"tracing": {"enabled": false, "endpoint": "http://c:4318"}}`,
			want: Tracing{Endpoint: "http://c:4318/v1/traces", SampleRatio: 1}},
		{name: "OTEL_SDK_DISABLED", gw: `{"tracing": {}}`, env: map[string]string{"OTEL_SDK_DISABLED": "TRUE"},
			want: Tracing{SampleRatio: 1}},
		{name: "everything", gw: `{"tracing": {"endpoint": "https://otel.example:4318/custom/path", "sampleRatio": 0.25,
			"serviceName": " gw-prod ", "recordQueries": true, "headers": {"Authorization": "Bearer ${TOK}"}}}`,
			env: map[string]string{"TOK": "tok-123456789"},
			want: Tracing{Enabled: true, Endpoint: "https://otel.example:4318/custom/path", SampleRatio: 0.25, ServiceName: "gw-prod",
				RecordQueries: true, Headers: map[string]string{"Authorization": "Bearer tok-123456789"}}},
		{name: "root path gets the traces path", gw: `{"tracing": {"endpoint": "http://127.0.0.1:4318/"}}`,
			want: Tracing{Enabled: true, Endpoint: "http://127.0.0.1:4318/v1/traces", SampleRatio: 1}},
		{name: "expanded endpoint", gw: `{"tracing": {"endpoint": "${COLLECTOR}"}}`, env: map[string]string{"COLLECTOR": "http://c:1"},
			want: Tracing{Enabled: true, Endpoint: "http://c:1/v1/traces", SampleRatio: 1}},
		{name: "ratio zero", gw: `{"tracing": {"sampleRatio": 0}}`, want: Tracing{Enabled: true}},
		{name: "ratio above one", gw: `{"tracing": {"sampleRatio": 1.5}}`, wantErr: `"toolsearch.tracing.sampleRatio": 1.5 is out of range 0..1`},
		{name: "negative ratio", gw: `{"tracing": {"sampleRatio": -0.1}}`, wantErr: "out of range 0..1"},
		{name: "ratio as a string", gw: `{"tracing": {"sampleRatio": "half"}}`, wantErr: "toolsearch.tracing.sampleRatio"},
		{name: "grpc scheme", gw: `{"tracing": {"endpoint": "grpc://c:4317"}}`, wantErr: `"toolsearch.tracing.endpoint": "grpc://c:4317": want an http:// or https:// URL`},
		{name: "no scheme", gw: `{"tracing": {"endpoint": "collector:4318"}}`, wantErr: "toolsearch.tracing.endpoint"},
		{name: "no host", gw: `{"tracing": {"endpoint": "http:///v1/traces"}}`, wantErr: "has no host"},
		{name: "credentials in the URL", gw: `{"tracing": {"endpoint": "https://u:${PW}@c/v1/traces"}}`, env: map[string]string{"PW": "pw-secret-1"},
			wantErr: "put them in headers"},
		{name: "query", gw: `{"tracing": {"endpoint": "http://c/v1/traces?x=1"}}`, wantErr: "query or a fragment"},
		{name: "unparsable", gw: `{"tracing": {"endpoint": "http://c:port"}}`, wantErr: "not a URL"},
		{name: "unset variable", gw: `{"tracing": {"endpoint": "${NOPE}"}}`, wantErr: "${NOPE} is not set"},
		{name: "unset header variable", gw: `{"tracing": {"headers": {"k": "${NOPE}"}}}`, wantErr: `"toolsearch.tracing.headers.k": ${NOPE} is not set`},
		{name: "bad header name", gw: `{"tracing": {"headers": {"a b": "x"}}}`, wantErr: `"a b" is not a valid HTTP header name`},
		{name: "header value with a newline", gw: `{"tracing": {"headers": {"k": "${V}"}}}`, env: map[string]string{"V": "a\r\nInjected: 1"},
			wantErr: "line break"},
		{name: "blank service name", gw: `{"tracing": {"serviceName": "  "}}`, wantErr: "toolsearch.tracing.serviceName"},
		{name: "service name with a control character", gw: `{"tracing": {"serviceName": "a\u0007b"}}`, wantErr: "control characters"},
		{name: "typo", gw: `{"tracing": {"endpont": "http://c"}}`, wantErr: `did you mean "endpoint"`},
		{name: "typo of the block", gw: `{"tracng": {}}`, wantErr: `did you mean "tracing"`},
		{name: "not an object", gw: `{"tracing": "on"}`, wantErr: "toolsearch.tracing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("x.json", []byte(`{"toolsearch": `+tc.gw+`}`), env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				for k, v := range tc.env {
					if strings.Contains(err.Error(), v) && k != "V" {
						t.Errorf("the error %q shows the secret %q", err, v)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Gateway.Tracing
			got.envSecrets = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tracing = %+v, want %+v", got, tc.want)
			}
			if got.On() != tc.want.Enabled {
				t.Errorf("On() = %v, want %v", got.On(), tc.want.Enabled)
			}
		})
	}
}

// TestTracingSecrets: header values, their credentials and the exporter
// variables' header values are among the configuration's secrets.
func TestTracingSecrets(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("x.json", []byte(`{"toolsearch": {"tracing": {"headers": {"Authorization": "Basic ${CRED}", "x-api-key": "plain-key-42"}}}}`),
		env(map[string]string{"CRED": "dXNlcjpwYXNz", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=env%20key%2099,other=v2v2v2"}))
	if err != nil {
		t.Fatal(err)
	}
	secrets := cfg.Secrets()
	for _, want := range []string{"Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "plain-key-42", "env%20key%2099", "env key 99", "v2v2v2"} {
		if !slices.Contains(secrets, want) {
			t.Errorf("Secrets() = %q, want %q among them", secrets, want)
		}
	}
}

// FuzzParseTracing: any tracing object is read or refused with an error
// naming toolsearch.tracing; what is read is usable (an http(s) URL with
// a host, a ratio in range, header values without line breaks).
func FuzzParseTracing(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"endpoint": "http://127.0.0.1:4318", "sampleRatio": 0.5, "serviceName": "x"}`,
		`{"endpoint": "https://h/v1/traces", "headers": {"a": "${PW}"}}`,
		`{"endpoint": "ftp://h"}`,
		`{"sampleRatio": 2}`,
		`{"sampleRatio": 1e-400}`,
		`{"headers": {"": "x"}}`,
		`{"enabled": "yes"}`,
		`null`,
		`[]`,
	} {
		f.Add(s)
	}
	lookup := env(map[string]string{"PW": "fuzz-secret-pw"})
	f.Fuzz(func(t *testing.T, tracing string) {
		cfg, err := Parse("f.json", []byte(`{"toolsearch": {"tracing": `+tracing+`}}`), lookup)
		if err != nil {
			if !strings.Contains(err.Error(), "toolsearch") && !strings.Contains(err.Error(), "JSON") && !strings.Contains(err.Error(), "key") {
				t.Fatalf("the error names no field: %v", err)
			}
			return
		}
		tr := cfg.Gateway.Tracing
		if tr.SampleRatio < 0 || tr.SampleRatio > 1 {
			t.Fatalf("sample ratio %v read", tr.SampleRatio)
		}
		if tr.Endpoint != "" {
			if _, err := tracingEndpoint(tr.Endpoint); err != nil {
				t.Fatalf("endpoint %q read, which does not check again: %v", tr.Endpoint, err)
			}
		}
		for k, v := range tr.Headers {
			if strings.ContainsAny(v, "\r\n") || k == "" {
				t.Fatalf("header %q: %q read", k, v)
			}
		}
	})
}
