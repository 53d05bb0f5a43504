package config

// The background enrichment settings: the gateway asks a model for the
// search hints of the tools that have none (docs/enrich.md, "In the
// gateway"). Under the "toolsearch" key:
//
//	"enrich": {
//	  "enabled": false,            // off by default
//	  "provider": "sampling",      // sampling, anthropic or openai
//	  "model": "", "baseURL": "",  // the provider's defaults
//	  "apiKeyEnv": "",             // the variable holding the key: ANTHROPIC_API_KEY / OPENAI_API_KEY
//	  "batch": 10, "concurrency": 1, "maxToolsPerRun": 500,
//	  "dailyBudget": {"tools": 2000, "tokens": 1000000} // per UTC day, every replica together
//	}
//
// The key itself is never in the file: apiKeyEnv names the environment
// variable it is read from, and the value read is a secret (Secrets).

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Providers of background enrichment.
const (
	EnrichSampling  = "sampling"
	EnrichAnthropic = "anthropic"
	EnrichOpenAI    = "openai"
)

// Defaults and bounds of the enrichment settings.
const (
	// DefaultEnrichMaxTools bounds the tools one background run sends.
	DefaultEnrichMaxTools = 500
	// DefaultEnrichBatch and DefaultEnrichConcurrency are the tools per
	// request and the requests in flight.
	DefaultEnrichBatch       = 10
	DefaultEnrichConcurrency = 1
	// DefaultEnrichDailyTools and DefaultEnrichDailyTokens are the daily
	// budget: about a dollar or two a day with a small model, and enough
	// for a catalog of 2,000 tools in a day.
	DefaultEnrichDailyTools  = 2000
	DefaultEnrichDailyTokens = 1_000_000
	// MaxEnrichDailyTools and MaxEnrichDailyTokens bound the budget.
	MaxEnrichDailyTools  = 10_000_000
	MaxEnrichDailyTokens = 100_000_000_000
	// AnthropicKeyEnv and OpenAIKeyEnv are the default apiKeyEnv of the
	// providers.
	AnthropicKeyEnv = "ANTHROPIC_API_KEY"
	OpenAIKeyEnv    = "OPENAI_API_KEY"
)

// Enrich configures background enrichment (toolsearch.enrich).
type Enrich struct {
	// Enabled turns it on; it is off by default.
	Enabled bool
	// Provider is EnrichSampling (the default), EnrichAnthropic or
	// EnrichOpenAI.
	Provider string
	// Model and BaseURL override the provider's defaults.
	Model, BaseURL string
	// APIKeyEnv names the environment variable the provider's key is read
	// from (AnthropicKeyEnv or OpenAIKeyEnv unless configured; "" for
	// sampling, which needs none).
	APIKeyEnv string
	// APIKey is the key read from APIKeyEnv when the configuration was
	// read, "" when the variable is unset. It is a secret: never print it.
	APIKey string
	// BatchSize and Concurrency are tools per request and requests in
	// flight.
	BatchSize, Concurrency int
	// MaxToolsPerRun bounds the tools one run sends.
	MaxToolsPerRun int
	// DailyBudget bounds what enrichment sends per UTC day.
	DailyBudget EnrichBudget
}

// EnrichBudget is an amount of tools and tokens: a day's budget
// (toolsearch.enrich.dailyBudget), or what was spent against it.
type EnrichBudget struct {
	// Tools counts tool definitions sent to the model and answered.
	Tools int64
	// Tokens counts input and output tokens, as the provider reports them.
	Tokens int64
}

// DefaultEnrich is the enrichment of a file that turns it on and sets
// nothing else.
func DefaultEnrich() Enrich {
	return Enrich{Provider: EnrichSampling, BatchSize: DefaultEnrichBatch, Concurrency: DefaultEnrichConcurrency,
		MaxToolsPerRun: DefaultEnrichMaxTools,
		DailyBudget:    EnrichBudget{Tools: DefaultEnrichDailyTools, Tokens: DefaultEnrichDailyTokens}}
}

// KeyMissing reports whether the provider needs a key that the
// environment did not hold: the API providers do, except an
// OpenAI-compatible server at a configured baseURL (a local one takes
// none) when apiKeyEnv was left to its default.
func (e Enrich) KeyMissing() bool {
	if e.Provider != EnrichAnthropic && e.Provider != EnrichOpenAI || e.APIKey != "" {
		return false
	}
	return !(e.Provider == EnrichOpenAI && e.BaseURL != "" && e.APIKeyEnv == OpenAIKeyEnv)
}

// rawEnrichTop is the JSON shape of the enrichment settings, as they sit
// in the "toolsearch" object.
type rawEnrichTop struct {
	Enrich *struct {
		Enabled        bool   `json:"enabled"`
		Provider       string `json:"provider"`
		Model          string `json:"model"`
		BaseURL        string `json:"baseURL"`
		APIKeyEnv      string `json:"apiKeyEnv"`
		Batch          *int   `json:"batch"`
		Concurrency    *int   `json:"concurrency"`
		MaxToolsPerRun *int   `json:"maxToolsPerRun"`
		DailyBudget    *struct {
			Tools  *int64 `json:"tools"`
			Tokens *int64 `json:"tokens"`
		} `json:"dailyBudget"`
	} `json:"enrich"`
}

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// parseEnrich reads toolsearch.enrich from the top-level object, and the
// provider's key from the environment (lookup).
func parseEnrich(cfg *Config, top map[string]json.RawMessage, lookup func(string) (string, bool)) *Error {
	raw, ok := top["toolsearch"]
	if !ok || string(raw) == "null" {
		return nil
	}
	errAt := func(field string, err error) *Error { return &Error{Field: "toolsearch.enrich." + field, Err: err} }
	var rt rawEnrichTop
	if err := json.Unmarshal(raw, &rt); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: "toolsearch." + te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	re := rt.Enrich
	if re == nil {
		return nil
	}
	e := DefaultEnrich()
	e.Enabled, e.Model, e.BaseURL = re.Enabled, re.Model, re.BaseURL
	switch p := strings.ToLower(strings.TrimSpace(re.Provider)); p {
	case "":
	case EnrichSampling, EnrichAnthropic, EnrichOpenAI:
		e.Provider = p
	default:
		return errAt("provider", fmt.Errorf("unknown provider %q (want sampling, anthropic or openai)", re.Provider))
	}
	if re.BaseURL != "" && !strings.HasPrefix(re.BaseURL, "http://") && !strings.HasPrefix(re.BaseURL, "https://") {
		return errAt("baseURL", fmt.Errorf("%q is not an http or https URL", re.BaseURL))
	}
	for _, f := range []struct {
		name string
		v    *int
		max  int
		dst  *int
	}{{"batch", re.Batch, 50, &e.BatchSize}, {"concurrency", re.Concurrency, 16, &e.Concurrency},
		{"maxToolsPerRun", re.MaxToolsPerRun, 1_000_000, &e.MaxToolsPerRun}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > f.max {
			return errAt(f.name, fmt.Errorf("%d is out of range 1..%d", *f.v, f.max))
		}
		*f.dst = *f.v
	}
	if b := re.DailyBudget; b != nil {
		for _, f := range []struct {
			name string
			v    *int64
			max  int64
			dst  *int64
		}{{"dailyBudget.tools", b.Tools, MaxEnrichDailyTools, &e.DailyBudget.Tools},
			{"dailyBudget.tokens", b.Tokens, MaxEnrichDailyTokens, &e.DailyBudget.Tokens}} {
			switch {
			case f.v == nil || *f.v == 0: // the default
			case *f.v < 0 || *f.v > f.max:
				return errAt(f.name, fmt.Errorf("%d is out of range 1..%d (0 or absent is the default)", *f.v, f.max))
			default:
				*f.dst = *f.v
			}
		}
	}
	name := strings.TrimSpace(re.APIKeyEnv)
	switch {
	case name == "":
	case e.Provider == EnrichSampling:
		return errAt("apiKeyEnv", errors.New("provider sampling asks the client's model and needs no key; set provider to anthropic or openai"))
	case !envName.MatchString(name):
		// Not quoted: what was written there may be the key itself.
		return errAt("apiKeyEnv", errors.New("want the name of the environment variable that holds the key "+
			"(letters, digits and _, such as ANTHROPIC_API_KEY), not the key itself"))
	}
	if name == "" {
		switch e.Provider {
		case EnrichAnthropic:
			name = AnthropicKeyEnv
		case EnrichOpenAI:
			name = OpenAIKeyEnv
		}
	}
	e.APIKeyEnv = name
	if name != "" {
		if v, ok := lookup(name); ok {
			e.APIKey = strings.TrimSpace(v)
		}
	}
	cfg.Gateway.Enrich = e
	return nil
}
