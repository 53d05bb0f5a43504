package anthropictest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Betas of the mid-conversation tool changes.
const (
	BetaToolChanges = "mid-conversation-tool-changes-2026-07-01"
	BetaInlineTools = "inline-tools-2026-09-15"
)

// The rules the stand-in applies to tool changes (tool_addition and
// tool_removal blocks), as the SDK's types document them:
//
//   - they appear in {"role":"system"} messages, and as the tool_changes of
//     a compaction block in an assistant message; both need the beta
//     mid-conversation-tool-changes-2026-07-01;
//   - a tool_addition's tool is a tool_reference (a tool declared in tools,
//     or, with inline-tools-2026-09-15, one defined earlier in messages),
//     or, with inline-tools-2026-09-15, a tool_definition whose definition
//     is a tools entry, checked like one, whose name may not be taken by
//     another tool (tool_name_conflict);
//   - a tool_removal's tool is a tool_reference to a tool declared in tools
//     or defined earlier; it withdraws the tool from that point on (a
//     withdrawn inline tool may be added again, by reference or by a new
//     definition);
//   - MCP tool and toolset references need MCP servers, which the
//     stand-in does not run: they are refused.
//
// A system message cannot come between a tool_use and its tool_result,
// and must have content.

// systemBlocks reads the content of a system-role message.
func (s *Server) systemBlocks(raw json.RawMessage, where string) ([]Block, *apiError) {
	var blocks []Block
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if str == "" {
			return nil, badRequest("%s: a system message must have content", where)
		}
		return []Block{{Type: "text", Text: str}}, nil
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badRequest("%s: Input should be a valid list", where)
	}
	if len(blocks) == 0 {
		return nil, badRequest("%s: a system message must have content", where)
	}
	for j, b := range blocks {
		w := fmt.Sprintf("%s.%d", where, j)
		switch b.Type {
		case "text":
		case "tool_addition", "tool_removal":
			if s.opts.NoToolChanges {
				return nil, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'text'", w, b.Type)
			}
		default:
			return nil, badRequest("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'tool_addition', 'tool_removal'", w, b.Type)
		}
	}
	return blocks, nil
}

// compactionChanges checks the tool_changes of a compaction block.
func (s *Server) compactionChanges(b *Block, where string) *apiError {
	for k, raw := range b.ToolChanges {
		var c Block
		if err := json.Unmarshal(raw, &c); err != nil || (c.Type != "tool_addition" && c.Type != "tool_removal") {
			return badRequest("%s.tool_changes.%d: Input tag '%s' found using 'type' does not match any of the expected tags: 'tool_addition', 'tool_removal'", where, k, c.Type)
		}
		if s.opts.NoToolChanges {
			return badRequest("%s.tool_changes: Extra inputs are not permitted", where)
		}
	}
	return nil
}

// changeTool is the tool of a tool change.
type changeTool struct {
	Type       string                     `json:"type"`
	Name       string                     `json:"name"`
	ServerName string                     `json:"server_name"`
	Definition map[string]json.RawMessage `json:"definition"`
}

// applyToolChanges checks every tool change in conversation order and
// applies it to req.Visible and req.Inline. declared are the names in
// tools.
func (s *Server) applyToolChanges(req *Request, declared map[string]bool) *apiError {
	has := func(b string) bool { return slices.Contains(req.Betas, b) }
	defined := map[string]bool{} // defined by a tool_definition and not withdrawn
	ever := map[string]bool{}    // defined by a tool_definition so far
	apply := func(b Block, where string) *apiError {
		if !has(BetaToolChanges) {
			return badRequest("%s: %s blocks need the anthropic-beta header %s", where, b.Type, BetaToolChanges)
		}
		var t changeTool
		if err := json.Unmarshal(b.Tool, &t); err != nil || t.Type == "" {
			return badRequest("%s.tool: Field required", where)
		}
		known := func(name string) bool { return declared[name] || (has(BetaInlineTools) && ever[name]) }
		switch {
		case t.Type == "tool_reference":
			if t.Name == "" {
				return badRequest("%s.tool.name: Field required", where)
			}
			if !known(t.Name) {
				return badRequest("%s.tool: Tool reference '%s' not found in available tools", where, t.Name)
			}
			req.Visible[t.Name] = b.Type == "tool_addition"
		case t.Type == "tool_definition" && b.Type == "tool_addition":
			if s.opts.NoInlineTools {
				return badRequest("%s.tool: Input tag 'tool_definition' found using 'type' does not match any of the expected tags: 'tool_reference', 'mcp_tool_reference', 'mcp_toolset_reference'", where)
			}
			if !has(BetaInlineTools) {
				return badRequest("%s.tool: tool_definition needs the anthropic-beta header %s", where, BetaInlineTools)
			}
			if t.Definition == nil {
				return badRequest("%s.tool.definition: Field required", where)
			}
			def, err := s.readTool(t.Definition, where+".tool.definition", req)
			if err != nil {
				return err
			}
			if declared[def.Name] || defined[def.Name] {
				return badRequest("%s.tool.definition: tool_name_conflict: a tool named '%s' is already available", where, def.Name)
			}
			if def.Deferred {
				return badRequest("%s.tool.definition.defer_loading: an inline definition is loaded where it is added", where)
			}
			defined[def.Name] = true
			ever[def.Name] = true
			req.Inline[def.Name] = def
			req.Visible[def.Name] = true
		case t.Type == "mcp_tool_reference" || t.Type == "mcp_toolset_reference":
			return badRequest("%s.tool: MCP server '%s' is not in mcp_servers", where, t.ServerName)
		default:
			return badRequest("%s.tool: Input tag '%s' found using 'type' does not match any of the expected tags", where, t.Type)
		}
		if b.Type == "tool_removal" {
			delete(defined, t.Name)
		}
		return nil
	}
	for i, m := range req.Messages {
		for j, b := range m.Blocks {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case m.Role == "system" && (b.Type == "tool_addition" || b.Type == "tool_removal"):
				if err := apply(b, where); err != nil {
					return err
				}
			case m.Role == "assistant" && b.Type == "compaction":
				for k, raw := range b.ToolChanges {
					var c Block
					_ = json.Unmarshal(raw, &c)
					if err := apply(c, fmt.Sprintf("%s.tool_changes.%d", where, k)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// hasToolUse reports whether a message holds a tool_use block.
func hasToolUse(m Message) bool {
	for _, b := range m.Blocks {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

// lastTurn is the last message that is not a system message.
func lastTurn(req *Request) Message {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != "system" {
			return req.Messages[i]
		}
	}
	return req.Messages[len(req.Messages)-1]
}
