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
// It runs with every `go test`, in about 15 seconds, and skips, saying which,
// when one of them is absent (or with -short). Everything listens on
// loopback only. Run it alone with
//
//	go test ./conformance -run TestConformanceThroughGateway -v
//
// Through the gateway it passes the same 40 checks as directly.
package conformance
