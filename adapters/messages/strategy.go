package messages

import (
	"fmt"
	"regexp"
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

// Refusal is what a 400 says the endpoint does not take, read by
// ReadRefusal.
type Refusal struct {
	// Feature names what was refused: "tool_definition", "tool_addition",
	// "system message", a beta's name, "tool_reference" or
	// "defer_loading".
	Feature string
	// Below is the richest strategy that does without the feature.
	Below Strategy
	// Message is the endpoint's message, clipped.
	Message string
}

// refusalRule maps words of a 400 to the feature they name. The first
// matching rule wins, so the plainest features come first: an endpoint
// that refuses tool_reference refuses tool search altogether.
var refusalRules = []struct {
	words   []string // all must appear
	feature string
	below   Strategy
}{
	{[]string{"tool_reference"}, "tool_reference", Plain},
	{[]string{"defer_loading"}, "defer_loading", Plain},
	{[]string{"tool_search_tool_"}, "server tool search", Plain},
	{[]string{"advanced-tool-use"}, "advanced-tool-use beta", Plain},
	{[]string{BetaToolChanges}, BetaToolChanges, Classic},
	{[]string{"tool_addition"}, "tool_addition", Classic},
	{[]string{"tool_removal"}, "tool_removal", Classic},
	{[]string{"role", "system"}, "system message", Classic},
	{[]string{"role", "'user' or 'assistant'"}, "system message", Classic},
	{[]string{BetaInlineTools}, BetaInlineTools, ReferenceAdd},
	{[]string{"tool_definition"}, "tool_definition", ReferenceAdd},
}

// RefusalOf reads the message of a 400 (its body or its error text); see
// ReadRefusal.
func RefusalOf(msg string) (Refusal, bool) {
	low := strings.ToLower(msg)
	// A reference to a tool missing from tools is the conversation's
	// fault, not the endpoint's: never downgrade for it.
	if strings.Contains(low, "not found in available tools") {
		return Refusal{}, false
	}
	if m := namedRE.FindStringSubmatch(msg); m != nil {
		name := m[1] + m[2] + m[3]
		if r, ok := refusalOfName(name); ok {
			r.Message = clip(msg, 300)
			return r, true
		}
	}
	unsupported := false
	for _, w := range []string{"does not match any of the expected tags", "extra inputs are not permitted", "not supported",
		"unsupported", "unexpected value", "unknown", "not permitted", "input should be 'user' or 'assistant'", "invalid beta",
		"not available", "not enabled", "does not support"} {
		if strings.Contains(low, w) {
			unsupported = true
			break
		}
	}
	if !unsupported {
		return Refusal{}, false
	}
	for _, r := range refusalRules {
		all := true
		for _, w := range r.words {
			if !strings.Contains(low, strings.ToLower(w)) {
				all = false
				break
			}
		}
		if all {
			return Refusal{Feature: r.feature, Below: r.below, Message: clip(msg, 300)}, true
		}
	}
	return Refusal{}, false
}

// namedRE finds what a validation error names: the tag of "Input tag 'X'
// found", the beta of "Unexpected value(s) `X`", or the last field of a
// path refused as an extra input ("tools.2.defer_loading: Extra inputs").
var namedRE = regexp.MustCompile("Input tag '([^']+)' found|Unexpected value\\(s\\) `([^`]+)`|\\.([a-z_]+): Extra inputs are not permitted")

// refusalOfName maps a refused tag, beta or field to a Refusal.
func refusalOfName(name string) (Refusal, bool) {
	switch name {
	case TypeToolReference, "defer_loading", "advanced-tool-use-2025-11-20", "tool-search-tool-2025-10-19":
		return Refusal{Feature: name, Below: Plain}, true
	case TypeToolAddition, TypeToolRemoval, "tool_changes", BetaToolChanges:
		return Refusal{Feature: name, Below: Classic}, true
	case TypeToolDefinition, BetaInlineTools:
		return Refusal{Feature: name, Below: ReferenceAdd}, true
	}
	if strings.HasPrefix(name, "tool_search_tool_") {
		return Refusal{Feature: name, Below: Plain}, true
	}
	return Refusal{}, false
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
