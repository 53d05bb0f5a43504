package messages

import (
	"encoding/json"
	"strings"
)

// RenderHistory returns the messages as a request of the strategy sends
// them, and whether any changed:
//
//   - Inline: as they are;
//   - ReferenceAdd: a tool_addition holding a tool_definition names the
//     tool by reference instead (the definition goes in tools);
//   - Classic and Plain: the tool_addition and tool_removal blocks of
//     system messages are left out (the tools they enabled go in tools), a
//     system message left empty is dropped, and the text of the others is
//     folded into user messages (FoldSystemMessages), for an endpoint that
//     may refuse system messages altogether.
//
// Under every strategy a tool change that names by reference a tool that
// is neither sent (sent) nor defined inline before it is left out (the API
// would refuse the request), and so is a tool_addition of a tool the
// policy hides (hidden), whoever wrote it into the history (a compaction
// block comes from the endpoint): a hidden tool is never offered.
func RenderHistory(raws []json.RawMessage, strat Strategy, sent, hidden func(string) bool) ([]json.RawMessage, bool) {
	out := make([]json.RawMessage, 0, len(raws))
	changed := false
	defined := map[string]bool{}
	for _, raw := range raws {
		if role := roleOf(raw); role != "system" && role != "assistant" || !strings.Contains(string(raw), TypeToolAddition) && !strings.Contains(string(raw), TypeToolRemoval) {
			out = append(out, raw)
			continue
		}
		if roleOf(raw) == "assistant" {
			// A compaction block's tool_changes: hidden tools go, and
			// under ReferenceAdd definitions are named by reference.
			out2, changed2 := renderCompaction(raw, strat, sent, hidden)
			out = append(out, out2)
			changed = changed || changed2
			continue
		}
		obj, blocks, ok := contentArray(raw)
		if !ok {
			out = append(out, raw)
			continue
		}
		kept := make([]json.RawMessage, 0, len(blocks))
		dropped := false
		for _, b := range blocks {
			var rb rawBlock
			_ = json.Unmarshal(b, &rb)
			if rb.Type != TypeToolAddition && rb.Type != TypeToolRemoval {
				kept = append(kept, b)
				continue
			}
			c, ok := readChange(rb, "")
			switch {
			case strat == Classic || strat == Plain || strat == StrategyAuto:
				dropped = true
			case ok && !c.Remove && hidden(c.Name):
				dropped = true
			case !ok:
				kept = append(kept, b) // not ours to judge
			case c.Kind == TypeToolDefinition && strat == Inline:
				defined[c.Name] = true
				kept = append(kept, b)
			case c.Kind == TypeToolDefinition || c.Kind == TypeToolReference:
				if !sent(c.Name) && !defined[c.Name] {
					dropped = true
					continue
				}
				if c.Kind == TypeToolDefinition {
					b = mustMarshal(map[string]any{"type": rb.Type, "tool": map[string]any{"type": TypeToolReference, "name": c.Name}})
					dropped = true
				}
				kept = append(kept, b)
			default:
				kept = append(kept, b)
			}
		}
		if !dropped {
			out = append(out, raw)
			continue
		}
		changed = true
		if len(kept) == 0 {
			continue
		}
		obj.Set("content", joinArray(kept))
		out = append(out, obj.Marshal())
	}
	if strat == Classic || strat == Plain {
		var n int
		out, n = FoldSystemMessages(out)
		changed = changed || n > 0
	}
	return out, changed
}

// renderCompaction returns an assistant message whose compaction blocks'
// tool_changes add no hidden tool and, under ReferenceAdd, hold no whole
// definition: a tool_definition names its tool by reference when the tool
// is sent, and is left out otherwise (the API would refuse a reference to
// a tool it does not have).
func renderCompaction(raw json.RawMessage, strat Strategy, sent, hidden func(string) bool) (json.RawMessage, bool) {
	obj, blocks, ok := contentArray(raw)
	if !ok {
		return raw, false
	}
	changed := false
	for i, b := range blocks {
		var rb rawBlock
		if json.Unmarshal(b, &rb) != nil || rb.Type != TypeCompaction || len(rb.ToolChanges) == 0 {
			continue
		}
		kept := make([]json.RawMessage, 0, len(rb.ToolChanges))
		edited := false
		for _, tc := range rb.ToolChanges {
			var cb rawBlock
			_ = json.Unmarshal(tc, &cb)
			c, ok := readChange(cb, "")
			switch {
			case ok && !c.Remove && hidden(c.Name):
				edited = true
				continue
			case ok && strat == ReferenceAdd && c.Kind == TypeToolDefinition:
				edited = true
				if !sent(c.Name) {
					continue
				}
				tc = mustMarshal(map[string]any{"type": cb.Type, "tool": map[string]any{"type": TypeToolReference, "name": c.Name}})
			}
			kept = append(kept, tc)
		}
		if !edited {
			continue
		}
		bo, err := parseObject(b)
		if err != nil {
			continue
		}
		bo.Set("tool_changes", joinArray(kept))
		blocks[i] = bo.Marshal()
		changed = true
	}
	if !changed {
		return raw, false
	}
	obj.Set("content", joinArray(blocks))
	return obj.Marshal(), true
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("messages: marshal: " + err.Error()) // only maps of strings and raw JSON reach here
	}
	return b
}
