package gateway

// What a client may see, and by what names. Each view of the catalog gets
// one resolver when it is published (nameView), and it never changes: it
// holds the tools, prompts, resources and resource templates policy lets
// clients see, the names clients see them by, and the way back from a name
// a client sends to the server and item it stands for. Everything that
// lists, finds or routes an item by name asks the resolver of the view it
// works on: a name a search returns is a name a call accepts.
//
// A server's naming (config.Server.Naming) asks for bare names (the
// server's own) or prefixed ones (server__tool); auto is bare for the only
// enabled server. A bare name is granted only when no other exposed name
// is the same: not another server's bare name, not any tool's
// server__tool form, not the gateway's own search_tools and call_tool. A
// tool or prompt denied its bare name keeps server__tool, and the gateway
// says so in its log once.
//
// A tool whose name is not a valid MCP tool name (ASCII letters, digits,
// "_", "-", "."; at most 128 characters), or whose exposed name would be
// longer than that, is exposed under a safe alias, server__<name with the
// rest replaced>_<hash>, and stays callable by it; the upstream is called
// with the tool's own name.
//
// Item policy: a view keeps, per server, only the prompts, resources and
// resource templates policy allows (allowedExtras), so that every list,
// name and route built from the view leaves the rest out; a read, a
// prompts/get, a completion and a subscription are checked again by URI or
// name (resourceAllowed, promptAllowed), since a client may name a
// resource no list showed (a template's expansion, a URI routed to the
// only server that serves resources).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// Names of the gateway's own tools.
const (
	searchToolName = "search_tools"
	callToolName   = "call_tool"
)

// reservedNames are the gateway's own tools: no upstream tool takes them.
var reservedNames = map[string]bool{searchToolName: true, callToolName: true}

// nameRules are what a resolver is built from besides a view: the policy
// in force and the servers' naming.
type nameRules struct {
	pol *policy.Policy
	// bare holds the key of every configured server, true when its tools
	// and prompts keep their own names.
	bare map[string]bool
	// static: the catalog is a static one, whose servers are the
	// gateway's own.
	static bool
}

// resolver is one view's answer to what a client may see and by what
// name. It is built once (newResolver) and never changed.
type resolver struct {
	snap   *catalog.Snapshot
	extras map[string]*upstream.Manifest // per server, as policy allows them
	pol    *policy.Policy
	bare   map[string]bool // see nameRules
	static bool

	tools   map[*catalog.Tool]string // visible tool → exposed name
	byName  map[string]*catalog.Tool // exposed name → visible tool
	prompts map[string]promptRoute   // exposed prompt name → its server and name
	// promptNames maps "server\x00prompt" to the exposed prompt name.
	promptNames map[string]string
	// aliases are the exposed names given to tools whose own names are
	// not valid tool names.
	aliases map[string]*catalog.Tool
	// notes are what building it found worth a warning: bare names
	// refused, aliases given (newResolver returns them).
	notes []nameNote
}

// promptRoute is where an exposed prompt comes from.
type promptRoute struct {
	server, name string
}

// nameNote is one warning about names; key says which, so that a view
// built again does not log it again.
type nameNote struct {
	key, msg string
	args     []any
}

// target is what a name resolves to: an item of one server.
type target struct {
	tool    *catalog.Tool  // the tool; nil for a prompt
	server  string         // the server that has the item
	name    string         // the item's own name there
	exposed string         // the name clients see
	verdict policy.Verdict // policy's word on using it: Allow or Ask (a denied item is never found)
	alias   bool           // exposed is an alias (the item's own name is not valid)
}

// newResolver works out what clients may see of snap and extras under
// rules, and by what names. notes are what it found worth a warning: bare
// names refused, aliases given.
func newResolver(snap *catalog.Snapshot, extras map[string]*upstream.Manifest, rules nameRules) (r *resolver, notes []nameNote) {
	r = &resolver{snap: snap, extras: extras, pol: rules.pol, bare: rules.bare, static: rules.static,
		tools: map[*catalog.Tool]string{}, byName: map[string]*catalog.Tool{},
		prompts: map[string]promptRoute{}, promptNames: map[string]string{}, aliases: map[string]*catalog.Tool{}}
	r.nameTools()
	r.namePrompts()
	notes, r.notes = r.notes, nil
	return r, notes
}

// nameTools names every tool policy lets clients see.
func (r *resolver) nameTools() {
	var visible, unsafe []*catalog.Tool
	wire := map[string]bool{}
	bare := map[string][]*catalog.Tool{}
	for _, t := range r.snap.Tools() {
		if !r.pol.Visible(t) {
			continue
		}
		if !catalog.ValidName(t.Name) {
			unsafe = append(unsafe, t)
			continue
		}
		visible = append(visible, t)
		wire[t.WireName()] = true
		if r.bare[t.Server] {
			bare[t.Name] = append(bare[t.Name], t)
		}
	}
	for _, t := range visible {
		name := t.WireName()
		if r.bare[t.Server] {
			switch others := bare[t.Name]; {
			case reservedNames[t.Name]:
				r.collision(t.ID(), t.WireName(), "it is the name of the gateway's own tool")
			case wire[t.Name]:
				r.collision(t.ID(), t.WireName(), "another tool is exposed under it (server__tool)")
			case len(others) > 1:
				r.collision(t.ID(), t.WireName(), "servers "+serverList(others)+" all have a tool of that name")
			default:
				name = t.Name
			}
		}
		if !catalog.ValidName(name) { // server__tool too long, or a key clients refuse
			unsafe = append(unsafe, t)
			continue
		}
		r.tools[t] = name
		r.byName[name] = t
	}
	for _, t := range unsafe {
		name := aliasName(t, r.byName)
		r.tools[t] = name
		r.byName[name] = t
		r.aliases[name] = t
		r.notes = append(r.notes, nameNote{key: t.ID() + "\x00alias",
			msg:  "exposing a tool under an alias: its name is not a valid MCP tool name (ASCII letters, digits, _ - . only, at most 128 characters), which clients refuse",
			args: []any{"server", t.Server, "tool", quoteShort(t.Name), "exposed_as", name}})
	}
}

// namePrompts names the prompts of the view's extras by the same rule as
// tools, among prompts.
func (r *resolver) namePrompts() {
	keys := sortedKeys(r.extras)
	prefixed := map[string]bool{}
	barePr := map[string][]string{}
	for _, k := range keys {
		for _, p := range r.extras[k].Prompts {
			prefixed[k+catalog.WireSeparator+p.Name] = true
			if r.bare[k] {
				barePr[p.Name] = append(barePr[p.Name], k)
			}
		}
	}
	for _, k := range keys {
		for _, p := range r.extras[k].Prompts {
			name := k + catalog.WireSeparator + p.Name
			if r.bare[k] {
				switch others := barePr[p.Name]; {
				case prefixed[p.Name]:
					r.collision("prompt "+k+"/"+p.Name, name, "another prompt is exposed under it (server__prompt)")
				case len(others) > 1:
					r.collision("prompt "+k+"/"+p.Name, name, "servers "+strings.Join(others, ", ")+" all have a prompt of that name")
				default:
					name = p.Name
				}
			}
			if _, dup := r.prompts[name]; dup {
				continue // a server listed the same prompt twice
			}
			r.prompts[name] = promptRoute{server: k, name: p.Name}
			r.promptNames[k+"\x00"+p.Name] = name
		}
	}
}

// collision notes that an item's bare name was refused.
func (r *resolver) collision(item, exposed, why string) {
	r.notes = append(r.notes, nameNote{key: item + "\x00" + why, msg: "a bare name collides; exposing the prefixed name instead",
		args: []any{"item", item, "exposed_as", exposed, "why", why}})
}

// Resolve finds the visible tool a name refers to: the name clients see,
// "server__tool", "mcp__server__tool", "server/tool", or a bare tool name
// that only one server has. A denied tool is never found. A qualified name
// whose server part names a server of the gateway resolves within that
// server or not at all: it never falls back to a tool of another server
// whose bare name happens to be the same string.
func (r *resolver) Resolve(name string) (target, error) {
	name = strings.TrimSpace(name)
	if tg, ok := r.exposedTool(name); ok {
		return tg, nil
	}
	if srv, tool, ok := r.qualified(name); ok {
		if t, found := r.snap.Tool(srv + catalog.IDSeparator + tool); found && r.pol.Visible(t) {
			return r.toolTarget(t), nil
		}
		return target{}, fmt.Errorf("server %q has no tool %q that can be called; search for it with %s", srv, tool, searchToolName)
	}
	var found []*catalog.Tool
	for _, t := range r.snap.Tools() {
		if t.Name == name && r.pol.Visible(t) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 1:
		return r.toolTarget(found[0]), nil
	case 0:
		return target{}, fmt.Errorf("no tool is named %q; search for it with %s", name, searchToolName)
	}
	var names []string
	for _, t := range found {
		names = append(names, r.toolName(t))
	}
	return target{}, fmt.Errorf("%q is ambiguous: it could be %s", name, strings.Join(names, ", "))
}

// exposedTool finds the tool clients see under exactly name.
func (r *resolver) exposedTool(name string) (target, bool) {
	t, ok := r.byName[name]
	if !ok {
		return target{}, false
	}
	return r.toolTarget(t), true
}

// toolTarget is what a name of t resolves to.
func (r *resolver) toolTarget(t *catalog.Tool) target {
	exposed := r.toolName(t)
	_, alias := r.aliases[exposed]
	return target{tool: t, server: t.Server, name: t.Name, exposed: exposed, verdict: r.pol.Decide(t.Server, t.Name), alias: alias}
}

// ResolvePrompt finds the prompt an exposed prompt name refers to.
func (r *resolver) ResolvePrompt(name string) (target, bool) {
	p, ok := r.prompts[name]
	if !ok {
		return target{}, false
	}
	return target{server: p.server, name: p.name, exposed: name, verdict: r.pol.DecidePrompt(p.server, p.name)}, true
}

// visible reports whether policy lets clients see t. A view not named yet
// (no resolver) shows nothing.
func (r *resolver) visible(t *catalog.Tool) bool { return r != nil && r.pol.Visible(t) }

// toolName is the name clients see for t: its bare name or server__tool.
func (r *resolver) toolName(t *catalog.Tool) string {
	if n, ok := r.tools[t]; ok {
		return n
	}
	return t.WireName()
}

// promptName is the name clients see for a server's prompt.
func (r *resolver) promptName(server, prompt string) string {
	if n, ok := r.promptNames[server+"\x00"+prompt]; ok {
		return n
	}
	return server + catalog.WireSeparator + prompt
}

// keepsBare reports whether the server's tools and prompts keep their own
// names where they collide with none (its resources and log names too).
func (r *resolver) keepsBare(server string) bool { return r.bare[server] }

// configured reports whether key names a configured server.
func (r *resolver) configured(key string) bool {
	_, ok := r.bare[key]
	return ok
}

// isServer reports whether key names a server of the gateway: a
// configured one, the built-in tools, or a server of a static catalog.
func (r *resolver) isServer(key string) bool {
	if r.configured(key) || key == builtin.Key {
		return true
	}
	if r.static {
		_, ok := r.snap.Server(key)
		return ok
	}
	return false
}

// qualified returns the server and tool a qualified name denotes
// ("server/tool", "mcp__server__tool", "server__tool"), when its server
// part names a server of the gateway.
func (r *resolver) qualified(name string) (server, tool string, ok bool) {
	if s, t, cut := strings.Cut(name, catalog.IDSeparator); cut && r.isServer(s) {
		return s, t, true
	}
	if rest, had := strings.CutPrefix(name, "mcp__"); had {
		if s, t, cut := strings.Cut(rest, catalog.WireSeparator); cut && r.isServer(s) {
			return s, t, true
		}
	}
	if s, t, cut := strings.Cut(name, catalog.WireSeparator); cut && r.isServer(s) {
		return s, t, true
	}
	return "", "", false
}

// routeURI finds the server of a resource URI a client named: a
// toolsearch://server/… URI, a resource one server listed, or a URI one
// of a server's templates matches; failing those, the only server that
// declares resources.
func (r *resolver) routeURI(uri string) (server, orig string, err error) {
	if rest, ok := strings.CutPrefix(uri, "toolsearch://"); ok {
		if k, esc, ok := strings.Cut(rest, "/"); ok && r.configured(k) {
			if o, err := url.PathUnescape(esc); err == nil {
				return k, o, nil
			}
		}
	}
	keys := sortedKeys(r.extras)
	var owners []string
	for _, k := range keys {
		for _, res := range r.extras[k].Resources {
			if res.URI == uri {
				owners = append(owners, k)
				break
			}
		}
	}
	if len(owners) == 1 {
		return owners[0], uri, nil
	}
	if len(owners) > 1 {
		return "", "", fmt.Errorf("servers %s all have a resource %s: use the URI resources/list gives", strings.Join(owners, ", "), uri)
	}
	for _, k := range keys {
		for _, t := range r.extras[k].Templates {
			if templateMatches(t.URITemplate, uri) {
				return k, uri, nil
			}
		}
	}
	var declaring []string
	for _, k := range keys {
		if declaresResources(r.extras[k]) {
			declaring = append(declaring, k)
		}
	}
	if len(declaring) == 1 {
		return declaring[0], uri, nil
	}
	return "", "", fmt.Errorf("no server has a resource %s", uri)
}

// templateOwner finds the server whose resource template is exactly
// tmpl (the first, in key order, as in the lists clients see).
func (r *resolver) templateOwner(tmpl string) (string, bool) {
	for _, k := range sortedKeys(r.extras) {
		for _, t := range r.extras[k].Templates {
			if t.URITemplate == tmpl {
				return k, true
			}
		}
	}
	return "", false
}

var templateExpr = regexp.MustCompile(`\{[^{}]*\}`)

// templateMatches reports whether uri is an expansion of the RFC 6570
// template tmpl, read loosely: each {expression} stands for any text.
func templateMatches(tmpl, uri string) bool {
	parts := templateExpr.Split(tmpl, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile("^" + strings.Join(parts, ".*") + "$")
	return err == nil && re.MatchString(uri)
}

// resourceAllowed returns an error when policy denies the server's
// resource uri.
func (r *resolver) resourceAllowed(server, uri string) error {
	if v := r.pol.DecideResource(server, uri); v.Decision == policy.Deny {
		return fmt.Errorf("resource %s of server %q is not available: policy denies it (%s)", uri, server, v.Reason())
	}
	return nil
}

// promptAllowed returns an error when policy denies the server's prompt.
func (r *resolver) promptAllowed(server, name string) error {
	if v := r.pol.DecidePrompt(server, name); v.Decision == policy.Deny {
		return fmt.Errorf("prompt %q of server %q is not available: policy denies it (%s)", name, server, v.Reason())
	}
	return nil
}

// allowedExtras returns m with the prompts, resources and templates pol
// denies left out; m itself when it denies none. m is not changed: it is
// what the server listed, and what the state directory caches.
func allowedExtras(pol *policy.Policy, key string, m *upstream.Manifest) *upstream.Manifest {
	if m == nil || pol.Empty() {
		return m
	}
	out := *m
	out.Resources = keepIf(m.Resources, func(r *mcp.Resource) bool {
		return r != nil && pol.DecideResource(key, r.URI).Decision != policy.Deny
	})
	out.Templates = keepIf(m.Templates, func(t *mcp.ResourceTemplate) bool {
		return t != nil && pol.DecideResource(key, t.URITemplate).Decision != policy.Deny
	})
	out.Prompts = keepIf(m.Prompts, func(p *mcp.Prompt) bool {
		return p != nil && pol.DecidePrompt(key, p.Name).Decision != policy.Deny
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

// serverList names the servers of tools, sorted, without repeats.
func serverList(tools []*catalog.Tool) string {
	var keys []string
	for _, t := range tools {
		keys = append(keys, t.Server)
	}
	sort.Strings(keys)
	return strings.Join(slices.Compact(keys), ", ")
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// view is the gateway's current picture of the world, replaced as a whole.
type view struct {
	snap  *catalog.Snapshot
	index *search.Index
	// tokens per server key (o200k), from a manifest or counted.
	tokens map[string]int
	// extras per server key: resources, templates, prompts.
	extras map[string]*upstream.Manifest
	// fromCache marks servers whose tools came from a cached manifest and
	// have not been listed live yet.
	fromCache map[string]bool
	// validators caches the compiled input schemas of this view's tools.
	validators validators
	// names says what clients may see of this view and by what names
	// (resolve.go).
	names *resolver
}
