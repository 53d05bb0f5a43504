package enrich

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	openai "github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// Default models of the providers.
const (
	DefaultAnthropicModel = string(anthropic.ModelClaudeHaiku4_5)
	//lint:ignore SA1019 kept as the default until a successor is measured on enrichment; its shutdown is announced for 2027-01-14
	DefaultOpenAIModel = string(openai.ChatModelGPT4_1Mini)
)

// Config says how to reach a provider's API.
type Config struct {
	// APIKey is the key sent. Empty means the SDK's own variable
	// ($ANTHROPIC_API_KEY or $OPENAI_API_KEY).
	APIKey string
	// BaseURL is the API's address; empty means the SDK's variable
	// ($ANTHROPIC_BASE_URL or $OPENAI_BASE_URL) or the vendor's API.
	BaseURL string
	// Model is the model asked for; empty means the provider's default.
	Model string
	// HTTPClient, when set, sends the requests (tests).
	HTTPClient *http.Client
}

// Anthropic is a Provider over the Anthropic Messages API
// (POST /v1/messages), through the official SDK. The SDK's own retries
// are off: Run retries, so that a 429 pauses every request.
type Anthropic struct {
	client anthropic.Client
	model  string
}

// NewAnthropic returns a Provider for the Anthropic Messages API.
func NewAnthropic(cfg Config) *Anthropic {
	opts := []aoption.RequestOption{aoption.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, aoption.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, aoption.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, aoption.WithHTTPClient(cfg.HTTPClient))
	}
	m := cfg.Model
	if m == "" {
		m = DefaultAnthropicModel
	}
	return &Anthropic{client: anthropic.NewClient(opts...), model: m}
}

// Complete sends the request as one user message with a system prompt.
func (a *Anthropic) Complete(ctx context.Context, req Request) (Reply, error) {
	msg, err := a.client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(a.model),
		MaxTokens: int64(req.MaxTokens),
		System:    []anthropic.TextBlockParam{{Text: req.System}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(req.Prompt))},
	})
	if err != nil {
		var ae *anthropic.Error
		if errors.As(err, &ae) {
			return Reply{}, statusError(ae.StatusCode, ae.Response, ae.Message)
		}
		return Reply{}, fmt.Errorf("anthropic: %w", err)
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return Reply{Text: text.String(), InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens)}, nil
}

// OpenAI is a Provider over an OpenAI-compatible Chat Completions API
// (POST /v1/chat/completions), through the official SDK: OpenAI itself,
// or a compatible server (Ollama, vLLM, LM Studio, OpenRouter) at
// Config.BaseURL. The SDK's own retries are off, as for Anthropic.
type OpenAI struct {
	client openai.Client
	model  string
	// official is true for OpenAI's own API, which wants
	// max_completion_tokens; compatible servers read max_tokens.
	official bool
}

// NewOpenAI returns a Provider for an OpenAI-compatible Chat Completions
// API.
func NewOpenAI(cfg Config) *OpenAI {
	opts := []ooption.RequestOption{ooption.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, ooption.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, ooption.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, ooption.WithHTTPClient(cfg.HTTPClient))
	}
	m := cfg.Model
	if m == "" {
		m = DefaultOpenAIModel
	}
	base := cfg.BaseURL
	if base == "" {
		base = os.Getenv("OPENAI_BASE_URL") // as the SDK reads it
	}
	official := base == "" || strings.HasPrefix(base, "https://api.openai.com/")
	return &OpenAI{client: openai.NewClient(opts...), model: m, official: official}
}

// Complete sends the request as a system and a user message.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Reply, error) {
	p := openai.ChatCompletionNewParams{
		Model: openai.ChatModel(o.model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(req.System),
			openai.UserMessage(req.Prompt),
		},
	}
	if o.official {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	} else {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	resp, err := o.client.Chat.Completions.New(ctx, p)
	if err != nil {
		var oe *openai.Error
		if errors.As(err, &oe) {
			return Reply{}, statusError(oe.StatusCode, oe.Response, oe.Message)
		}
		return Reply{}, fmt.Errorf("openai: %w", err)
	}
	var text string
	if len(resp.Choices) > 0 {
		text = resp.Choices[0].Message.Content
	}
	return Reply{Text: text, InputTokens: int(resp.Usage.PromptTokens), OutputTokens: int(resp.Usage.CompletionTokens)}, nil
}

// statusError makes a StatusError of an SDK's API error.
func statusError(code int, resp *http.Response, msg string) *StatusError {
	se := &StatusError{StatusCode: code, Message: clipMessage(msg)}
	if resp != nil {
		se.RetryAfter = RetryAfter(resp.Header)
	}
	return se
}

// clipMessage bounds an error message from a provider, which is shown to
// the user.
func clipMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
