package gateway

// The gateway's side of its upstream servers (package upstream): the
// caching hints it reports (their states: status.go), and upstreamOwner,
// through which a server hands the gateway its listings and changes.

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/skills"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// ListCache is what a server said about caching one of its lists, as of
// its last listing (upstream.ListCache).
type ListCache = upstream.ListCache

// UpstreamCache holds the caching hints of one server's lists, with the
// protocol version they were listed at (upstream.Cache).
type UpstreamCache = upstream.Cache

// UpstreamCache returns the caching hints of a configured server's lists
// as of its last listing (ok is false for a server that is not
// configured). A list never listed has a zero ListCache.
func (g *Gateway) UpstreamCache(server string) (c UpstreamCache, ok bool) {
	u := g.ups()[server]
	if u == nil {
		return UpstreamCache{}, false
	}
	return u.Caches(), true
}

// UpstreamCaches returns the caching hints of every configured server,
// by server key.
func (g *Gateway) UpstreamCaches() map[string]UpstreamCache {
	out := make(map[string]UpstreamCache, len(g.keys()))
	for _, k := range g.keys() {
		out[k], _ = g.UpstreamCache(k)
	}
	return out
}

// upstreamExtensions is the union of the extensions capabilities the
// servers declared when last listed (MCP Apps' io.modelcontextprotocol/ui
// among them), for the gateway's own capabilities: each extension's
// settings as the first server, in key order, declared them. Nil when none
// declared any.
func (g *Gateway) upstreamExtensions() map[string]any {
	v := g.cur.Load()
	if v == nil {
		return nil
	}
	var out map[string]any
	for _, k := range sortedKeys(v.extras) {
		m := v.extras[k]
		if m == nil || m.Capabilities == nil {
			continue
		}
		for name, settings := range m.Capabilities.Extensions {
			if out == nil {
				out = map[string]any{}
			}
			if _, ok := out[name]; !ok {
				out[name] = settings
			}
			if name == skills.ExtensionID {
				out[name] = skillsExtensionSettings() // the gateway's own (skills.go)
			}
		}
	}
	return out
}

// newUpstream makes the server of cfg, owned by g.
func (g *Gateway) newUpstream(cfg *config.Server) *upstream.Server {
	return upstream.New(cfg, &g.cfg.Gateway, g.log, upstreamOwner{g})
}

// upstreamStatus is the status of server u, without what the catalog knows of
// it (its tools and tokens, whether they came from the cache).
func upstreamStatus(u *upstream.Server) Status {
	s := u.Status()
	return Status{Key: s.Key, Transport: s.Transport, State: s.State, Error: s.Error, Restarts: s.Restarts, Since: s.Since,
		RetryAt: s.RetryAt, Oversized: s.Oversized, LastOversize: s.LastOversize, LastOversizeAt: s.LastOversizeAt,
		Protocol: s.Protocol, CachedAt: s.CachedAt}
}

// upstreamOwner is the gateway as the owner of its upstream servers.
type upstreamOwner struct{ g *Gateway }

// NewClient makes the MCP client of one start of s (forward.go).
func (o upstreamOwner) NewClient(s *upstream.Server) *mcp.Client { return o.g.upstreamClient(s) }

// SpawnSlot takes one of the slots stdio servers spawn in.
func (o upstreamOwner) SpawnSlot(ctx context.Context) (func(), error) { return o.g.spawning.Take(ctx) }

// TakeTurn takes the listing turn (arrivals.go).
func (o upstreamOwner) TakeTurn(ctx context.Context) func() { return o.g.arr.takeTurn(ctx) }

// ListSkills lists the server's skills (skills.go).
func (o upstreamOwner) ListSkills(ctx context.Context, s *upstream.Server, cs *mcp.ClientSession, caps *mcp.ServerCapabilities) []json.RawMessage {
	return listSkills(ctx, s.Log(), cs, caps)
}

// Publish puts the server's fresh manifest into the catalog (publish).
func (o upstreamOwner) Publish(ctx context.Context, s *upstream.Server, m *upstream.Manifest) error {
	return o.g.publish(ctx, s, m, true)
}

// Resubscribe renews the clients' resource subscriptions (forward.go).
func (o upstreamOwner) Resubscribe(ctx context.Context, key string, cs *mcp.ClientSession) {
	o.g.resubscribe(ctx, key, cs)
}

// ListsChanged passes a server's list_changed on to the clients
// (listchanged.go).
func (o upstreamOwner) ListsChanged(key string, kinds upstream.KindSet) {
	o.g.passOnChanged(key, kinds)
}

// StateChanged sets the state metric and tells the feed (feed.go).
func (o upstreamOwner) StateChanged(key string, state State) {
	o.g.metrics.SetState(key, string(state))
	o.g.feedServers()
}

// Restarted counts a restart.
func (o upstreamOwner) Restarted(key string) { o.g.metrics.Restart(key) }

// Oversized counts a message over the size limit.
func (o upstreamOwner) Oversized(key, action string) { o.g.metrics.Oversize(key, action) }

// Redact takes the configured secrets out of err (drain.go).
func (o upstreamOwner) Redact(err error) error { return o.g.redactErr(err) }

// Statuses returns the state of every upstream server in key order.
func (g *Gateway) Statuses() []Status {
	v := g.cur.Load()
	out := make([]Status, 0, len(g.keys()))
	for _, k := range g.keys() {
		st := upstreamStatus(g.ups()[k])
		if srv, ok := v.snap.Server(k); ok {
			st.Tools = len(srv.Tools)
		}
		st.Tokens = v.tokens[k]
		st.FromCache = v.fromCache[k]
		out = append(out, st)
	}
	return out
}
