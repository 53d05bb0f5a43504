package gateway

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// targetedServers returns the configured servers a query names outright:
// a server name alone ("github"), a server prefix ("github__",
// "mcp__github"), an exact tool name of the server ("github__create_issue",
// "mcp__github__create_issue", "github/create_issue"), or any of these
// among the names of a select: query. A name without a server part
// ("create_issue") may be a bare tool name: it targets the servers that
// keep bare names (naming.go). Free words and regexes target no server,
// even when they mention one.
func (g *Gateway) targetedServers(query string) []string {
	q := strings.TrimSpace(query)
	var names []string
	if rest, ok := strings.CutPrefix(q, "select:"); ok {
		names = strings.Split(rest, ",")
	} else if !strings.ContainsAny(q, " \t\n") {
		names = []string{q}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "mcp__")
		key := n
		if k, _, ok := strings.Cut(n, catalog.WireSeparator); ok {
			key = k
		} else if k, _, ok := strings.Cut(n, catalog.IDSeparator); ok {
			key = k
		}
		if _, configured := g.ups()[key]; configured {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
			continue
		}
		if key == n && bareCandidate.MatchString(n) {
			for _, k := range g.keys() {
				if g.wantsBare(k) && !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// bareCandidate matches what could be a bare tool name.
var bareCandidate = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// awaitTargets waits, for a query that targets servers still starting with
// no tools known yet (neither listed nor cached), until each is ready or
// has failed, at most its start timeout. Other queries never wait: a
// search does not block on servers it does not name.
func (g *Gateway) awaitTargets(ctx context.Context, query string) {
	if g.static || len(g.ups()) == 0 {
		return
	}
	for _, key := range g.targetedServers(query) {
		u := g.ups()[key]
		if _, known := g.cur.Load().snap.Server(key); known {
			continue
		}
		u.awaitSettled(ctx, u.startTimeout()+time.Second)
	}
}

// awaitSettled waits until the server is no longer starting (ready,
// failed, idle or stopped), for at most d or until ctx ends.
func (u *upstream) awaitSettled(ctx context.Context, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		u.mu.Lock()
		st, ch := u.state, u.changed
		u.mu.Unlock()
		if st != StateStarting && st != StateRestarting {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		}
	}
}

// resolveCall is resolve for a call. A name that names a server whose
// tools are not known yet (server__tool, server/tool) waits for that
// server's start, as a search naming it does; if the tool is still not
// found, the error says what became of the server (failed, and why), not
// only that no tool has the name.
func (g *Gateway) resolveCall(ctx context.Context, name string) (*catalog.Tool, error) {
	t, err := g.resolve(name)
	if err == nil || g.static {
		return t, err
	}
	keys := g.targetedServers(name)
	if len(keys) == 0 || strings.HasPrefix(strings.TrimSpace(name), "select:") {
		return nil, err
	}
	g.awaitTargets(ctx, name)
	if t, err2 := g.resolve(name); err2 == nil {
		return t, nil
	}
	for _, k := range keys {
		if _, known := g.cur.Load().snap.Server(k); known {
			continue
		}
		st := g.ups()[k].status()
		if st.Error != "" {
			return nil, fmt.Errorf("cannot call %s: server %q is %s: %s", strings.TrimSpace(name), k, st.State, st.Error)
		}
		return nil, fmt.Errorf("cannot call %s: server %q is %s and has not listed its tools yet", strings.TrimSpace(name), k, st.State)
	}
	return nil, err
}
