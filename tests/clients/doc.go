// Package clients holds the end-to-end tests of the MCP clients people
// run, through the gateway: Claude Code (npm @anthropic-ai/claude-code)
// and Codex CLI (npm @openai/codex), at the versions pinned in the
// repository's package.json.
//
// Each test runs the client's real binary offline: its model API is a
// local stand-in that speaks the documented wire format (the Messages API
// for Claude Code, package proxy/proxytest; the Responses API over
// server-sent events for Codex, responses_test.go), its home and config
// directories are throwaway, its other traffic is turned off with its
// documented environment variables, and its only MCP server is the built
// toolsearch binary in front of a real upstream server (the reference
// memory server). A scripted model drives a search, a load and a call;
// the tests then check what the client sent to the model API (the tools
// it was shown, the tool_use and tool_result it relayed), what it sent to
// the gateway, and what the upstream server did.
//
// TestClientMatrix runs every pinned version of each client (the
// top-level npm packages are the newest, claude-code-previous and
// codex-previous the ones before) in every exposure, over stdio and
// HTTP, cold and warm, and logs a table of the cases; the warm cases
// run only with TOOLSEARCH_CLIENTS_MATRIX=all.
//
// TOOLSEARCH_CLIENTS_DUMP=1 logs every Messages API request Claude Code
// sent, what it sent the gateway, and the gateway's log.
//
// The tests skip, saying why, when node_modules has not been installed
// (npm ci at the repository root). Every process they start has a
// timeout and is killed when its test ends.
package clients
