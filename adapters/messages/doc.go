// Package messages reads and rewrites Messages API conversations as raw
// JSON: the messages array of a request, one element per message.
//
// It works the same on messages built with an SDK's types, messages an SDK
// passes through as raw JSON (unknown block types), and the request bodies
// a proxy sees; blocks it does not know are left untouched, and a message
// that needs no change keeps its bytes. It provides:
//
//   - ReadHistory: what a conversation says about tool search (the tools
//     loaded by references, added or withdrawn by tool_addition and
//     tool_removal blocks, carried across compaction, announced);
//   - Reconcile and ExpandReferences: no reference naming a tool absent
//     from tools, or every reference written as text for an endpoint that
//     takes none;
//   - RenderHistory: the history as a request of a plainer Strategy sends
//     it (inline definitions named by reference, or tool changes left out
//     and system messages folded);
//   - FoldSystemMessages: {"role":"system"} messages folded into user text;
//   - RefusalTo: which feature of the request it answered an endpoint's
//     400 refuses, however worded, and the richest Strategy that does
//     without it (RefusalOf, without the request, is deprecated).
//
// It imports no SDK and no transport: package anthropic (the SDK adapter)
// and package proxy (which sees request bodies only) share it.
package messages
