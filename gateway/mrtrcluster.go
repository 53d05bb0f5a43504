package gateway

// Multi round-trip calls across the replicas of a service (mrtr.go,
// docs/scale.md). A 2026-07-28 client is stateless: its retry of a call
// that needed input may reach any replica.
//
//   - A 2026 server's requestState is the server's own; the replica that
//     handed it to the client shares the binding (which client got it for
//     which tool) through the cluster, so that any replica accepts the
//     retry and none accepts a forged or replayed one.
//   - A held call (a 2025 server waiting for the client's answer) lives in
//     the replica that made it: its upstream request waits there. That
//     replica answers for the call's state in the cluster (CallRelay) while
//     the call waits; a replica that gets the retry sends it there, and
//     gives the client what came back (mrtrheld.go).

import (
	"context"
	"time"
)

// CallRelay is what a Cluster offers so that a multi round-trip call's
// retry is served on whichever replica it reaches (package cluster
// implements it).
type CallRelay interface {
	// Ask sends req to the replica answering topic for key and waits for
	// its answer until ctx ends; ok is false when no replica answers.
	Ask(ctx context.Context, topic, key string, req []byte) (resp []byte, ok bool, err error)
	// Answer serves what Ask sends for topic and key until stop.
	Answer(ctx context.Context, topic, key string, serve func(ctx context.Context, req []byte) []byte) (stop func(), err error)
	// PutTemp, GetTemp and DelTemp keep small values for a while.
	PutTemp(ctx context.Context, kind, key string, value []byte, ttl time.Duration) error
	GetTemp(ctx context.Context, kind, key string) ([]byte, error)
	DelTemp(ctx context.Context, kind, key string) error
}

// bindingKind is the kind under which the cluster keeps shared bindings.
const bindingKind = "mrtr"

// callRelay is the cluster's CallRelay, nil without one.
func (g *Gateway) callRelay() CallRelay {
	if g.cluster == nil {
		return nil
	}
	r, _ := g.cluster.(CallRelay)
	return r
}

// bindingValue is what a shared binding holds: the tool it was for.
func bindingValue(server, tool string) string { return server + "\x00" + tool }

// shareBinding shares bindState's binding with the other replicas and
// reports whether the cluster took it.
func (g *Gateway) shareBinding(client, server, tool, state string) bool {
	r := g.callRelay()
	if r == nil || state == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := r.PutTemp(ctx, bindingKind, bindKey(client, state), []byte(bindingValue(server, tool)), stateTTL); err != nil {
		g.log.Debug("could not share a requestState's binding; a retry must come back to this replica", "err", err)
		return false
	}
	return true
}

// sharedBinding returns the tool a replica bound the state to for client
// ("" for none); known is false when there is no cluster to ask, or it
// could not be asked.
func (g *Gateway) sharedBinding(client, state string) (tool string, known bool) {
	r := g.callRelay()
	if r == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	v, err := r.GetTemp(ctx, bindingKind, bindKey(client, state))
	if err != nil {
		return "", false
	}
	return string(v), true
}

// dropSharedBinding forgets a binding once a retry used it.
func (g *Gateway) dropSharedBinding(client, state string) {
	r := g.callRelay()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	_ = r.DelTemp(ctx, bindingKind, bindKey(client, state))
}
