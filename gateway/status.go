package gateway

// What the gateway reports of each upstream server (Statuses, /healthz,
// toolsearch status, the event feed): its state and counters.

import (
	"time"

	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// State is where an upstream server is in its life.
type State = upstream.State

// Upstream states.
const (
	// StateIdle: a lazy server not started yet (its cached manifest answers).
	StateIdle = upstream.StateIdle
	// StateStarting: connecting and listing for the first time.
	StateStarting = upstream.StateStarting
	// StateReady: connected, tools listed, calls go through.
	StateReady = upstream.StateReady
	// StateFailed: the last start failed or the server gave up restarting.
	StateFailed = upstream.StateFailed
	// StateRestarting: it stopped and a new start is scheduled.
	StateRestarting = upstream.StateRestarting
	// StateStopped: the gateway is shutting down.
	StateStopped = upstream.StateStopped
)

// Status is the visible state of one upstream server.
type Status struct {
	Key       string
	Transport string
	State     State
	Error     string
	Tools     int
	Tokens    int
	Restarts  int
	FromCache bool
	Since     time.Time
	// RetryAt is when a server that used up its restarts is tried again
	// (zero when it has not given up).
	RetryAt time.Time
	// Oversized counts the messages over the size limit the server sent
	// (package wire); LastOversize says what the last one was and what
	// the gateway did, at LastOversizeAt.
	Oversized      int
	LastOversize   string
	LastOversizeAt time.Time
	// Protocol is the MCP version the server's session negotiated (empty
	// before its first connection): 2026-07-28, or the version of the
	// initialize handshake a server without it fell back to.
	Protocol string
	// CachedAt is when the cached manifest the gateway started from was
	// saved (zero when it started without one).
	CachedAt time.Time
}
