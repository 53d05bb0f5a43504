package anthropic

import (
	"encoding/json"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// The conversation is read and rewritten as raw JSON by package messages,
// which package proxy shares; these names keep the adapter's API whole.

// History is what a conversation says about tool search (see
// messages.History).
type History = messages.History

// Change is a tool_addition or tool_removal read from the history (see
// messages.Change).
type Change = messages.Change

// ReadHistory reads the messages of a conversation, each the JSON of one
// element of the messages array (see messages.ReadHistory). searchTool is
// the name of the client-side search tool ("" for none).
func ReadHistory(msgs []json.RawMessage, searchTool string) *History {
	return messages.ReadHistory(msgs, searchTool)
}

// Reconcile rewrites a conversation so that no tool reference names a tool
// for which sent returns false (see messages.Reconcile). Turn does this for
// every request.
func Reconcile(msgs []json.RawMessage, sent func(name string) bool) ([]json.RawMessage, int) {
	return messages.Reconcile(msgs, sent)
}

// ExpandReferences rewrites every tool reference of a conversation as text,
// for an endpoint that refuses tool_reference blocks (see
// messages.ExpandReferences); Turn then sends the tools loaded as ordinary
// tools.
func ExpandReferences(msgs []json.RawMessage, sent func(name string) bool) ([]json.RawMessage, int) {
	return messages.ExpandReferences(msgs, sent)
}

// IsSystemMessage reports whether a message has the role "system".
func IsSystemMessage(raw json.RawMessage) bool { return messages.IsSystemMessage(raw) }

// SystemReminderTag wraps the text of a folded system-role message.
const SystemReminderTag = messages.SystemReminderTag

// FoldSystemMessages folds each {"role":"system"} message into a user
// message as a <system-reminder> text block (see
// messages.FoldSystemMessages).
func FoldSystemMessages(msgs []json.RawMessage) ([]json.RawMessage, int) {
	return messages.FoldSystemMessages(msgs)
}

// Content block types the adapter reads.
const (
	typeToolReference  = messages.TypeToolReference
	typeToolDefinition = messages.TypeToolDefinition
)
