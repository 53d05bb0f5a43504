// Package wire is the gateway's side of the wire to an upstream server:
// the slots stdio servers spawn in (SpawnSlots); starting a stdio server
// with its own environment and reading its stdout and stderr (Process,
// Tail, StderrSummary), the MCP connection over its pipes; a remote
// server's HTTP client (HTTPClient); the Tap that sees every message as it
// crosses, and SSE polling passed on to the client (WithPolling); and the
// bound on the size of any message an upstream server sends, over stdio or
// HTTP (MaxMessageBytes, MsgHead, BoundJSONBody, BoundSSEBody). It knows
// nothing of the gateway that uses it.
package wire
