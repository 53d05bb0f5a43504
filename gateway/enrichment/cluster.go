package enrichment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Background enrichment across replicas (docs/scale.md). With a
// Coordinator, one replica sends a given tool definition once: before a
// round, a replica takes a lease on each tool it would send, named by the
// tool's ID and the digest of its definition, and sends only those it
// took. Once their hints are written and shared (Owner.ShareHints), it
// marks the leases done; a replica that finds a lease done takes the
// shared hints into its own hints file and index (adoptShared), and one
// that finds it held by another waits and looks again. A lease of a tool
// whose hints were refused or whose request failed is kept until it
// expires, so that no replica asks for it again meanwhile; one of a tool
// not sent (the run stopped, or the budget ran out) is given back at
// once. The day's spend is counted in the cluster as well (budget.go).
// While Redis is down, each replica sends what it sees fit, as a gateway
// on its own does.

// Coordinator is what a gateway's cluster offers background enrichment
// (package cluster implements it): leases on work that one replica does
// for all, and a day's spend counted for all.
type Coordinator interface {
	// TakeLeases takes, for ttl, the leases of kind named names that no
	// other replica holds, and returns those it took (or held already)
	// and those another replica marked done.
	TakeLeases(ctx context.Context, kind string, names []string, ttl time.Duration) (taken, done []string, err error)
	// FinishLeases marks leases this replica holds done, for ttl;
	// ReleaseLeases gives them up.
	FinishLeases(ctx context.Context, kind string, names []string, ttl time.Duration) error
	ReleaseLeases(ctx context.Context, kind string, names []string) error
	// ReserveSpend adds to the spend of kind on day (YYYY-MM-DD, UTC)
	// one tool per element of toolTokens, with that many tokens, for as
	// many in order as keep it within limit; it returns how many it added
	// and the spend then. AddSpend adds delta (either part may be
	// negative) and returns the spend then.
	ReserveSpend(ctx context.Context, kind, day string, limit config.EnrichBudget, toolTokens []int64) (int, config.EnrichBudget, error)
	AddSpend(ctx context.Context, kind, day string, delta config.EnrichBudget) (config.EnrichBudget, error)
}

// leaseKind names enrichment's leases and spend in the cluster.
const leaseKind = "enrich"

// doneTTL is how long a lease stays marked done: longer than any replica
// waits before it looks again.
const doneTTL = 24 * time.Hour

// coordTimeout bounds a call to the Coordinator, on top of the cluster's
// own per-command bound (as the gateway bounds its own reads from the
// cluster).
const coordTimeout = 3 * time.Second

// leaseName names the lease of a tool's current definition: its ID and
// digest, hashed (two servers may serve the same definition).
func leaseName(t *catalog.Tool) string {
	sum := sha256.Sum256([]byte(t.ID() + "\x00" + hints.Digest(t)))
	return hex.EncodeToString(sum[:16])
}

// leaseTools takes the leases of tools; it returns the tools it took and
// those another replica finished. Without a coordinator, or while it
// cannot be reached, every tool is taken.
func (e *Enricher) leaseTools(ctx context.Context, tools []*catalog.Tool) (taken, done []*catalog.Tool, held int) {
	c := e.coord
	if c == nil {
		return tools, nil, 0
	}
	names := make([]string, len(tools))
	byName := make(map[string]*catalog.Tool, len(tools))
	for i, t := range tools {
		names[i] = leaseName(t)
		byName[names[i]] = t
	}
	cctx, cancel := context.WithTimeout(ctx, coordTimeout)
	defer cancel()
	tn, dn, err := c.TakeLeases(cctx, leaseKind, names, e.timing.Lease)
	if err != nil {
		e.log.Debug("enrichment leases not taken; sending as a gateway on its own", "err", err)
		return tools, nil, 0
	}
	for _, n := range tn {
		taken = append(taken, byName[n])
	}
	for _, n := range dn {
		done = append(done, byName[n])
	}
	return taken, done, len(tools) - len(taken) - len(done)
}

// endLeases marks the leases of tools done (their hints are shared) or
// gives them back.
func (e *Enricher) endLeases(tools []*catalog.Tool, done bool) {
	c := e.coord
	if c == nil || len(tools) == 0 {
		return
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = leaseName(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), coordTimeout)
	defer cancel()
	var err error
	if done {
		err = c.FinishLeases(ctx, leaseKind, names, doneTTL)
	} else {
		err = c.ReleaseLeases(ctx, leaseKind, names)
	}
	if err != nil {
		e.log.Debug("enrichment leases not ended; they expire", "err", err)
	}
}

// adoptShared puts into cache the shared hints of tools (those another
// replica wrote for their current definitions), and returns how many.
func (e *Enricher) adoptShared(cache *hints.Cache, tools []*catalog.Tool) int {
	shared := e.owner.SharedHints()
	if shared == nil {
		return 0
	}
	var entries []hints.Entry
	for _, t := range tools {
		if !shared.Current(t) || cache.Current(t) {
			continue
		}
		if en, ok := shared.Get(t.ID()); ok {
			entries = append(entries, en)
		}
	}
	if err := cache.Put(entries...); err != nil {
		e.log.Warn("could not keep the hints another replica wrote", "err", err)
		return 0
	}
	return len(entries)
}
