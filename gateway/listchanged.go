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
//     been quiet for relistQuiet, or relistMaxDelay after the burst began
//     if it never goes quiet, so a storm of notifications costs one listing
//     per relistMaxDelay and gives each client one list_changed; the
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
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// relistQuiet is how long a server must be quiet after a list_changed
	// before it is listed again.
	relistQuiet = 50 * time.Millisecond
	// relistMaxDelay bounds the wait for quiet: a server that announces
	// changes without pause is listed again this long after the first.
	relistMaxDelay = time.Second
)

// kindSet is a set of listKinds.
type kindSet uint8

func (k kindSet) with(kinds ...listKind) kindSet {
	for _, kind := range kinds {
		k |= 1 << kind
	}
	return k
}

func (k kindSet) has(kind listKind) bool { return k&(1<<kind) != 0 }

// listChanged is told that the server sent a list_changed of kinds: the
// lists are stale until listed again, the kinds are noted for passing on,
// and a listing is asked for (waitEnd debounces it).
func (u *upstream) listChanged(kinds ...listKind) {
	u.markStale(kinds...)
	u.mu.Lock()
	u.announced = u.announced.with(kinds...)
	u.mu.Unlock()
	select {
	case u.relist <- struct{}{}:
	default:
	}
}

// takeAnnounced returns the kinds announced since the last call, and
// forgets them.
func (u *upstream) takeAnnounced() kindSet {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := u.announced
	u.announced = 0
	return k
}

// relistDebounce says when a listing asked for by list_changed is due: a
// burst of requests gives one listing, relistQuiet after the last of them
// and at most relistMaxDelay after the first.
type relistDebounce struct {
	timer *time.Timer
	first time.Time
	armed bool
}

// request notes one more request at now and returns the channel that fires
// when the listing is due.
func (d *relistDebounce) request(now time.Time) <-chan time.Time {
	if !d.armed {
		d.first, d.armed = now, true
	}
	wait := max(min(relistQuiet, relistMaxDelay-now.Sub(d.first)), 0)
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	return d.timer.C
}

// fired is told the listing is being done: the next request begins a new
// burst.
func (d *relistDebounce) fired() { d.armed = false }

func (d *relistDebounce) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

// relistAnnounced lists the server again after its list_changed and passes
// the announcement on to the clients.
func (u *upstream) relistAnnounced(ctx context.Context) {
	kinds := u.takeAnnounced()
	lctx, cancel := context.WithTimeout(ctx, u.startTimeout())
	defer cancel()
	if err := u.listAll(lctx); err != nil {
		u.log.Warn("re-listing after list_changed failed", "err", err)
		return
	}
	u.g.passOnChanged(u.cfg.Key, kinds)
}

// passOnChanged tells the clients whose lists hold items of server that
// its lists of kinds changed.
func (g *Gateway) passOnChanged(server string, kinds kindSet) {
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
func kindNames(k kindSet) string {
	var names []string
	for kind, name := range map[listKind]string{listTools: "tools", listPrompts: "prompts", listResources: "resources", listTemplates: "resource templates"} {
		if k.has(kind) {
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
func (s *session) passOn(server string, kinds kindSet) bool {
	v := s.g.cur.Load()
	s.mu.Lock()
	resync, told := false, false
	if kinds.has(listTools) {
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
	if kinds.has(listPrompts) {
		for name := range s.prompts {
			if tg, ok := v.names.ResolvePrompt(name); ok && tg.server == server {
				delete(s.prompts, name)
				resync = true
			}
		}
	}
	prefix := server + "\x00" // resources' signatures begin with their server (syncExtras)
	if kinds.has(listResources) {
		for uri, sig := range s.resources {
			if strings.HasPrefix(sig, prefix) {
				delete(s.resources, uri)
				resync = true
			}
		}
	}
	if kinds.has(listTemplates) {
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
