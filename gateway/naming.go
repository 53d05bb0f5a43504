package gateway

// How a server's configuration and its tools' own names come to the
// resolver (resolve.go), which names what clients see.
//
// A tool whose bare name is a qualified name of another configured server
// (server evil lists "memory__delete_entities" while server memory is
// configured) is refused: it never joins the catalog (withoutImpostors),
// and the log says why. Otherwise a call meant for memory could reach evil
// while memory starts, or when memory's own tool is denied. A qualified
// name resolves only within the server it names.

import (
	"encoding/json"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// wantsBare reports whether the server's configuration asks for bare
// names: naming bare, or naming auto when it is the only enabled server.
// The built-in tools and a static catalog are always prefixed.
func (g *Gateway) wantsBare(key string) bool {
	if g.static {
		return false
	}
	u := g.ups()[key]
	if u == nil {
		return false
	}
	switch u.Config().Naming {
	case config.NamingBare:
		return true
	case config.NamingPrefixed:
		return false
	}
	return len(g.keys()) == 1
}

// nameView gives v its resolver (resolve.go), under the policy and
// servers in force, and logs what the resolver found worth a warning once
// per item and reason. The caller holds g.mu (or is New).
func (g *Gateway) nameView(v *view) {
	var notes []nameNote
	v.names, notes = newResolver(v.snap, v.extras, g.nameRules())
	for _, n := range notes {
		if g.firstTime(n.key) {
			g.log.Warn(n.msg, n.args...)
		}
	}
}

// nameRules are the policy and the servers' naming in force.
func (g *Gateway) nameRules() nameRules {
	rules := nameRules{pol: g.policy(), bare: make(map[string]bool, len(g.ups())), static: g.static}
	for k := range g.ups() {
		rules.bare[k] = g.wantsBare(k)
	}
	return rules
}

// impersonates reports whether t's bare name is a qualified name of
// another server of the gateway, and names that server. Letter case does
// not matter: the search finds a tool by its name case-insensitively, so
// "Memory__delete_entities" of one server would be found by
// select:memory__delete_entities. A static catalog and the built-in tools
// are the gateway's own and never impersonate.
func (g *Gateway) impersonates(t *catalog.Tool, keys map[string][]string) (string, bool) {
	if g.static || t.Server == builtin.Key {
		return "", false
	}
	for _, part := range serverParts(strings.ToLower(t.Name)) {
		for _, k := range keys[part] {
			if k != t.Server {
				return k, true
			}
		}
	}
	return "", false
}

// serverParts returns the parts of a lower-cased name that would name a
// server if it were a qualified name: before "/", and before "__" with or
// without a leading "mcp__".
func serverParts(name string) []string {
	var parts []string
	if s, _, ok := strings.Cut(name, catalog.IDSeparator); ok {
		parts = append(parts, s)
	}
	if rest, had := strings.CutPrefix(name, "mcp__"); had {
		if s, _, ok := strings.Cut(rest, catalog.WireSeparator); ok {
			parts = append(parts, s)
		}
	}
	if s, _, ok := strings.Cut(name, catalog.WireSeparator); ok {
		parts = append(parts, s)
	}
	return parts
}

// foldedServers maps each lower-cased server key of the gateway (its
// configured servers and the built-in tools) to the keys that fold to it.
func (g *Gateway) foldedServers() map[string][]string {
	keys := map[string][]string{strings.ToLower(builtin.Key): {builtin.Key}}
	for k := range g.ups() {
		l := strings.ToLower(k)
		keys[l] = append(keys[l], k)
	}
	return keys
}

// withoutImpostors returns srv without the tools whose names impersonate
// another server's, logging each once; srv itself when there are none.
// Every upstream server goes through it before it joins the catalog, so
// that such a tool is never listed, found or called.
func (g *Gateway) withoutImpostors(srv *catalog.Server) (*catalog.Server, error) {
	var keep []json.RawMessage
	refused := false
	var keys map[string][]string
	for _, t := range srv.Tools {
		if keys == nil {
			keys = g.foldedServers()
		}
		other, ok := g.impersonates(t, keys)
		if !ok {
			keep = append(keep, t.Raw)
			continue
		}
		refused = true
		if g.firstTime(t.ID() + "\x00impersonates") {
			g.log.Warn("refusing a tool whose name is a qualified name of another server: it is not listed, found or called",
				"server", t.Server, "tool", quoteShort(t.Name), "names_server", other)
		}
	}
	if !refused {
		return srv, nil
	}
	return catalog.NewServer(srv.Key, keep, srv.Keywords, srv.AlwaysLoad)
}

// firstTime reports whether key is seen for the first time, so that what
// each view finds again is logged once.
func (g *Gateway) firstTime(key string) bool {
	g.collMu.Lock()
	defer g.collMu.Unlock()
	if g.collisions[key] {
		return false
	}
	g.collisions[key] = true
	return true
}
