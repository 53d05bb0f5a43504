package gateway

// Passing on a server's list_changed.
//
// A server that sends notifications/tools/list_changed (or the prompts or
// resources one) is listed again, and its clients are told in turn: the
// gateway's own lists are rebuilt from the new listing and, where they
// changed, the MCP library announces it. That alone is not enough: a server
// may announce a change the gateway cannot see (a definition changed in a
// way its list compares equal, or the same item was added again), and a
// client that caches lists (ttlMs of MCP 2026-07-28) must still learn that
// the server said its list changed. So when a server announces a change of
// a kind of list, every client whose list of that kind holds an item of
// that server gets a list_changed of that kind: a session of MCP
// 2025-11-25 as a notification of its session, a 2026-07-28 client on its
// subscriptions/listen stream (if it asked for that kind).
//
// What is passed on, and what is not:
//   - One announcement per burst: the server is listed again once it has
//     been quiet for a moment, or a second after the burst began if it
//     never goes quiet (package upstream), so a storm of notifications
//     costs one listing a second and gives each client one list_changed; the
//     library coalesces the gateway's own change announcements of the same
//     moment with it.
//   - Only to clients whose list holds an item of the server: a server whose
//     tools policy hides is never announced (its tools are in no list), and
//     in search exposure, where a server's tools are behind search_tools, a
//     server's change is announced only to the clients whose list holds one
//     of its tools (always-loaded ones, or those a dynamic search added).
//     Searches use the new listing at once either way.

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// passOnChanged tells the clients whose lists hold items of server that
// its lists of kinds changed.
func (g *Gateway) passOnChanged(server string, kinds upstream.KindSet) {
	if kinds == 0 {
		return
	}
	told := 0
	for _, s := range append(g.sessionList(), g.sharedSessions()...) {
		if s.passOn(server, kinds) {
			told++
		}
	}
	g.log.Debug("passed on a server's list_changed", "server", server, "lists", kindNames(kinds), "clients", told)
}

// kindNames names the kinds of a set, for logs.
func kindNames(k upstream.KindSet) string {
	var names []string
	for kind, name := range map[upstream.ListKind]string{upstream.ListTools: "tools", upstream.ListPrompts: "prompts", upstream.ListResources: "resources", upstream.ListTemplates: "resource templates"} {
		if k.Has(kind) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// passOn makes the session announce a change of its lists of kinds that
// hold items of server, and reports whether it did. Items are announced by
// registering them again with the session's MCP server, which sends
// list_changed for every registration (the library does not compare
// definitions); a session in full exposure registers its placeholder again
// (fulllist.go).
func (s *session) passOn(server string, kinds upstream.KindSet) bool {
	v := s.g.cur.Load()
	s.mu.Lock()
	resync, told := false, false
	if kinds.Has(upstream.ListTools) {
		if s.full != nil {
			if s.full.servers[server] {
				s.announceFull()
				told = true
			}
		} else {
			for name := range s.tools {
				if tg, ok := v.names.exposedTool(name); ok && tg.server == server {
					delete(s.tools, name) // sync registers it again
					resync = true
				}
			}
		}
	}
	if kinds.Has(upstream.ListPrompts) {
		for name := range s.prompts {
			if tg, ok := v.names.ResolvePrompt(name); ok && tg.server == server {
				delete(s.prompts, name)
				resync = true
			}
		}
	}
	prefix := server + "\x00" // resources' signatures begin with their server (syncExtras)
	if kinds.Has(upstream.ListResources) {
		for uri, sig := range s.resources {
			if strings.HasPrefix(sig, prefix) {
				delete(s.resources, uri)
				resync = true
			}
		}
	}
	if kinds.Has(upstream.ListTemplates) {
		for uri, sig := range s.templates {
			if strings.HasPrefix(sig, prefix) {
				delete(s.templates, uri)
				resync = true
			}
		}
	}
	s.mu.Unlock()
	if resync {
		s.sync()
	}
	return told || resync
}

// announceFull has the library send tools/list_changed to a session in
// full exposure, by registering its placeholder again. s.mu is held.
func (s *session) announceFull() {
	s.server.AddTool(listPlaceholder, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("unknown tool %q", listPlaceholder.Name)
	})
}

// listPlaceholder is the tool a session in full mode re-registers with its
// MCP server to have the library send tools/list_changed; its listings
// come from the view, so no client sees it, and a call of it is refused
// as an unknown tool.
var listPlaceholder = &mcp.Tool{Name: "toolsearch-full-list", InputSchema: map[string]any{"type": "object"}}
