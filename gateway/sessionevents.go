package gateway

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sharedEvents is the event store of the sessions the cluster keeps
// (sessionshare.go): what each SSE stream of a session sent is kept in the
// cluster, so that a client whose stream broke (its replica died, or SSE
// polling ended it) resumes it with Last-Event-ID on whichever replica
// its next request reaches, and misses nothing. The replica's own store
// keeps a copy, for when the cluster cannot be reached.
//
// Indexes are the library's: event i of a stream is the i-th appended,
// whichever replica appended it. For a POST's stream only the replica that
// served the POST writes; the event stream (named "") is written by the
// replica that holds it, or, while no replica does, by any (streamConn),
// and the cluster numbers those in the order it took them. An event that
// could not reach the cluster is counted as dropped when it comes back
// (missed), so that a replay from before it fails rather than skipping it.
type sharedEvents struct {
	g     *Gateway
	st    SessionStore
	local mcp.EventStore // the replica's own; nil for none

	mu     sync.Mutex
	missed map[streamRef]int // events the cluster did not take, per stream
}

type streamRef struct{ session, stream string }

var errNoLocalStore = errors.New("no local event store")

// maxMissedStreams bounds what sharedEvents remembers of an outage: past
// it, a stream's gap is forgotten and a replay across it may be shifted.
const maxMissedStreams = 4096

func newSharedEvents(g *Gateway, st SessionStore, local mcp.EventStore) *sharedEvents {
	return &sharedEvents{g: g, st: st, local: local, missed: map[streamRef]int{}}
}

// Open implements mcp.EventStore. The event stream is registered in the
// cluster at once, as a stream may be resumed before anything was sent on
// it; a POST's stream is with its first event (its priming event), which
// saves a round trip per request.
func (e *sharedEvents) Open(ctx context.Context, sessionID, streamID string) error {
	if e.local != nil {
		if err := e.local.Open(ctx, sessionID, streamID); err != nil {
			return err
		}
	}
	if streamID == "" {
		if err := e.st.OpenEvents(context.WithoutCancel(ctx), sessionID, "", e.ttl("")); err != nil {
			e.g.log.Debug("the cluster did not take a session's event stream", "err", err)
		}
	}
	return nil
}

// Append implements mcp.EventStore. It fails only when neither the
// cluster nor the local store took the event.
func (e *sharedEvents) Append(ctx context.Context, sessionID, streamID string, data []byte) error {
	var localErr error = errNoLocalStore
	if e.local != nil {
		localErr = e.local.Append(ctx, sessionID, streamID, data)
	}
	ref := streamRef{sessionID, streamID}
	e.mu.Lock()
	missed := e.missed[ref]
	e.mu.Unlock()
	// The library's request may end before its last event is kept: the
	// event is kept whatever happens to the request.
	_, err := e.st.AppendEvent(context.WithoutCancel(ctx), sessionID, streamID, data, missed, e.ttl(streamID))
	e.mu.Lock()
	switch {
	case err == nil:
		delete(e.missed, ref)
	case len(e.missed) < maxMissedStreams || missed > 0:
		e.missed[ref] = missed + 1
	}
	e.mu.Unlock()
	if err != nil {
		e.g.log.Debug("the cluster did not take a stream event", "err", err)
		return localErr
	}
	return nil
}

// After implements mcp.EventStore. The cluster's copy is the stream as
// every replica wrote it. Without it, a POST's stream (which one replica
// alone wrote) replays from the local copy; the event stream resumes from
// now, since the local copy's indexes are not the cluster's, and a replay
// that skipped or repeated events would be worse than none.
func (e *sharedEvents) After(ctx context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		events, err := e.st.EventsAfter(ctx, sessionID, streamID, index)
		if err == nil {
			for _, data := range events {
				if !yield(data, nil) {
					return
				}
			}
			return
		}
		if streamID == "" {
			if index >= 0 { // a client resuming, not a new stream
				e.g.log.Info("an event stream resumes from now: the cluster cannot replay what was sent on it meanwhile", "reason", err.Error())
			}
			return
		}
		if e.local == nil {
			yield(nil, err)
			return
		}
		for data, err := range e.local.After(ctx, sessionID, streamID, index) {
			if !yield(data, err) || err != nil {
				return
			}
		}
	}
}

// SessionClosed implements mcp.EventStore: it frees the local copy. A
// replica closes its copy of a session that goes on elsewhere (idle
// here, or the replica stopping), so the cluster's copy stays until the
// client ends the session (DeleteSession) or its TTL.
func (e *sharedEvents) SessionClosed(ctx context.Context, sessionID string) error {
	e.mu.Lock()
	for ref := range e.missed {
		if ref.session == sessionID {
			delete(e.missed, ref)
		}
	}
	e.mu.Unlock()
	if e.local != nil {
		return e.local.SessionClosed(ctx, sessionID)
	}
	return nil
}

// ttl is how long the cluster keeps a stream after its last event. The
// event stream lives as long as the session's saved state. A POST's
// stream is resumed only while its call runs (SSE polling) or just after
// it broke, so it is kept for the call timeout and a minute more: a
// session of many calls does not keep all of them for half an hour.
func (e *sharedEvents) ttl(streamID string) time.Duration {
	idle := e.g.cfg.Gateway.Serve.SessionIdleTimeout
	if streamID == "" {
		return idle
	}
	return min(idle, e.g.cfg.Gateway.Limits.CallTimeout+time.Minute)
}
