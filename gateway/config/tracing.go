package config

// The tracing settings: OpenTelemetry traces of what the gateway does,
// sent over OTLP/HTTP. They are off unless the "toolsearch" object has a
// "tracing" key:
//
//	"tracing": {
//	  "endpoint": "http://127.0.0.1:4318",   // OTLP/HTTP; no path means /v1/traces
//	  "headers": {"x-honeycomb-team": "${HONEYCOMB_KEY}"},
//	  "sampleRatio": 0.25,                     // of the traces that start here
//	  "serviceName": "toolsearch",
//	  "recordQueries": false,                  // put search queries' text in spans
//	  "enabled": true                          // false keeps the block, off
//	}
//
// Without an endpoint, the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_ENDPOINT variables say where traces go (else
// http://localhost:4318), and the other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, certificates) are honoured; what the
// file sets wins. OTEL_SDK_DISABLED=true turns tracing off. Header values
// are secrets (Config.Secrets), as are those of OTEL_EXPORTER_OTLP_HEADERS.
// docs/tracing.md says what each span holds.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/net/http/httpguts"
)

// DefaultTracingServiceName is the service.name of the gateway's traces
// when neither the file nor OTEL_SERVICE_NAME gives one.
const DefaultTracingServiceName = "toolsearch"

// tracingHeaderVars are the variables whose values the OTLP exporter sends
// as headers: secrets, like the file's headers.
var tracingHeaderVars = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}

// Tracing configures OpenTelemetry traces (toolsearch.tracing). The zero
// value is off.
type Tracing struct {
	// Enabled is true when the file has a tracing block that is not
	// turned off (and OTEL_SDK_DISABLED is not true).
	Enabled bool
	// Endpoint is the OTLP/HTTP URL spans are posted to, with its path
	// (/v1/traces when the file gave none); "" leaves it to the
	// OTEL_EXPORTER_OTLP_* variables.
	Endpoint string
	// Headers go with every export (expanded); their values are secrets.
	// When set they replace those of OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// SampleRatio is the share of traces sampled among those that start
	// at the gateway, 0 to 1; a request that carries its client's trace
	// context follows that trace's sampling decision.
	SampleRatio float64
	// ServiceName is the service.name of the spans; "" leaves it to
	// OTEL_SERVICE_NAME, else DefaultTracingServiceName.
	ServiceName string
	// RecordQueries puts the text of search queries in search spans
	// (only their length is recorded otherwise).
	RecordQueries bool

	// envSecrets are the header values of the OTEL_EXPORTER_OTLP_*
	// header variables, hidden like the file's.
	envSecrets []string
}

// On reports whether tracing is on.
func (t Tracing) On() bool { return t.Enabled }

// rawTracingTop is the JSON shape of the tracing settings, as they sit in
// the "toolsearch" object.
type rawTracingTop struct {
	Tracing *struct {
		Enabled       *bool             `json:"enabled"`
		Endpoint      string            `json:"endpoint"`
		Headers       map[string]string `json:"headers"`
		SampleRatio   *float64          `json:"sampleRatio"`
		ServiceName   string            `json:"serviceName"`
		RecordQueries bool              `json:"recordQueries"`
	} `json:"tracing"`
}

// parseTracing reads toolsearch.tracing from the top-level object.
func parseTracing(cfg *Config, top map[string]json.RawMessage, lookup func(string) (string, bool)) *Error {
	raw, ok := top["toolsearch"]
	if !ok || string(raw) == "null" {
		return nil
	}
	errAt := func(field string, err error) *Error { return &Error{Field: "toolsearch.tracing" + field, Err: err} }
	var rt rawTracingTop
	if err := json.Unmarshal(raw, &rt); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: "toolsearch." + te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	rc := rt.Tracing
	if rc == nil {
		return nil
	}
	t := Tracing{Enabled: rc.Enabled == nil || *rc.Enabled, SampleRatio: 1, RecordQueries: rc.RecordQueries}
	if v, ok := lookup("OTEL_SDK_DISABLED"); ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		t.Enabled = false
	}
	if e := strings.TrimSpace(rc.Endpoint); e != "" {
		u, missing := Expand(e, lookup)
		if len(missing) > 0 {
			return errAt(".endpoint", fmt.Errorf("${%s} is not set", missing[0]))
		}
		endpoint, err := tracingEndpoint(u)
		if err != nil {
			// As written: the expanded URL may hold a secret.
			return errAt(".endpoint", fmt.Errorf("%q: %w", rc.Endpoint, err))
		}
		t.Endpoint = endpoint
	}
	if len(rc.Headers) > 0 {
		t.Headers = map[string]string{}
		names := make([]string, 0, len(rc.Headers))
		for k := range rc.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if !httpguts.ValidHeaderFieldName(k) {
				return errAt(".headers", fmt.Errorf("%q is not a valid HTTP header name", k))
			}
			v, missing := Expand(rc.Headers[k], lookup)
			if len(missing) > 0 {
				return errAt(".headers."+k, fmt.Errorf("${%s} is not set", missing[0]))
			}
			if !httpguts.ValidHeaderFieldValue(v) {
				return errAt(".headers."+k, errors.New("the value holds a line break or a control character"))
			}
			t.Headers[k] = v
		}
	}
	if rc.SampleRatio != nil {
		if r := *rc.SampleRatio; !(r >= 0 && r <= 1) {
			return errAt(".sampleRatio", fmt.Errorf("%v is out of range 0..1 (1 samples every trace, 0.1 one in ten)", r))
		}
		t.SampleRatio = *rc.SampleRatio
	}
	if name := strings.TrimSpace(rc.ServiceName); name != "" {
		if len(name) > 255 || strings.ContainsFunc(name, unicode.IsControl) {
			return errAt(".serviceName", fmt.Errorf("%q: want a name of at most 255 characters without control characters", rc.ServiceName))
		}
		t.ServiceName = name
	} else if rc.ServiceName != "" {
		return errAt(".serviceName", errors.New("want a name, or leave the key out for the default"))
	}
	for _, name := range tracingHeaderVars {
		v, ok := lookup(name)
		if !ok {
			continue
		}
		for _, pair := range strings.Split(v, ",") {
			if _, val, ok := strings.Cut(pair, "="); ok {
				t.envSecrets = append(t.envSecrets, strings.TrimSpace(val))
				if dec, err := url.PathUnescape(strings.TrimSpace(val)); err == nil {
					t.envSecrets = append(t.envSecrets, dec)
				}
			}
		}
	}
	cfg.Gateway.Tracing = t
	return nil
}

// tracingEndpoint checks an OTLP/HTTP URL and gives it the traces path
// when it has none, as OTEL_EXPORTER_OTLP_ENDPOINT is read.
func tracingEndpoint(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New(`want an http:// or https:// URL, such as "http://127.0.0.1:4318"`)
	case u.Host == "" || u.Hostname() == "":
		return "", errors.New("the URL has no host")
	case u.User != nil:
		return "", errors.New("the URL holds credentials, which the exporter would not send: put them in headers")
	case u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("the URL has a query or a fragment, which OTLP/HTTP does not use")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// secrets are the secrets of the tracing settings: header values,
// the credentials after their scheme, and the exporter variables' headers.
func (t Tracing) secrets() []string {
	var out []string
	for _, k := range sortedKeys(t.Headers) {
		v := t.Headers[k]
		out = append(out, v)
		if scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok && scheme != "" {
			out = append(out, cred)
		}
	}
	return append(out, t.envSecrets...)
}
