package enrich

import (
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// PricesAsOf is the day the prices of Prices were read from the vendors'
// pages. Prices change: an estimate made with them is only as good as
// this date is recent.
const PricesAsOf = "2026-12-02"

// Vendors of the priced models.
const (
	VendorAnthropic = "anthropic"
	VendorOpenAI    = "openai"
)

// Price is a model's published price for standard requests (no batch or
// cache discount), in US dollars per million tokens.
type Price struct {
	// Model is the model's ID; its dated snapshots (claude-haiku-4-5-20251001,
	// gpt-4.1-mini-2025-04-14) have the same price.
	Model string
	// Vendor is VendorAnthropic or VendorOpenAI.
	Vendor string
	// Input and Output are dollars per million input and output tokens.
	Input, Output float64
	// Note says what the estimate leaves out, when something is.
	Note string
}

// prices is the table PriceOf reads, read on PricesAsOf from:
//
//   - Anthropic, each model's overview page,
//     https://platform.claude.com/docs/en/models/<model>/overview (haiku-4-5,
//     haiku-5-5, sonnet-4-5, sonnet-5-5), and
//     https://platform.claude.com/docs/en/about-claude/pricing;
//   - OpenAI, https://developers.openai.com/api/docs/models/<model> (gpt-4.1-nano,
//     gpt-5-mini) and https://developers.openai.com/api/docs/pricing. For
//     gpt-4.1-mini, whose own page could not be read, the input price is the
//     one OpenAI's gpt-4.1-nano page compares it at, and the output price the
//     one the OpenAI row of https://vercel.com/ai-gateway/models/gpt-4.1-mini
//     lists (other listings agree on both).
//
// Claude Haiku 5.5 and Sonnet 5.5 use a newer tokenizer that Anthropic says
// counts about 30% more tokens for the same text than Haiku 4.5's; the
// estimates use catalog.ClaudeTokenFactor for every Claude model all the
// same, so theirs are likely low.
var prices = []Price{
	{Model: "claude-haiku-4-5", Vendor: VendorAnthropic, Input: 1, Output: 5},
	{Model: "claude-haiku-5-5", Vendor: VendorAnthropic, Input: 0.10, Output: 0.50,
		Note: "for prompts up to 100,000 tokens; newer tokenizer, likely more tokens"},
	{Model: "claude-sonnet-4-5", Vendor: VendorAnthropic, Input: 3, Output: 15,
		Note: "deprecated; its retirement was announced for 2026-11-30"},
	{Model: "claude-sonnet-5-5", Vendor: VendorAnthropic, Input: 2, Output: 10,
		Note: "newer tokenizer, likely more tokens"},
	{Model: "gpt-4.1-mini", Vendor: VendorOpenAI, Input: 0.40, Output: 1.60},
	{Model: "gpt-4.1-nano", Vendor: VendorOpenAI, Input: 0.10, Output: 0.40},
	{Model: "gpt-5-mini", Vendor: VendorOpenAI, Input: 0.25, Output: 2,
		Note: "reasoning tokens, billed as output, not counted"},
}

// Prices returns the table of published prices, dated PricesAsOf.
func Prices() []Price { return append([]Price(nil), prices...) }

// PriceOf returns the published price of model, or false when the table
// does not have it (a local model, a gateway's own name, or a model newer
// than the table): there is no guess.
func PriceOf(model string) (Price, bool) {
	for _, p := range prices {
		if model == p.Model {
			return p, true
		}
		if rest, ok := strings.CutPrefix(model, p.Model+"-"); ok && snapshotDate(rest) {
			return p, true
		}
	}
	return Price{}, false
}

// snapshotDate reports whether s is a snapshot's date suffix: 20251001 or
// 2025-04-14.
func snapshotDate(s string) bool {
	if len(s) != 8 && len(s) != 10 {
		return false
	}
	for i, c := range s {
		if len(s) == 10 && (i == 4 || i == 7) {
			if c != '-' {
				return false
			}
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Tokens converts o200k counts into the model's own: Claude models count
// about catalog.ClaudeTokenFactor times as many, OpenAI's models count
// o200k.
func (p Price) Tokens(o200k int) int {
	if p.Vendor == VendorAnthropic {
		return catalog.ClaudeTokens(o200k)
	}
	return o200k
}

// Cost estimates, in US dollars, what input and output tokens (o200k
// counts) cost at p.
func (p Price) Cost(inputO200k, outputO200k int) float64 {
	return (float64(p.Tokens(inputO200k))*p.Input + float64(p.Tokens(outputO200k))*p.Output) / 1e6
}
