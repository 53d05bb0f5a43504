package upstream

// The protocol era of an upstream server: the version the gateway asked
// for and the one the server took, and what its list results said about
// caching them (ttlMs, cacheScope; 2026-07-28 and later).
//
// The gateway asks every server for 2026-07-28, the newest version it
// speaks. The Go SDK's Connect tries server/discover first and falls back
// to the initialize handshake of 2025-11-25 when the server does not
// answer it, so each server ends up at the newest version both sides
// speak. A server can be pinned to a version in its config entry
// ("protocolVersion"); servers behind the legacy SSE transport, which
// 2026-07-28 no longer has, are asked for 2025-11-25; and a server that
// let a 2026-07-28 start run out of time (some never answer a method they
// do not know) is asked for 2025-11-25 from then on.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Protocol versions the gateway asks its upstream servers for.
const (
	// LatestProtocol is the newest version: no initialize handshake,
	// per-request _meta, input_required results, subscriptions/listen.
	LatestProtocol = "2026-07-28"
	// LegacyProtocol is the newest version with the initialize handshake,
	// which every server answers.
	LegacyProtocol = "2025-11-25"
)

// IsModern reports whether a negotiated version is 2026-07-28 or later
// (versions are dates, so they compare as strings).
func IsModern(version string) bool { return version >= LatestProtocol }

// wantedProtocol is the version the next start asks the server for.
func (u *Server) wantedProtocol() string {
	switch {
	case u.cfg.ProtocolVersion != "":
		return u.cfg.ProtocolVersion
	case u.cfg.Transport == config.TransportSSE:
		return LegacyProtocol
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.legacyOnly {
		return LegacyProtocol
	}
	return LatestProtocol
}

// noteStartTimeout is told that a start asking for version timed out: a
// server that may not answer server/discover is asked for the legacy
// version next time (unless it is pinned).
func (u *Server) noteStartTimeout(version string) {
	if !IsModern(version) || u.cfg.ProtocolVersion != "" {
		return
	}
	u.mu.Lock()
	first := !u.legacyOnly
	u.legacyOnly = true
	u.mu.Unlock()
	if first {
		u.log.Warn("the server did not answer in time when asked for " + version + "; asking for " + LegacyProtocol + " from now on")
	}
}

// ModernSession reports whether the live session cs speaks 2026-07-28 or later.
func ModernSession(cs *mcp.ClientSession) bool {
	if cs == nil {
		return false
	}
	ir := cs.InitializeResult()
	return ir != nil && IsModern(ir.ProtocolVersion)
}

// ListCache is what a server said about caching one of its lists, as of
// its last listing: TTL is the smallest ttlMs of its pages (zero: stale at
// once, which is also what a server before 2026-07-28 means by saying
// nothing); Scope is "private" when any page was private, "public" when
// every page said public, and empty when the server did not say (before
// 2026-07-28). Stale is set by a list_changed notification and cleared by
// the next listing.
type ListCache struct {
	TTL      time.Duration
	Scope    string
	ListedAt time.Time
	Stale    bool
}

// Fresh reports whether the list may still be served from a cache at now:
// not stale, and within its TTL.
func (c ListCache) Fresh(now time.Time) bool {
	return !c.Stale && !c.ListedAt.IsZero() && now.Before(c.ListedAt.Add(c.TTL))
}

// Cache holds the caching hints of one server's lists, with the protocol
// version they were listed at.
type Cache struct {
	Protocol  string
	Tools     ListCache
	Resources ListCache
	Templates ListCache
	Prompts   ListCache
}

// ListKind names one of a server's lists.
type ListKind int

const (
	ListTools ListKind = iota
	ListResources
	ListTemplates
	ListPrompts
)

// cacheHints folds the hints of a list's pages, page by page.
type cacheHints struct {
	ttl     time.Duration
	pages   int
	private bool
	unsaid  bool
}

// add folds in one page's hints.
func (h *cacheHints) add(c mcp.Cacheable) {
	ttl := time.Duration(max(c.TTLMs, 0)) * time.Millisecond
	if h.pages == 0 || ttl < h.ttl {
		h.ttl = ttl
	}
	h.pages++
	switch c.CacheScope {
	case "private":
		h.private = true
	case "":
		h.unsaid = true
	}
}

// result is the folded hints, listed at now.
func (h *cacheHints) result(now time.Time) ListCache {
	c := ListCache{TTL: h.ttl, ListedAt: now}
	switch {
	case h.private:
		c.Scope = "private"
	case h.pages > 0 && !h.unsaid:
		c.Scope = "public"
	}
	return c
}

// SetListCache records a list's hints after a listing.
func (u *Server) SetListCache(kind ListKind, c ListCache) {
	u.mu.Lock()
	defer u.mu.Unlock()
	*u.cacheSlot(kind) = c
}

// MarkStale marks lists stale after a list_changed.
func (u *Server) MarkStale(kinds ...ListKind) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, k := range kinds {
		u.cacheSlot(k).Stale = true
	}
}

// ListCache is a copy of the hints kept of one list.
func (u *Server) ListCache(kind ListKind) ListCache {
	u.mu.Lock()
	defer u.mu.Unlock()
	return *u.cacheSlot(kind)
}

// Caches returns the caching hints of the server's lists as of its last
// listing, with the protocol version of its session. A list never listed
// has a zero ListCache.
func (u *Server) Caches() Cache {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.caches
	c.Protocol = u.negotiated
	return c
}

// cacheSlot is where a list's hints are kept; u.mu is held.
func (u *Server) cacheSlot(kind ListKind) *ListCache {
	switch kind {
	case ListResources:
		return &u.caches.Resources
	case ListTemplates:
		return &u.caches.Templates
	case ListPrompts:
		return &u.caches.Prompts
	}
	return &u.caches.Tools
}

// listPages pages through one list with its SDK method, folding the
// pages' cache hints; items picks a page's items and cacheable its hints.
func listPages[P any, R any, T any](ctx context.Context, list func(context.Context, *P) (*R, error), mkParams func(cursor string) *P,
	items func(*R) []T, hints func(*R) (mcp.Cacheable, string)) ([]T, cacheHints, error) {
	var (
		all []T
		h   cacheHints
	)
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return all, h, errTooManyPages
		}
		res, err := list(ctx, mkParams(cursor))
		if err != nil {
			return all, h, err
		}
		all = append(all, items(res)...)
		c, next := hints(res)
		h.add(c)
		if next == "" {
			return all, h, nil
		}
		cursor = next
	}
}

// modernProbeEvery is how often a 2026-07-28 server over HTTP is checked.
const modernProbeEvery = 15 * time.Second

// reachable checks that a 2026-07-28 server over HTTP still answers. Its
// session has no stream whose end would tell (2025-11-25 sessions have the
// standalone event stream): any HTTP answer to a ping, a refusal included
// (2026-07-28 has no ping), means it is there; a failure to connect means
// it is gone, and the session ends so that the server is restarted.
func (u *Server) reachable(ctx context.Context, cs *mcp.ClientSession) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := cs.Ping(pctx, nil)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ctx.Err() == nil {
		return u.WithTail(fmt.Errorf("server unreachable: %w", err))
	}
	return nil
}

// CallLost is told that a call failed: when it failed to reach a 2026-07-28
// server over HTTP, the server is checked at once.
func (u *Server) CallLost(err error) {
	var ne net.Error
	if u == nil || u.cfg.Transport != config.TransportHTTP || !errors.As(err, &ne) {
		return
	}
	select {
	case u.probeNow <- struct{}{}:
	default:
	}
}
