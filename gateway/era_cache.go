package gateway

// Cache fields of list results and resources/read (ttlMs, cacheScope).
//
// The gateway's lists are made of its upstreams' lists, so their cache
// fields are made of the upstreams' values: the smallest non-zero ttl of
// the upstreams that gave one, and private when any upstream said private
// (or anything but public: an upstream's value is not trusted to widen a
// scope) or when the gateway's lists vary by the request's credentials;
// a tool list of auto exposure, which varies by the client's name, is
// private too.
// An upstream that announced list_changed is stale until it has been
// listed again: while one is, the ttl is 0 (re-fetch at once).

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// Cache scopes of the MCP specification.
const (
	scopePublic  = "public"
	scopePrivate = "private"
)

// cacheHint is what one source said of a result's caching.
type cacheHint struct {
	TTLMs int
	Scope string
	// Stale: the source announced a change it has not been listed
	// after.
	Stale bool
}

// aggregateCache combines the hints of the sources of one result:
// the smallest non-zero ttl (0 when none gave one, or when one is stale),
// private when a source or the gateway's policy (private) says so.
func aggregateCache(hints []cacheHint, private bool) mcp.Cacheable {
	out := mcp.Cacheable{}
	stale := false
	for _, h := range hints {
		if h.Stale {
			stale = true
		}
		if h.TTLMs > 0 && (out.TTLMs == 0 || h.TTLMs < out.TTLMs) {
			out.TTLMs = h.TTLMs
		}
		if h.Scope != "" && h.Scope != scopePublic {
			private = true
		}
	}
	if stale {
		out.TTLMs = 0
	}
	out.CacheScope = scopePublic
	if private {
		out.CacheScope = scopePrivate
	}
	return out
}

// listKinds maps the list methods whose results carry cache fields to
// the list an upstream keeps hints for (package upstream, era.go).
var listKinds = map[string]upstream.ListKind{
	"tools/list": upstream.ListTools, "prompts/list": upstream.ListPrompts,
	"resources/list": upstream.ListResources, "resources/templates/list": upstream.ListTemplates,
}

// hintsFor returns the upstreams' hints for a list method, as each
// upstream last listed it: the smallest ttl of its pages, its scope, and
// whether a list_changed has made it stale since (package upstream,
// era.go). A list never listed, and not announced changed, gives no hint.
func (g *Gateway) hintsFor(method string) []cacheHint {
	kind, ok := listKinds[method]
	if !ok {
		return nil
	}
	var out []cacheHint
	for _, server := range g.keys() {
		u := g.ups()[server]
		if u == nil {
			continue
		}
		lc := u.ListCache(kind)
		if lc.ListedAt.IsZero() && !lc.Stale {
			continue
		}
		out = append(out, cacheHint{TTLMs: int(lc.TTL / time.Millisecond), Scope: lc.Scope, Stale: lc.Stale})
	}
	return out
}

// listsPrivate reports whether the gateway's lists vary by the request's
// credentials. They do not: the gateway has one policy, and over HTTP one
// bearer token, for every client; so only an upstream makes a list
// private. (Were a policy per token added, its lists would be private.)
func (g *Gateway) listsPrivate(context.Context, mcp.Request) bool { return false }

// toolsByClient reports whether the session's tool list is the one auto
// gives by the client's name (clientmode.go): a list that differs between
// clients of the same endpoint and credentials is private, so that a
// shared cache does not serve it to another client. (The tool list is the
// only list that depends on the exposure.) So is a shared server's list
// when the built-in tools shown depend on the client (builtinclient.go).
func (s *session) toolsByClient() bool {
	return s.auto || s.byClient || (s.shared && s.g.builtinsByClient())
}

// setCacheable is the MCP library's resolver of cache fields
// (ServerOptions.SetCacheable): list results get the upstreams' values
// aggregated; resources/read keeps what its upstream said (c on entry),
// made private when the gateway's lists are.
func (s *session) setCacheable(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
	g := s.g
	private := g.listsPrivate(ctx, req)
	switch req.(type) {
	case *mcp.ListToolsRequest:
		*c = aggregateCache(g.hintsFor("tools/list"), private || s.toolsByClient())
	case *mcp.ListPromptsRequest:
		*c = aggregateCache(g.hintsFor("prompts/list"), private)
	case *mcp.ListResourcesRequest:
		*c = aggregateCache(g.hintsFor("resources/list"), private)
	case *mcp.ListResourceTemplatesRequest:
		*c = aggregateCache(g.hintsFor("resources/templates/list"), private)
	case *mcp.ReadResourceRequest:
		*c = aggregateCache([]cacheHint{{TTLMs: c.TTLMs, Scope: c.CacheScope}}, private)
	default:
		// server/discover: static for the gateway's life, but its
		// capabilities may change with the configuration: no ttl.
		*c = aggregateCache(nil, private)
	}
}
