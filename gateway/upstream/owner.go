// Package upstream runs one upstream MCP server for the gateway: it
// starts the server (a process, or a connection to a remote one), restarts
// it with backoff when it stops, asks it for the newest protocol version
// both sides speak, lists its tools, resources, resource templates and
// prompts (bounding what one server may make the gateway hold), lists it
// again after its list_changed, and reports its state. What it lists and
// every change of its state go to its Owner, the gateway.
package upstream

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Owner is what a Server hands its listings and changes to, and asks for
// what only the gateway knows. Its methods may be called from any
// goroutine.
type Owner interface {
	// NewClient makes the MCP client of one start of s, with the handlers
	// that pass the server's requests and notifications on (calling
	// s.ListChanged for its list_changed).
	NewClient(s *Server) *mcp.Client
	// SpawnSlot waits for a slot to spawn a process in and returns the
	// function that gives it back.
	SpawnSlot(ctx context.Context) (release func(), err error)
	// TakeTurn waits for the turn to list tools and returns the function
	// that gives it back.
	TakeTurn(ctx context.Context) (giveBack func())
	// ListSkills lists the skills of s on cs when caps declare them.
	ListSkills(ctx context.Context, s *Server, cs *mcp.ClientSession, caps *mcp.ServerCapabilities) []json.RawMessage
	// Publish takes in the fresh manifest m of s; it returns once the
	// server's tools can be found.
	Publish(ctx context.Context, s *Server, m *Manifest) error
	// Resubscribe renews, on the new session cs of server key, the
	// resource subscriptions held of it.
	Resubscribe(ctx context.Context, key string, cs *mcp.ClientSession)
	// ListsChanged is told that server key was listed again after it said
	// its lists of kinds changed.
	ListsChanged(key string, kinds KindSet)
	// StateChanged is told that server key moved to state.
	StateChanged(key string, state State)
	// Restarted is told that server key stopped and will be started again.
	Restarted(key string)
	// Oversized is told that server key sent a message over the size
	// limit, and what was done with it (wire.OversizeEvent's Action).
	Oversized(key, action string)
	// Redact returns err without the secrets it may hold.
	Redact(err error) error
}
