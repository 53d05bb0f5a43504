package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/responses"
)

// Callable reports whether the model could call the function a
// function_call names (namespace and name) in its reply to this turn's
// request: a tool the request showed it (a function sent without
// defer_loading, or a tool loaded so far), or one a tool_search_output of
// the reply itself loaded (resp may be nil). Otherwise it returns the error
// to answer the call with instead of running it: the tool is deferred and
// no search loaded it (a call does not load it), or Resolve's reason, or no
// tool has that name. Names are exact: one that differs only in case is
// not the tool (the error names the tool meant).
func (t *Turn) Callable(namespace, name string, resp *responses.Response) error {
	if t.ts == nil {
		return fmt.Errorf("openai: Callable of a Turn that Toolset.Turn did not build")
	}
	w := t.ts.flatName(namespace, name)
	if name != "" && t.shown[w] {
		return nil
	}
	if resp != nil && name != "" {
		items := make([]json.RawMessage, 0, len(resp.Output))
		for _, it := range resp.Output {
			if raw := it.RawJSON(); json.Valid([]byte(raw)) {
				items = append(items, json.RawMessage(raw))
			}
		}
		if t.ts.readResponses(items).loaded.Has(w) {
			return nil
		}
	}
	shown := w
	if len(shown) > 128 {
		shown = shown[:128] + "…"
	}
	how := "search for it first"
	if t.Decision.SearchOn && t.ts.searchName != "" {
		how = fmt.Sprintf("search for it with %s first", t.ts.searchName)
	}
	if _, ok := t.ts.byWire[w]; ok && t.Decision.IsDeferred(w) {
		return fmt.Errorf("the tool %q is deferred and has not been loaded: %s, then call it", shown, how)
	}
	for n := range t.shown {
		if strings.EqualFold(n, w) {
			return fmt.Errorf("there is no tool named %q (tool names are exact); did you mean %q?", shown, n)
		}
	}
	for n := range t.ts.byWire {
		if strings.EqualFold(n, w) && t.Decision.IsDeferred(n) {
			return fmt.Errorf("there is no tool named %q (tool names are exact); did you mean the deferred tool %q? %s", shown, n, how)
		}
	}
	if len(namespace)+len(name) <= 128 {
		// Resolve's reason (hidden, or its server gone), which echoes the
		// name: bounded.
		if _, err := t.ts.Resolve(namespace, name); err != nil {
			return err
		}
	}
	return fmt.Errorf("there is no tool named %q", shown)
}

// shownFunctions returns the tools a request shows the model: those loaded
// so far and the functions of tools without defer_loading.
func shownFunctions(loaded []string, tools []responses.ToolUnionParam) map[string]bool {
	out := make(map[string]bool, len(loaded)+len(tools))
	for _, n := range loaded {
		out[n] = true
	}
	for _, tl := range tools {
		b, err := json.Marshal(tl)
		if err != nil {
			continue
		}
		var v struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Defer bool   `json:"defer_loading"`
		}
		if json.Unmarshal(b, &v) == nil && v.Type == "function" && v.Name != "" && !v.Defer {
			out[v.Name] = true
		}
	}
	return out
}
