package gateway

// Which built-in tools each client is shown (the rules are package
// builtin's Decide). The catalog holds every built-in tool the
// configuration makes available; a session leaves out of its listings,
// searches and calls the ones Decide turns off for its client:
//
//   - A client of MCP 2025-11-25 or older is known from its initialize:
//     its clientInfo name says whether it has tools of its own
//     (ownToolsClients), and its MCP roots, asked for once it has
//     initialized and again at each roots/list_changed, are where the file
//     tools work. Its first tools/list waits (up to rootsWait) for that
//     first answer, so that a client which lists once sees the right list.
//   - A 2026-07-28 client has no initialize and no roots, and its tool
//     list must not vary per connection: it may vary only by what each
//     request says. Over HTTP its clientInfo name (in the request's _meta)
//     picks the shared server it is served by: one for the clients with
//     tools of their own, by kind (ownToolsKind), and one for every other
//     client, whose built-ins are decided from the configuration alone.
//     Those lists then differ between clients of one endpoint, so they
//     are private (era_cache.go).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/clientera"
)

// ownToolsClients are the clientInfo names (or, ending in "*", prefixes)
// of clients that have file, web and MCP-resource tools of their own:
// Claude Code (Glob, Grep, LSP, WebFetch, WebSearch, ListMcpResources),
// Codex CLI (its shell, web search and MCP resource tools) and VS Code
// (its workspace search, fetch and MCP resource attachments; its
// Insiders build names itself "Visual Studio Code - Insiders").
var ownToolsClients = []string{"claude-code", "codex-mcp-client", "Visual Studio Code*"}

// hasOwnTools reports whether the client c is known to have tools of its
// own for what the built-in tools do.
func hasOwnTools(c *clientera.Facts) bool {
	return c != nil && ownToolsKind(c.Name) != ""
}

// ownToolsKind is the entry of ownToolsClients that a client of this
// clientInfo name is (without its "*"), or "" for a client not known to
// have tools of its own. There are as many kinds as entries, whatever
// names clients send.
func ownToolsKind(name string) string {
	if name == "" {
		return ""
	}
	for _, n := range ownToolsClients {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(name, p) {
				return p
			}
		} else if name == n {
			return n
		}
	}
	return ""
}

// ownKindSep joins a shared server's key and the kind of client with
// tools of its own that it serves (modernBuiltinKey).
const ownKindSep = "+own:"

// modernBuiltinKey is the key of the shared server that serves a
// 2026-07-28 request of the client named name, given the key its
// exposure gives: the same key, or for a client with tools of its own,
// when that changes which built-in tools are shown, the key and its kind.
func (g *Gateway) modernBuiltinKey(key, name string) string {
	kind := ownToolsKind(name)
	if kind == "" || !g.builtinsByClient() {
		return key
	}
	return key + ownKindSep + kind
}

// builtinsByClient reports whether the built-in tools shown depend on
// whether the client has tools of its own.
func (g *Gateway) builtinsByClient() bool {
	return g.builtin != nil && g.builtin.byClient
}

// rootsWait bounds how long a session's first tools/list waits for the
// client's answer to roots/list.
const rootsWait = 2 * time.Second

// builtinClient is what Decide knows of the session's client. s.mu is
// held.
func (s *session) builtinClient() builtin.Client {
	if s.ownKind != "" {
		// A shared server of the clients of one kind (modernBuiltinKey).
		return builtin.Client{Name: s.ownKind, OwnTools: true}
	}
	if s.modern() || s.facts == nil {
		return builtin.Client{}
	}
	return builtin.Client{Name: s.facts.Name, OwnTools: hasOwnTools(s.facts), Roots: s.roots}
}

// decideBuiltins sets which built-in tools the session leaves out, and
// logs the decision when it changed. s.mu is held.
func (s *session) decideBuiltins() {
	g := s.g
	if g.builtin == nil {
		return
	}
	c := s.builtinClient()
	hidden := g.builtin.set.Hidden(c)
	if s.builtinOff != nil && sameSet(hidden, s.builtinOff) {
		return
	}
	first := s.builtinOff == nil
	s.builtinOff = hidden
	if first && c.Name == "" {
		return // the default, which status shows
	}
	var on []string
	for _, d := range g.builtin.set.Decide(c, true) {
		if d.On {
			on = append(on, d.Tool)
		}
	}
	g.log.Info("built-in tools for a client", "client", c.Name, "own_tools", c.OwnTools, "roots", len(c.Roots), "on", strings.Join(on, ","))
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// hidesTool reports whether t is a built-in tool the session leaves out.
// s.mu is held.
func (s *session) hidesTool(t *catalog.Tool) bool {
	return t != nil && t.Server == builtin.Key && s.builtinOff[t.Name]
}

// visibleFunc returns the session's visibility test: policy, and the
// built-ins left out. It takes s.mu; the test itself does not.
func (s *session) visibleFunc() func(*catalog.Tool) bool {
	s.mu.Lock()
	off := s.builtinOff
	s.mu.Unlock()
	return s.g.visibleWithout(off)
}

// visibleWithout is Visible, less the built-in tools named in off.
func (g *Gateway) visibleWithout(off map[string]bool) func(*catalog.Tool) bool {
	if len(off) == 0 {
		return g.Visible
	}
	return func(t *catalog.Tool) bool {
		return g.Visible(t) && !(t.Server == builtin.Key && off[t.Name])
	}
}

// refusedBuiltin returns the error a call of the tool to, by the name the
// client sent, gets when to is a built-in tool the session leaves out; nil
// otherwise (to.tool is nil when the name resolved to no tool).
func (s *session) refusedBuiltin(name string, to target) *mcp.CallToolResult {
	t := to.tool
	if t == nil {
		return nil
	}
	s.mu.Lock()
	c, hidden := s.builtinClient(), s.hidesTool(t)
	s.mu.Unlock()
	if !hidden {
		return nil
	}
	for _, d := range s.g.builtin.set.Decide(c, true) {
		if d.Tool == t.Name {
			return toolError("%s is not offered to this client: %s", name, d.Reason)
		}
	}
	return toolError("%s is not offered to this client", name)
}

// askRoots asks the client for its MCP roots, when it declared them and a
// file tool could use them, and decides the built-ins again by the
// answer. done, when not nil, is closed once the answer is in (or the ask
// failed).
func (s *session) askRoots(ss *mcp.ServerSession, done chan struct{}) {
	if done != nil {
		defer close(done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rootsTimeout)
	defer cancel()
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		s.g.log.Info("the client did not list its roots; the file tools use the configured roots", "client", s.clientLabel(), "err", err)
		return
	}
	var roots []string
	for _, r := range res.Roots {
		if r != nil && r.URI != "" {
			roots = append(roots, r.URI)
		}
	}
	s.mu.Lock()
	s.roots = roots
	s.decideBuiltins()
	s.mu.Unlock()
	s.sync()
}

func (s *session) clientLabel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// wantsRoots reports whether the client's roots can change its built-in
// tools: it declared roots, speaks a version with initialize, and some
// file tool is available.
func (s *session) wantsRoots(c *clientera.Facts) bool {
	if c == nil || !c.Roots || clientera.Modern(c.Protocol) || s.g.builtin == nil {
		return false
	}
	return s.g.builtin.set.UsesRoots()
}

// awaitRoots waits, up to rootsWait, for the first answer to roots/list.
func (s *session) awaitRoots(ctx context.Context) {
	s.mu.Lock()
	done := s.rootsDone
	s.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(rootsWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.g.log.Info("first tools/list: the client's roots did not come in time; its file tools follow with list_changed", "waited", rootsWait)
	case <-ctx.Done():
	}
}

// Builtins says, for a client the gateway knows nothing of (and every MCP
// 2026-07-28 client), which built-in tools are on and why, one decision
// per tool; note says how other clients differ.
func (g *Gateway) Builtins() (decisions []builtin.Decision, note string) {
	if g.builtin == nil {
		return nil, ""
	}
	g.mu.Lock()
	resources := g.builtin.resources
	g.mu.Unlock()
	names := make([]string, len(ownToolsClients))
	for i, n := range ownToolsClients {
		names[i] = strings.TrimSuffix(n, "*")
	}
	note = fmt.Sprintf("clients of MCP 2025-11-25 and older: the file tools also work in the client's own MCP roots; "+
		"%s get only the built-ins the configuration sets explicitly, as they have their own", strings.Join(names, ", "))
	return g.builtin.set.Decide(builtin.Client{}, resources), note
}
