package enrich

import (
	"math"
	"testing"
	"time"
)

func TestPriceOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  string // the row's model; "" for none
	}{
		{DefaultAnthropicModel, "claude-haiku-4-5"},
		{DefaultOpenAIModel, "gpt-4.1-mini"},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-5-mini", "gpt-5-mini"},
		{"gpt-4.1-nano", "gpt-4.1-nano"},
		{"claude-sonnet-5-5", "claude-sonnet-5-5"},
		// Not a date: another model, not priced.
		{"gpt-4.1-mini-fast", ""},
		{"gpt-4.1-mini-2025-04", ""},
		{"claude-haiku-4-5-2025100a", ""},
		{"gpt-4.1", ""},
		{"llama3.1", ""},
		{"openai/gpt-4.1-mini", ""},
		{"", ""},
	}
	for _, tt := range tests {
		p, ok := PriceOf(tt.model)
		if ok != (tt.want != "") || p.Model != tt.want {
			t.Errorf("PriceOf(%q) = %q, %v; want %q", tt.model, p.Model, ok, tt.want)
		}
	}
}

// TestPriceTable: both default models are priced, every row is sane, and
// the table is dated.
func TestPriceTable(t *testing.T) {
	t.Parallel()
	if _, err := time.Parse(time.DateOnly, PricesAsOf); err != nil {
		t.Errorf("PricesAsOf %q is not a date: %v", PricesAsOf, err)
	}
	seen := map[string]bool{}
	for _, p := range Prices() {
		if seen[p.Model] || p.Input <= 0 || p.Output < p.Input || (p.Vendor != VendorAnthropic && p.Vendor != VendorOpenAI) {
			t.Errorf("row %+v", p)
		}
		seen[p.Model] = true
	}
	for _, m := range []string{DefaultAnthropicModel, DefaultOpenAIModel} {
		if !seen[m] {
			t.Errorf("the default model %s has no price", m)
		}
	}
}

func TestPriceCost(t *testing.T) {
	t.Parallel()
	haiku, _ := PriceOf("claude-haiku-4-5")
	// Claude counts 1.2 times o200k: 1.2M input at $1, 120k output at $5.
	if got := haiku.Cost(1_000_000, 100_000); math.Abs(got-1.8) > 1e-9 {
		t.Errorf("haiku cost %v, want 1.8", got)
	}
	mini, _ := PriceOf("gpt-4.1-mini")
	if got := mini.Cost(1_000_000, 100_000); math.Abs(got-0.56) > 1e-9 {
		t.Errorf("gpt-4.1-mini cost %v, want 0.56", got)
	}
}
