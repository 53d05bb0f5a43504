// Package wire is the gateway's side of the wire to an upstream server:
// starting a stdio server with its own environment and reading its stdout
// and stderr (Process, Tail, StderrSummary), the MCP connection over its
// pipes, and the bound on the size of any message an upstream server sends,
// over stdio or HTTP (MaxMessageBytes, MsgHead, BoundJSONBody,
// BoundSSEBody). It knows nothing of the gateway that uses it.
package wire
