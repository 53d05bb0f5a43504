// Package conformance runs the official MCP conformance suite
// (npm @modelcontextprotocol/conformance, pinned in package.json) in server
// mode against toolsearch's gateway in full exposure, fronting the Go SDK's
// conformance server (everything-server), and compares the result with the
// suite run directly against that server.
//
// The test needs node, `npm ci` at the repository root, and everything-server:
//
//	go install github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0
//
// It skips, saying which, when one of them is absent. Everything listens on
// loopback only.
package conformance
