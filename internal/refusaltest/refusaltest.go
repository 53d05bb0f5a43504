// Package refusaltest holds the error texts real endpoints answer when
// they refuse a request, each with where it comes from, and how a reader
// of refusals should read each against one request: the table that
// package messages, the anthropic library and the proxy are all tested
// with, so that the three read refusals the same way.
package refusaltest

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed refusals.json
var table []byte

// Case is one error text.
type Case struct {
	// Name names the case for a subtest.
	Name string `json:"name"`
	// Source says where the text comes from.
	Source string `json:"source"`
	// Body is the error body as the endpoint sent it.
	Body string `json:"body"`
	// Want is how it reads against Table.Request: "inline", "fold" or
	// "emulate" (the level the error makes a caller drop: inline
	// definitions by reference, system messages folded, tool search
	// emulated), "client" when it names something of the request no level
	// drops, "nothing" when it names nothing the request used.
	Want string `json:"want"`
}

// Table is the request the cases answered and the cases.
type Table struct {
	// Request is the body of the request, as Claude Code sends it with
	// tool search on: a system-role message, deferred tools, a
	// tool_reference in the history.
	Request string `json:"request"`
	// Betas are the anthropic-beta header values it was sent with.
	Betas []string `json:"betas"`
	// Cases are the error texts.
	Cases []Case `json:"cases"`
}

// Load returns the table.
func Load() (Table, error) {
	var t Table
	if err := json.Unmarshal(table, &t); err != nil {
		return Table{}, fmt.Errorf("refusaltest: reading refusals.json: %w", err)
	}
	for i, c := range t.Cases {
		switch c.Want {
		case "inline", "fold", "emulate", "client", "nothing":
		default:
			return Table{}, fmt.Errorf("refusaltest: case %d (%q): want %q is not inline, fold, emulate, client or nothing", i, c.Name, c.Want)
		}
	}
	if len(t.Cases) == 0 || t.Request == "" {
		return Table{}, fmt.Errorf("refusaltest: refusals.json holds no request or no case")
	}
	return t, nil
}
