package enrich

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// Default models of the providers.
const (
	DefaultAnthropicModel = "claude-haiku-4-5"
	// DefaultOpenAIModel is kept until a successor is measured on
	// enrichment; its shutdown is announced for 2027-01-14.
	DefaultOpenAIModel = "gpt-4.1-mini"
)

// The vendors' API addresses, used when neither Config.BaseURL nor the
// environment names another.
const (
	anthropicAPI = "https://api.anthropic.com"
	openAIAPI    = "https://api.openai.com/v1"
	// anthropicVersion is the Messages API version asked for.
	anthropicVersion = "2023-06-01"
	// maxAnswer bounds the body read from a provider: an answer is a few
	// kilobytes of hints, and a server that sends more is not believed.
	maxAnswer = 4 << 20
)

// Config says how to reach a provider's API.
type Config struct {
	// APIKey is the key sent. Empty means the provider's usual variable:
	// $ANTHROPIC_API_KEY (or the bearer token $ANTHROPIC_AUTH_TOKEN), or
	// $OPENAI_API_KEY.
	APIKey string
	// BaseURL is the API's address; empty means $ANTHROPIC_BASE_URL or
	// $OPENAI_BASE_URL, or the vendor's API.
	BaseURL string
	// Model is the model asked for; empty means the provider's default.
	Model string
	// HTTPClient, when set, sends the requests (tests).
	HTTPClient *http.Client
}

// client returns the HTTP client to send with.
func (c Config) client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

// baseURL returns the API's address without a trailing slash: the
// configured one, else the variable's, else the vendor's.
func (c Config) baseURL(variable, vendor string) string {
	base := c.BaseURL
	if base == "" {
		base = os.Getenv(variable)
	}
	if base == "" {
		base = vendor
	}
	return strings.TrimRight(base, "/")
}

// Anthropic is a Provider over the Anthropic Messages API
// (POST /v1/messages), spoken over net/http with the few fields
// enrichment reads. It never retries by itself: Run retries, so that a
// 429 pauses every request.
type Anthropic struct {
	http   *http.Client
	url    string
	header http.Header
	model  string
}

// NewAnthropic returns a Provider for the Anthropic Messages API.
func NewAnthropic(cfg Config) *Anthropic {
	h := http.Header{"Anthropic-Version": {anthropicVersion}}
	switch {
	case cfg.APIKey != "":
		h.Set("X-Api-Key", cfg.APIKey)
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		h.Set("X-Api-Key", os.Getenv("ANTHROPIC_API_KEY"))
	case os.Getenv("ANTHROPIC_AUTH_TOKEN") != "":
		h.Set("Authorization", "Bearer "+os.Getenv("ANTHROPIC_AUTH_TOKEN"))
	}
	return &Anthropic{
		http:   cfg.client(),
		url:    cfg.baseURL("ANTHROPIC_BASE_URL", anthropicAPI) + "/v1/messages",
		header: h,
		model:  cmp.Or(cfg.Model, DefaultAnthropicModel),
	}
}

// anthropicRequest is the part of a Messages API request enrichment sends.
type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    []anthropicText    `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content []anthropicText `json:"content"`
}

// anthropicText is a text content block.
type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicResponse is the part of a Messages API response enrichment
// reads.
type anthropicResponse struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Complete sends the request as one user message with a system prompt.
func (a *Anthropic) Complete(ctx context.Context, req Request) (Reply, error) {
	body := anthropicRequest{
		Model:     a.model,
		MaxTokens: req.MaxTokens,
		System:    []anthropicText{{Type: "text", Text: req.System}},
		Messages:  []anthropicMessage{{Role: "user", Content: []anthropicText{{Type: "text", Text: req.Prompt}}}},
	}
	var resp anthropicResponse
	if err := post(ctx, a.http, a.url, a.header, body, &resp); err != nil {
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	var text strings.Builder
	for _, b := range resp.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return Reply{Text: text.String(), InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}, nil
}

// OpenAI is a Provider over an OpenAI-compatible Chat Completions API
// (POST /chat/completions under the base URL, /v1/chat/completions at
// OpenAI): OpenAI itself, or a compatible server (Ollama, vLLM, LM
// Studio, OpenRouter) at Config.BaseURL. It never retries by itself, as
// for Anthropic.
type OpenAI struct {
	http   *http.Client
	url    string
	header http.Header
	model  string
	// official is true for OpenAI's own API, which wants
	// max_completion_tokens; compatible servers read max_tokens.
	official bool
}

// NewOpenAI returns a Provider for an OpenAI-compatible Chat Completions
// API.
func NewOpenAI(cfg Config) *OpenAI {
	h := http.Header{}
	if key := cmp.Or(cfg.APIKey, os.Getenv("OPENAI_API_KEY")); key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	if org := os.Getenv("OPENAI_ORG_ID"); org != "" {
		h.Set("OpenAI-Organization", org)
	}
	if project := os.Getenv("OPENAI_PROJECT_ID"); project != "" {
		h.Set("OpenAI-Project", project)
	}
	base := cfg.baseURL("OPENAI_BASE_URL", openAIAPI)
	return &OpenAI{
		http:     cfg.client(),
		url:      base + "/chat/completions",
		header:   h,
		model:    cmp.Or(cfg.Model, DefaultOpenAIModel),
		official: strings.HasPrefix(base+"/", "https://api.openai.com/"),
	}
}

// openAIRequest is the part of a Chat Completions request enrichment
// sends.
type openAIRequest struct {
	Model               string          `json:"model"`
	Messages            []openAIMessage `json:"messages"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
}

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// openAIResponse is the part of a Chat Completions response enrichment
// reads.
type openAIResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete sends the request as a system and a user message.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Reply, error) {
	body := openAIRequest{
		Model:    o.model,
		Messages: []openAIMessage{{Role: "system", Content: req.System}, {Role: "user", Content: req.Prompt}},
	}
	if o.official {
		body.MaxCompletionTokens = req.MaxTokens
	} else {
		body.MaxTokens = req.MaxTokens
	}
	var resp openAIResponse
	if err := post(ctx, o.http, o.url, o.header, body, &resp); err != nil {
		return Reply{}, fmt.Errorf("openai: %w", err)
	}
	var text string
	if len(resp.Choices) > 0 {
		text = resp.Choices[0].Message.Content
	}
	return Reply{Text: text, InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}, nil
}

// post sends body as JSON to url and decodes a 2xx answer into out. An
// error status is a *StatusError carrying the API's message and the wait
// the answer asks for; a network failure is returned as it is, for the
// retry loop to recognise.
func post(ctx context.Context, client *http.Client, url string, header http.Header, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("making the request: %w", err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "toolsearch-enrich")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{StatusCode: resp.StatusCode, RetryAfter: RetryAfter(resp.Header), Message: clipMessage(apiMessage(data))}
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("the answer is larger than %d bytes", maxAnswer)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer is not the API's JSON (%s): %w", clipMessage(utf8cut.Prefix(string(data), 120)), err)
	}
	return nil
}

// apiMessage reads the message of an error answer: both APIs send
// {"error":{"message":…}}; anything else is shown as it came.
func apiMessage(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return utf8cut.Prefix(string(data), 600)
}

// clipMessage bounds an error message from a provider, which is shown to
// the user.
func clipMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = utf8cut.Prefix(s, 300) + "…"
	}
	return s
}
