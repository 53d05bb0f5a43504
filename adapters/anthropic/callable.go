package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/core/discovery"
)

// Callable reports whether the model could call the tool named name in its
// reply to this turn's request: a tool the request showed it (sent without
// defer_loading, loaded by a search, carried across compaction or added by
// a tool_addition), or one the API's own search loaded in reply itself
// (reply may be nil). Otherwise it returns the error to answer the call
// with (is_error) instead of running it: the tool is deferred and no
// search loaded it — as the API has it, a deferred tool cannot be called
// until it is loaded, and the call does not load it — or no tool has that
// name. Names are exact: one that differs only in case is not the tool
// (the error names the tool meant).
func (t *Turn) Callable(name string, reply *sdk.Message) error {
	if t.visible[name] && name != "" {
		return nil
	}
	if reply != nil && loadedBy(reply).Has(name) {
		return nil
	}
	return t.notCallable(name)
}

// loadedBy reads the tools a reply's server-side search results loaded,
// from each block's JSON as received (the SDK's union does not re-encode
// tool references).
func loadedBy(reply *sdk.Message) *discovery.Set {
	blocks := make([]json.RawMessage, 0, len(reply.Content))
	for _, b := range reply.Content {
		if raw := b.RawJSON(); json.Valid([]byte(raw)) {
			blocks = append(blocks, json.RawMessage(raw))
		}
	}
	content, err := json.Marshal(blocks)
	if err != nil {
		return &discovery.Set{}
	}
	msg, err := json.Marshal(map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`), "content": content})
	if err != nil {
		return &discovery.Set{}
	}
	h := messages.ReadHistory([]json.RawMessage{msg}, "")
	return &h.Referenced
}

// notCallable is Callable's error for a name the model was not shown.
func (t *Turn) notCallable(name string) error {
	shown := name
	if len(shown) > 128 {
		shown = shown[:128] + "…"
	}
	how := "search for it first"
	if t.searchName != "" {
		how = fmt.Sprintf("search for it with %s first", t.searchName)
	}
	if t.deferred(name) {
		return fmt.Errorf("tool %q is deferred and has not been loaded: %s, then call it", shown, how)
	}
	for n := range t.visible {
		if n != "" && strings.EqualFold(n, name) {
			return fmt.Errorf("there is no tool named %q (tool names are exact); did you mean %q?", shown, n)
		}
	}
	if t.deferredFold != nil {
		if n := t.deferredFold(name); n != "" {
			return fmt.Errorf("there is no tool named %q (tool names are exact); did you mean the deferred tool %q? %s", shown, n, how)
		}
	}
	return fmt.Errorf("there is no tool named %q", shown)
}
