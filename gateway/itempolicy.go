package gateway

// Policy over prompts and resources. A view keeps, per server, only the
// prompts, resources and resource templates policy allows (allowedExtras),
// so that every list, name and route built from the view leaves the rest
// out; a read, a prompts/get, a completion and a subscription are checked
// again by URI or name (itemAllowed), since a client may name a resource no
// list showed (a template's expansion, a URI routed to the only server that
// serves resources).

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/policy"
)

// allowedExtras returns m with the prompts, resources and templates policy
// denies left out; m itself when it denies none. m is not changed: it is
// what the server listed, and what the state directory caches.
func (g *Gateway) allowedExtras(key string, m *manifest) *manifest {
	if m == nil || g.policy().Empty() {
		return m
	}
	out := *m
	out.Resources = keepIf(m.Resources, func(r *mcp.Resource) bool {
		return r != nil && g.policy().DecideResource(key, r.URI).Decision != policy.Deny
	})
	out.Templates = keepIf(m.Templates, func(t *mcp.ResourceTemplate) bool {
		return t != nil && g.policy().DecideResource(key, t.URITemplate).Decision != policy.Deny
	})
	out.Prompts = keepIf(m.Prompts, func(p *mcp.Prompt) bool {
		return p != nil && g.policy().DecidePrompt(key, p.Name).Decision != policy.Deny
	})
	if len(out.Resources) == len(m.Resources) && len(out.Templates) == len(m.Templates) && len(out.Prompts) == len(m.Prompts) {
		return m
	}
	return &out
}

// keepIf returns the elements of s that ok accepts, in a new slice (s
// unchanged).
func keepIf[T any](s []T, ok func(T) bool) []T {
	var out []T
	for _, x := range s {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

// resourceAllowed returns an error when policy denies the server's
// resource uri.
func (g *Gateway) resourceAllowed(server, uri string) error {
	if v := g.policy().DecideResource(server, uri); v.Decision == policy.Deny {
		return fmt.Errorf("resource %s of server %q is not available: policy denies it (%s)", uri, server, v.Reason())
	}
	return g.skillFileAllowed(server, uri) // skills.go
}

// promptAllowed returns an error when policy denies the server's prompt.
func (g *Gateway) promptAllowed(server, name string) error {
	if v := g.policy().DecidePrompt(server, name); v.Decision == policy.Deny {
		return fmt.Errorf("prompt %q of server %q is not available: policy denies it (%s)", name, server, v.Reason())
	}
	return nil
}
