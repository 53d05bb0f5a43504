package gateway

// What the gateway asks of the other replicas of its service
// (Options.Cluster; package cluster implements all three): Cluster
// for what every replica shares (cluster.go), SessionStore for MCP
// sessions that outlive their replica (sessionshare.go), BlobSwapper for
// values several replicas merge (learning.go).

import (
	"context"
	"io"
	"time"
)

// Cluster is what the gateway shares with the other replicas of a
// service. Package cluster implements it over Redis. Every method fails at
// once while the cluster is unreachable, and the gateway then does what
// it does on its own.
type Cluster interface {
	// Replica names this replica in logs, metrics and /healthz.
	Replica() string
	// Up reports whether the cluster answered last time it was asked.
	Up() bool
	// GetBlob returns the shared value of kind and digest, nil when
	// there is none; PutBlob stores one. The gateway serves and ranks by
	// these values, so an implementation must refuse one it did not
	// write (package cluster tags them under the cluster key); one with
	// a SharesValues() bool method that returns false is not asked.
	GetBlob(ctx context.Context, kind, digest string) ([]byte, error)
	PutBlob(ctx context.Context, kind, digest string, data []byte) error
	// Take takes one request from the shared token bucket named bucket;
	// it returns how long to wait, 0 when the request may pass.
	Take(ctx context.Context, bucket string, perSecond float64, burst int) (time.Duration, error)
	// ReserveSession takes a place for a new session under a cap of max
	// across the replicas; release gives it back.
	ReserveSession(ctx context.Context, max int) (release func(), ok bool, err error)
	// Status is what /healthz shows under "cluster".
	Status() any
	// WriteMetrics writes the cluster's own metrics (Prometheus text).
	WriteMetrics(w io.Writer)
	// OnChange registers a function called when the cluster goes down
	// or comes back.
	OnChange(f func(up bool))
}

// SessionStore is what a Cluster that keeps MCP sessions alive across
// replicas offers besides Cluster (package cluster implements both). The
// id passed is the client's session id: an implementation must not store
// it, only what it cannot be recovered from.
type SessionStore interface {
	// SaveSession stores a session's state for ttl; LoadSession returns
	// it (nil when there is none, an error when it is not valid for id).
	SaveSession(ctx context.Context, id string, state []byte, ttl time.Duration) error
	LoadSession(ctx context.Context, id string) ([]byte, error)
	// TouchSession renews the TTL. DeleteSession forgets the session and
	// tells the other replicas, whose OnSessionEnded functions are called
	// with a check of which session it was.
	TouchSession(ctx context.Context, id string, ttl time.Duration) error
	DeleteSession(ctx context.Context, id string) error
	OnSessionEnded(f func(ended func(id string) bool))
	// ReserveSessionFor is Cluster.ReserveSession for session id: the
	// replicas holding the same session count it once.
	ReserveSessionFor(ctx context.Context, id string, max int) (release func(), ok bool, err error)
	// PublishStream sends a message for the session's event stream to
	// the replica holding it and says how many received it;
	// SubscribeStream receives them until stop is called.
	PublishStream(ctx context.Context, id string, msg []byte) (int, error)
	SubscribeStream(ctx context.Context, id string) (msgs <-chan []byte, stop func(), err error)
	// PublishReply sends the client's answer to a server-to-client
	// request to the replicas listening with SubscribeReplies: the one
	// that made the request takes it.
	PublishReply(ctx context.Context, id string, msg []byte) (int, error)
	SubscribeReplies(ctx context.Context, id string) (msgs <-chan []byte, stop func(), err error)
	// OpenEvents, AppendEvent and EventsAfter keep the events of the
	// session's SSE streams for any replica to replay (sessionevents.go);
	// AppendEvent counts missed events the replica could not add before.
	OpenEvents(ctx context.Context, id, stream string, ttl time.Duration) error
	AppendEvent(ctx context.Context, id, stream string, data []byte, missed int, ttl time.Duration) (int, error)
	EventsAfter(ctx context.Context, id, stream string, index int) ([][]byte, error)
}

// BlobSwapper is what a Cluster offers to write a shared value back only
// over the value read (package cluster implements it).
type BlobSwapper interface {
	SwapBlob(ctx context.Context, kind, digest string, old, data []byte) (swapped bool, err error)
}
