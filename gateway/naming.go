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
//
// Two kinds of upstream names are handled before that:
//
//   - A tool whose bare name is a qualified name of another configured
//     server (server evil lists "memory__delete_entities" while server
//     memory is configured) is refused: it never joins the catalog
//     (withoutImpostors), and the log says why. Otherwise a call meant for memory could
//     reach evil while memory starts, or when memory's own tool is denied.
//     A qualified name resolves only within the server it names.
//   - A tool whose name is not a valid MCP tool name (ASCII letters,
//     digits, "_", "-", "."; at most 128 characters), or whose exposed
//     name would be longer than that, is exposed under a safe alias,
//     server__<name with the rest replaced>_<hash>, and stays callable by
//     it; the upstream is called with the tool's own name.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// naming is one view's exposed names.
type naming struct {
	tools   map[*catalog.Tool]string // visible tool → exposed name
	byName  map[string]*catalog.Tool // exposed name → visible tool
	prompts map[string]promptRoute   // exposed prompt name → its server and name
	// promptNames maps "server\x00prompt" to the exposed prompt name.
	promptNames map[string]string
	// aliases are the exposed names given to tools whose own names are
	// not valid tool names.
	aliases map[string]*catalog.Tool
}

// promptRoute is where an exposed prompt comes from.
type promptRoute struct {
	server, name string
}

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
	switch u.cfg.Naming {
	case config.NamingBare:
		return true
	case config.NamingPrefixed:
		return false
	}
	return len(g.keys()) == 1
}

// reservedNames are the gateway's own tools: no upstream tool takes them.
var reservedNames = map[string]bool{searchToolName: true, callToolName: true}

// nameView works out v's exposed names. It logs every bare name refused
// because of a collision, once per tool and reason. The caller holds g.mu
// (or is New).
func (g *Gateway) nameView(v *view) {
	n := &naming{tools: map[*catalog.Tool]string{}, byName: map[string]*catalog.Tool{},
		prompts: map[string]promptRoute{}, promptNames: map[string]string{}, aliases: map[string]*catalog.Tool{}}
	var visible, unsafe []*catalog.Tool
	wire := map[string]bool{}
	bare := map[string][]*catalog.Tool{}
	for _, t := range v.snap.Tools() {
		if !g.Visible(t) {
			continue
		}
		if !catalog.ValidName(t.Name) {
			unsafe = append(unsafe, t)
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
		if !catalog.ValidName(name) { // server__tool too long, or a key clients refuse
			unsafe = append(unsafe, t)
			continue
		}
		n.tools[t] = name
		n.byName[name] = t
	}
	for _, t := range unsafe {
		name := aliasName(t, n.byName)
		n.tools[t] = name
		n.byName[name] = t
		n.aliases[name] = t
		if g.firstTime(t.ID() + "\x00alias") {
			g.log.Warn("exposing a tool under an alias: its name is not a valid MCP tool name (ASCII letters, digits, _ - . only, at most 128 characters), which clients refuse",
				"server", t.Server, "tool", quoteShort(t.Name), "exposed_as", name)
		}
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

// aliasLength bounds the aliases made for invalid names, leaving room for
// the prefix a client adds (mcp__toolsearch__ in Claude Code).
const aliasLength = 64

// aliasName makes a valid exposed name for a tool whose own name is not
// one: server__ then the name's valid characters (runs of others become
// one "_"), cut to fit, then "_" and a hash of the whole name, lengthened
// until no name in taken has it.
func aliasName(t *catalog.Tool, taken map[string]*catalog.Tool) string {
	stem := sanitise(t.Name, "tool")
	prefix := sanitise(t.Server, "server") + catalog.WireSeparator
	sum := sha256.Sum256([]byte(t.Server + "\x00" + t.Name))
	hash := hex.EncodeToString(sum[:])
	for n := 8; ; n += 4 {
		room := max(aliasLength-len(prefix)-1-n, 1)
		s := strings.TrimRight(stem[:min(len(stem), room)], "_")
		name := prefix + s + "_" + hash[:min(n, len(hash))]
		if len(name) > catalog.MaxNameLength {
			name = name[len(name)-catalog.MaxNameLength:]
		}
		if _, used := taken[name]; !used || n >= len(hash) {
			return name
		}
	}
}

// sanitise keeps the characters of s a tool name may have, a run of any
// others becoming one "_", without "_" at either end; empty gives
// fallback.
func sanitise(s, fallback string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case catalog.NameByte(c):
			b.WriteByte(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	if out := strings.Trim(b.String(), "_"); out != "" {
		return out
	}
	return fallback
}

// quoteShort cuts a name to 100 bytes for the log (which quotes it).
func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// isServer reports whether key names a server of the gateway: a
// configured one, the built-in tools, or a server of a static catalog.
func (g *Gateway) isServer(key string) bool {
	if _, ok := g.ups()[key]; ok || key == builtin.Key {
		return true
	}
	if g.static {
		if v := g.cur.Load(); v != nil {
			_, ok := v.snap.Server(key)
			return ok
		}
	}
	return false
}

// qualifiedServer returns the server and tool a qualified name denotes
// ("server/tool", "mcp__server__tool", "server__tool"), when its server
// part names a server of the gateway.
func (g *Gateway) qualifiedServer(name string) (server, tool string, ok bool) {
	if s, t, cut := strings.Cut(name, catalog.IDSeparator); cut && g.isServer(s) {
		return s, t, true
	}
	if rest, had := strings.CutPrefix(name, "mcp__"); had {
		if s, t, cut := strings.Cut(rest, catalog.WireSeparator); cut && g.isServer(s) {
			return s, t, true
		}
	}
	if s, t, cut := strings.Cut(name, catalog.WireSeparator); cut && g.isServer(s) {
		return s, t, true
	}
	return "", "", false
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
	if g.firstTime(item + "\x00" + why) {
		g.log.Warn("a bare name collides; exposing the prefixed name instead", "item", item, "exposed_as", exposed, "why", why)
	}
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
