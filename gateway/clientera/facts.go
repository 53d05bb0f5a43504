package clientera

import (
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// deferringClients are the clientInfo names of clients that put every MCP
// tool behind their own tool search unless the tool carries
// _meta["anthropic/alwaysLoad"]: true. Claude Code does, with tool search
// on (its default for the Anthropic API, ENABLE_TOOL_SEARCH otherwise).
var deferringClients = []string{"claude-code"}

// DeferringClients returns the clientInfo names of the clients that defer
// MCP tools behind a tool search of their own (Facts.DefersTools).
func DeferringClients() []string { return slices.Clone(deferringClients) }

// quickListers are the clientInfo names of clients that list tools once
// as they start and go on without the list when it is not answered at
// once, by how long after initialize the gateway answers their first
// list at the latest. Codex CLI (0.169.0, 0.171.0) starts its first turn
// as soon as it is set up, with whatever tools had been listed by then:
// a list answered 600 ms after its initialize missed the turn, and even
// 130 ms did on a loaded machine; a list answered later reaches only its
// later turns. So it is answered at once, with the gateway's search and
// call when servers are still starting. Other clients wait for their
// first list as long as limits.firstListWait (Claude Code: MCP_TIMEOUT,
// 30 s by default).
var quickListers = map[string]time.Duration{"codex-mcp-client": 0}

// QuickLister reports whether the client named name lists its tools once
// as it starts, and by how long after its initialize its first list is
// answered at the latest.
func QuickLister(name string) (bound time.Duration, ok bool) {
	bound, ok = quickListers[name]
	return bound, ok
}

// Facts is what a client said of itself: in initialize, or in the _meta
// of a 2026-07-28 request.
type Facts struct {
	// At is when it said so.
	At time.Time
	// Name and Version are clientInfo's: self-reported.
	Name, Version string
	// Protocol is the protocol version the client asked for.
	Protocol string
	// Roots is whether it declared the roots capability.
	Roots bool
}

// FromMeta reads a client's facts from a 2026-07-28 request's _meta (its
// clientInfo and protocol version), dated now.
func FromMeta(meta map[string]any) *Facts {
	c := &Facts{Protocol: Version(meta), At: time.Now()}
	if impl := MetaImpl(meta); impl != nil {
		c.Name, c.Version = impl.Name, impl.Version
	}
	return c
}

// FromInitialize reads a client's facts from an initialize request's
// params, dated now; p may be nil.
func FromInitialize(p *mcp.InitializeParams) *Facts {
	c := &Facts{At: time.Now()}
	if p == nil {
		return c
	}
	c.Protocol = p.ProtocolVersion
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	c.Roots = p.Capabilities != nil && p.Capabilities.RootsV2 != nil
	if p.ClientInfo != nil {
		c.Name, c.Version = p.ClientInfo.Name, p.ClientInfo.Version
	}
	return c
}

// DefersTools reports whether the client is known to defer MCP tools
// behind its own tool search. c may be nil.
func (c *Facts) DefersTools() bool {
	return c != nil && slices.Contains(deferringClients, c.Name)
}
