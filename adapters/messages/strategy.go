package messages

import (
	"fmt"
	"strings"
)

// Strategy is how the tools a search discovers reach the model.
//
// From the richest to the plainest, each a fallback for the one before:
//
//   - Inline: tools holds only the loaded tools and the search tool; each
//     discovered definition is added where it is found, as a tool_addition
//     block holding a tool_definition in a {"role":"system"} message
//     (betas mid-conversation-tool-changes-2026-07-01 and
//     inline-tools-2026-09-15). The smallest requests, no 10,000-tool
//     ceiling, and the tools array never changes.
//   - ReferenceAdd: the catalog is declared in tools with defer_loading,
//     and each discovered tool is enabled by a tool_addition block holding
//     a tool_reference in a system message (beta
//     mid-conversation-tool-changes-2026-07-01).
//   - Classic: discovered tools are sent in tools with defer_loading and
//     loaded by tool_reference blocks in the search answers. Works wherever
//     tool search works.
//   - Plain: for an endpoint that takes no tool search at all: the search
//     tool is an ordinary function tool whose answer names the tools found,
//     which are then sent as ordinary tools (Wire Expand).
//
// A tool a catalog change removed is withdrawn with a tool_removal block
// under Inline and ReferenceAdd; under Classic its last definition stays in
// tools as long as a reference in the history names it.
type Strategy uint8

// Strategies. StrategyAuto leaves the choice to the caller (package
// anthropic chooses one per endpoint and model).
const (
	StrategyAuto Strategy = iota
	Inline
	ReferenceAdd
	Classic
	Plain
)

// Betas of the mid-conversation tool changes (anthropic-sdk-go names them
// AnthropicBetaMidConversationToolChanges2026_07_01 and
// AnthropicBetaInlineTools2026_09_15).
const (
	BetaToolChanges = "mid-conversation-tool-changes-2026-07-01"
	BetaInlineTools = "inline-tools-2026-09-15"
)

// String names the strategy.
func (s Strategy) String() string {
	switch s {
	case Inline:
		return "inline"
	case ReferenceAdd:
		return "reference-add"
	case Classic:
		return "classic"
	case Plain:
		return "plain"
	}
	return "auto"
}

// ParseStrategy reads "auto", "inline", "reference-add", "classic" or
// "plain".
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return StrategyAuto, nil
	case "inline":
		return Inline, nil
	case "reference-add", "reference":
		return ReferenceAdd, nil
	case "classic":
		return Classic, nil
	case "plain", "expand":
		return Plain, nil
	}
	return 0, fmt.Errorf("strategy %q: want auto, inline, reference-add, classic or plain", s)
}

// Next is the strategy to fall back to, and false for Plain (there is
// nothing plainer).
func (s Strategy) Next() (Strategy, bool) {
	switch s {
	case StrategyAuto, Inline:
		return ReferenceAdd, true
	case ReferenceAdd:
		return Classic, true
	case Classic:
		return Plain, true
	}
	return Plain, false
}

// Betas are the anthropic-beta values a request of this strategy needs.
func (s Strategy) Betas() []string {
	switch s {
	case Inline:
		return []string{BetaToolChanges, BetaInlineTools}
	case ReferenceAdd:
		return []string{BetaToolChanges}
	}
	return nil
}

// UsesAdditions reports whether discovered tools are enabled by
// tool_addition blocks.
func (s Strategy) UsesAdditions() bool { return s == Inline || s == ReferenceAdd }

// Refusal is what a 400 says the endpoint does not take (RefusalTo).
type Refusal struct {
	// Feature names what was refused as the request spells it
	// ("tool_definition", "tool_addition", "tool_reference",
	// "defer_loading", a beta's name), or "system message".
	Feature string
	// Below is the richest strategy that does without the feature.
	Below Strategy
	// Message is the endpoint's message, clipped.
	Message string
}
