package gateway

// What tools and prompts are called in the lists clients see. A server's
// naming (config.Server.Naming) asks for bare names (the server's own) or
// prefixed ones (server__tool); auto is bare for the only enabled server.
// A bare name is granted only when no other exposed name is the same: not
// another server's bare name, not any tool's server__tool form, not the
// gateway's own search_tools and call_tool. A tool or prompt denied its
// bare name keeps server__tool, and the gateway says so in its log once.
//
// The names are worked out for each view (each catalog change) in one
// place, nameView, and everything that lists, finds or routes a tool by
// name asks the view: a name a search returns is a name a call accepts.

import (
	"slices"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/config"
)

// naming is one view's exposed names.
type naming struct {
	tools   map[*catalog.Tool]string // visible tool → exposed name
	byName  map[string]*catalog.Tool // exposed name → visible tool
	prompts map[string]promptRoute   // exposed prompt name → its server and name
	// promptNames maps "server\x00prompt" to the exposed prompt name.
	promptNames map[string]string
}

// promptRoute is where an exposed prompt comes from.
type promptRoute struct {
	server, name string
}

// wantsBare reports whether the server's configuration asks for bare
// names: naming bare, or naming auto when it is the only enabled server.
// The built-in tools and the demo catalog are always prefixed.
func (g *Gateway) wantsBare(key string) bool {
	if g.demo {
		return false
	}
	u := g.ups[key]
	if u == nil {
		return false
	}
	switch u.cfg.Naming {
	case config.NamingBare:
		return true
	case config.NamingPrefixed:
		return false
	}
	return len(g.keys) == 1
}

// reservedNames are the gateway's own tools: no upstream tool takes them.
var reservedNames = map[string]bool{searchToolName: true, callToolName: true}

// nameView works out v's exposed names. It logs every bare name refused
// because of a collision, once per tool and reason. The caller holds g.mu
// (or is New).
func (g *Gateway) nameView(v *view) {
	n := &naming{tools: map[*catalog.Tool]string{}, byName: map[string]*catalog.Tool{},
		prompts: map[string]promptRoute{}, promptNames: map[string]string{}}
	var visible []*catalog.Tool
	wire := map[string]bool{}
	bare := map[string][]*catalog.Tool{}
	for _, t := range v.snap.Tools() {
		if !g.Visible(t) {
			continue
		}
		visible = append(visible, t)
		wire[t.WireName()] = true
		if g.wantsBare(t.Server) {
			bare[t.Name] = append(bare[t.Name], t)
		}
	}
	for _, t := range visible {
		name := t.WireName()
		if g.wantsBare(t.Server) {
			switch others := bare[t.Name]; {
			case reservedNames[t.Name]:
				g.logCollision(t.ID(), t.WireName(), "it is the name of the gateway's own tool")
			case wire[t.Name]:
				g.logCollision(t.ID(), t.WireName(), "another tool is exposed under it (server__tool)")
			case len(others) > 1:
				g.logCollision(t.ID(), t.WireName(), "servers "+serverList(others)+" all have a tool of that name")
			default:
				name = t.Name
			}
		}
		n.tools[t] = name
		n.byName[name] = t
	}
	// Prompts: the same rule, among prompts.
	keys := make([]string, 0, len(v.extras))
	for k := range v.extras {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	prefixed := map[string]bool{}
	barePr := map[string][]string{}
	for _, k := range keys {
		for _, p := range v.extras[k].Prompts {
			prefixed[k+catalog.WireSeparator+p.Name] = true
			if g.wantsBare(k) {
				barePr[p.Name] = append(barePr[p.Name], k)
			}
		}
	}
	for _, k := range keys {
		for _, p := range v.extras[k].Prompts {
			name := k + catalog.WireSeparator + p.Name
			if g.wantsBare(k) {
				switch others := barePr[p.Name]; {
				case prefixed[p.Name]:
					g.logCollision("prompt "+k+"/"+p.Name, name, "another prompt is exposed under it (server__prompt)")
				case len(others) > 1:
					g.logCollision("prompt "+k+"/"+p.Name, name, "servers "+strings.Join(others, ", ")+" all have a prompt of that name")
				default:
					name = p.Name
				}
			}
			if _, dup := n.prompts[name]; dup {
				continue // a server listed the same prompt twice
			}
			n.prompts[name] = promptRoute{server: k, name: p.Name}
			n.promptNames[k+"\x00"+p.Name] = name
		}
	}
	v.names = n
}

// serverList names the servers of tools, sorted, without repeats.
func serverList(tools []*catalog.Tool) string {
	var keys []string
	for _, t := range tools {
		keys = append(keys, t.Server)
	}
	sort.Strings(keys)
	return strings.Join(slices.Compact(keys), ", ")
}

// logCollision says, once per item and reason, that a bare name was
// refused.
func (g *Gateway) logCollision(item, exposed, why string) {
	key := item + "\x00" + why
	g.collMu.Lock()
	seen := g.collisions[key]
	g.collisions[key] = true
	g.collMu.Unlock()
	if !seen {
		g.log.Warn("a bare name collides; exposing the prefixed name instead", "item", item, "exposed_as", exposed, "why", why)
	}
}

// exposedName is the name clients see for t in view v: its bare name or
// server__tool.
func (v *view) exposedName(t *catalog.Tool) string {
	if v.names != nil {
		if n, ok := v.names.tools[t]; ok {
			return n
		}
	}
	return t.WireName()
}

// nameOf is the name clients see for t now.
func (g *Gateway) nameOf(t *catalog.Tool) string {
	v := g.cur.Load()
	if v == nil {
		return t.WireName()
	}
	return v.exposedName(t)
}

// promptName is the name clients see for a server's prompt in view v.
func (v *view) promptName(server, prompt string) string {
	if v.names != nil {
		if n, ok := v.names.promptNames[server+"\x00"+prompt]; ok {
			return n
		}
	}
	return server + catalog.WireSeparator + prompt
}
