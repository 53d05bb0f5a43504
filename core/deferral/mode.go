// Package deferral decides, for one request, which tools are deferred (known
// to the runtime, hidden from the model until a search loads them) and
// whether tool search is on at all. Every decision carries a reason a user
// can read.
//
// The rules (DESIGN.md §3):
//
//   - A tool from an MCP server is deferred by default; a built-in tool only
//     when it says so.
//   - Never deferred: the search tool itself, tools marked always-load and the
//     host's primary-channel tool. At least one tool stays loaded.
//   - Mode "on" turns search on whenever something can be deferred; "off"
//     never; "auto" when the deferred definitions exceed 10% of the model's
//     context window; "auto:N" when they exceed N%.
//   - Search is off, with the reason given, when the model or the endpoint
//     cannot take tool references and the caller cannot emulate them.
//
// The package does no I/O and imports no transport or SDK.
package deferral

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of a Mode.
type Kind uint8

// Mode kinds.
const (
	// On defers every deferrable tool whenever there is one.
	On Kind = iota
	// Off never defers: every tool is sent in full.
	Off
	// Auto defers only when the deferrable definitions exceed a share of
	// the context window.
	Auto
)

// DefaultAutoPercent is the share of the context window, in percent, past
// which mode "auto" turns search on.
const DefaultAutoPercent = 10

// Mode says when tool search is used. The zero value is mode "on".
type Mode struct {
	// Kind is on, off or auto.
	Kind Kind
	// Percent is the threshold of an Auto mode, 1 to 100; 0 means
	// DefaultAutoPercent. It is ignored for On and Off.
	Percent int
}

// ParseMode reads a mode as a user writes it: "on" (also "true", "1" and the
// empty string), "off" (also "false", "0"), "auto", or "auto:N" with N a
// whole percentage from 1 to 100. Case and surrounding space are ignored.
func ParseMode(s string) (Mode, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "", "on", "true", "1", "yes":
		return Mode{Kind: On}, nil
	case "off", "false", "0", "no":
		return Mode{Kind: Off}, nil
	case "auto":
		return Mode{Kind: Auto, Percent: DefaultAutoPercent}, nil
	}
	rest, ok := strings.CutPrefix(v, "auto:")
	if !ok {
		return Mode{}, fmt.Errorf("tool search mode %q: want on, off, auto or auto:N (N a percentage from 1 to 100)", s)
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), "%")
	n, err := strconv.Atoi(rest)
	if err != nil {
		return Mode{}, fmt.Errorf("tool search mode %q: %q is not a whole percentage", s, rest)
	}
	if n < 1 || n > 100 {
		return Mode{}, fmt.Errorf("tool search mode %q: the percentage must be from 1 to 100, not %d", s, n)
	}
	return Mode{Kind: Auto, Percent: n}, nil
}

// percent returns the effective threshold of an Auto mode.
func (m Mode) percent() int {
	if m.Percent <= 0 {
		return DefaultAutoPercent
	}
	return min(m.Percent, 100)
}

// String writes the mode the way ParseMode reads it.
func (m Mode) String() string {
	switch m.Kind {
	case Off:
		return "off"
	case Auto:
		if m.percent() == DefaultAutoPercent {
			return "auto"
		}
		return "auto:" + strconv.Itoa(m.percent())
	}
	return "on"
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMode.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
