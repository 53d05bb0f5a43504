package gateway

// The gateway's search (Search, SearchMany): the view's index, the aliases
// of tools with invalid names, what ranking learned from use, and the
// waits for servers still starting that a query names or that may hold
// what a search found nothing for.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// Search runs a query over the tools policy lets clients see. A query that
// names a server still starting (its name, a server prefix, one of its
// tools, select: of its tools) first waits for that server, up to its start
// timeout; any other query is answered at once.
func (g *Gateway) Search(ctx context.Context, query string, max int) (search.Result, error) {
	return g.SearchMany(ctx, query, nil, max)
}

// SearchMany runs query and each of queries as Search runs one query, and
// answers with one list merged as search.SearchMany merges it: tools named
// outright first, then the ranked hits fused by rank, up to max. A query
// that fails fails the search with a *search.QueryError naming it.
func (g *Gateway) SearchMany(ctx context.Context, query string, queries []string, max int) (search.Result, error) {
	return g.searchMany(ctx, query, queries, max, g.Visible)
}

// searchMany is SearchMany over the tools visible reports true for (a
// session's: policy, less the built-ins it leaves out).
func (g *Gateway) searchMany(ctx context.Context, query string, queries []string, max int, visible func(*catalog.Tool) bool) (res search.Result, err error) {
	ctx, span := g.tracer.StartSearch(ctx, query, queries) // tracing.go
	defer func() { g.tracer.EndSearch(span, string(res.Form), len(res.Hits), res.Total, err) }()
	if len(queries) <= search.MaxQueries {
		// Past the limit the search is refused: nothing to wait for.
		g.awaitTargets(ctx, query)
		for _, q := range queries {
			g.awaitTargets(ctx, q)
		}
	}
	start := time.Now()
	v := g.cur.Load()
	one := func(ctx context.Context, req search.Request) (search.Result, error) {
		if res, err, done := g.searchAliases(ctx, v, req.Query, req.MaxResults, visible); done {
			return res, err
		}
		return v.index.Search(ctx, req)
	}
	req := search.Request{Query: query, MaxResults: max, Visible: visible, Learned: g.learned()}
	res, err = search.SearchEach(ctx, req, queries, one)
	if err == nil && len(res.Hits) == 0 && len(queries) <= search.MaxQueries && g.awaitStarting(ctx) {
		// Nothing found while servers were starting: their tools may be
		// what was asked for, so the search is made again once they
		// have started (search.go).
		v = g.cur.Load()
		res, err = search.SearchEach(ctx, req, queries, one)
	}
	g.metrics.Search(time.Since(start), len(res.Hits), err)
	return res, err
}

// searchAliases answers a select: or exact-name query that names one of
// the aliases given to tools with invalid names (resolve.go), which the
// index does not know: aliases are looked up here, every other name of
// the query by the index, in the order given. done is false when the
// query names no alias.
func (g *Gateway) searchAliases(ctx context.Context, v *view, query string, max int, visible func(*catalog.Tool) bool) (res search.Result, err error, done bool) {
	if v.names == nil || len(v.names.aliases) == 0 {
		return res, nil, false
	}
	q := strings.TrimSpace(query)
	names, form := []string{q}, search.FormExact
	if len(q) >= len("select:") && strings.EqualFold(q[:len("select:")], "select:") {
		names, form = strings.Split(q[len("select:"):], ","), search.FormSelect
	}
	aliased := func(n string) (*catalog.Tool, bool) { // n is an alias itself
		tg, err := v.names.Resolve(n)
		return tg.tool, err == nil && tg.alias && tg.exposed == strings.TrimSpace(n)
	}
	if !slices.ContainsFunc(names, func(n string) bool { _, ok := aliased(n); return ok }) {
		return res, nil, false
	}
	res.Form = form
	seen := map[*catalog.Tool]bool{}
	add := func(t *catalog.Tool) {
		if !seen[t] {
			seen[t] = true
			res.Hits = append(res.Hits, search.Hit{Tool: t, Score: 1e6, Why: "selected by name"})
		}
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if t, ok := aliased(n); ok {
			if visible(t) {
				add(t)
			} else {
				res.Unknown = append(res.Unknown, n)
			}
			continue
		}
		sub, err := v.index.Search(ctx, search.Request{Query: "select:" + n, MaxResults: max, Visible: visible})
		if err != nil {
			return search.Result{}, err, true
		}
		for _, h := range sub.Hits {
			add(h.Tool)
		}
		res.Unknown = append(res.Unknown, sub.Unknown...)
		res.Ambiguous = append(res.Ambiguous, sub.Ambiguous...)
	}
	res.Total = len(res.Hits)
	return res, nil, true
}

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
// has failed, at most its start timeout. A query targets a server by
// naming it (targetedServers) or, in free words, by a word of its name
// or command (wordTargets). Other queries wait only when they find
// nothing while servers are starting (searchMany).
func (g *Gateway) awaitTargets(ctx context.Context, query string) {
	if g.static || len(g.ups()) == 0 {
		return
	}
	for _, key := range append(g.targetedServers(query), g.wordTargets(query)...) {
		u := g.ups()[key]
		if _, known := g.cur.Load().snap.Server(key); known {
			continue
		}
		awaitSettled(ctx, u, u.StartTimeout()+time.Second)
	}
}

// awaitSettled waits until server u is no longer starting (ready,
// failed, idle or stopped), for at most d or until ctx ends.
func awaitSettled(ctx context.Context, u *upstream.Server, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		st, ch := u.StateNow()
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

// awaitResolve resolves a call's name again once the servers it names
// have started, when it named a server whose tools were not known yet
// (server__tool, server/tool), as a search naming it waits for it; err is
// why the name resolved to no tool before. If the tool is still not
// found, the error says what became of the server (failed, and why), not
// only that no tool has the name.
func (g *Gateway) awaitResolve(ctx context.Context, name string, err error) (target, error) {
	keys := g.targetedServers(name)
	if len(keys) == 0 || strings.HasPrefix(strings.TrimSpace(name), "select:") {
		return target{}, err
	}
	g.awaitTargets(ctx, name)
	if tg, err2 := g.cur.Load().names.Resolve(name); err2 == nil {
		return tg, nil
	}
	for _, k := range keys {
		if _, known := g.cur.Load().snap.Server(k); known {
			continue
		}
		st := g.ups()[k].Status()
		if st.Error != "" {
			return target{}, fmt.Errorf("cannot call %s: server %q is %s: %s", strings.TrimSpace(name), k, st.State, st.Error)
		}
		if note := g.startingNote([]string{k}); note != "" {
			return target{}, fmt.Errorf("cannot call %s yet: server %q has not listed its tools. %s", strings.TrimSpace(name), k, note)
		}
		return target{}, fmt.Errorf("cannot call %s: server %q is %s and has not listed its tools yet", strings.TrimSpace(name), k, st.State)
	}
	return target{}, err
}

// genericWords are words of server names and commands that say nothing
// of what a server does, so a query holding them targets no server.
var genericWords = map[string]bool{"mcp": true, "server": true, "servers": true, "node": true, "npx": true, "uvx": true,
	"python": true, "python3": true, "docker": true, "run": true, "bin": true, "cli": true, "tool": true, "tools": true,
	"js": true, "py": true, "exe": true, "the": true, "and": true, "for": true}

// wordsOf splits s into lower-case words of letters and digits.
func wordsOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

// serverWords are the words a query may name a server by: those of its
// key and of its command's file name ("memory" for a server keyed
// memory, or started by mcp-server-memory), less generic ones and words
// of fewer than three letters.
func serverWords(u *upstream.Server) []string {
	var out []string
	cmd := u.Config().Command
	if i := strings.LastIndexAny(cmd, `/\`); i >= 0 {
		cmd = cmd[i+1:]
	}
	for _, w := range append(wordsOf(u.Key()), wordsOf(cmd)...) {
		if len(w) >= 3 && !genericWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// startingUnknown returns the configured servers still starting whose
// tools are not known yet (neither listed nor cached), in key order.
func (g *Gateway) startingUnknown() []string {
	if g.static {
		return nil
	}
	v := g.cur.Load()
	var out []string
	for _, k := range g.keys() {
		if _, known := v.snap.Server(k); known {
			continue
		}
		if st := g.ups()[k].Status().State; st == StateStarting || st == StateRestarting {
			out = append(out, k)
		}
	}
	return out
}

// wordTargets returns the servers still starting with no tools known
// whose name or command a free-word query mentions ("memory create
// entities" mentions a server keyed memory). Regexes and select: lists
// are left to targetedServers.
func (g *Gateway) wordTargets(query string) []string {
	q := strings.TrimSpace(query)
	if q == "" || strings.HasPrefix(q, "select:") || strings.ContainsAny(q, `\^$*+?()[]{}|`) {
		return nil
	}
	starting := g.startingUnknown()
	if len(starting) == 0 {
		return nil // the usual case, once servers are up: no words to split
	}
	words := wordsOf(q)
	var out []string
	for _, k := range starting {
		for _, w := range serverWords(g.ups()[k]) {
			if slices.Contains(words, w) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// awaitStarting waits, for at most each one's start timeout, until every
// server still starting with no tools known has settled. It reports
// whether there was any to wait for.
func (g *Gateway) awaitStarting(ctx context.Context) bool {
	keys := g.startingUnknown()
	for _, k := range keys {
		u := g.ups()[k]
		awaitSettled(ctx, u, time.Until(u.Status().Since.Add(u.StartTimeout()+time.Second)))
	}
	return len(keys) > 0
}

// startingNote tells a model about the servers still starting with no
// tools known among keys (all of them when keys is nil): for how long
// each has been starting, how long it may still take, and what to do
// meanwhile. It is "" when none is.
func (g *Gateway) startingNote(keys []string) string {
	var parts []string
	for _, k := range g.startingUnknown() {
		if keys != nil && !slices.Contains(keys, k) {
			continue
		}
		u := g.ups()[k]
		st := u.Status()
		left := time.Until(st.Since.Add(u.StartTimeout())).Round(time.Second)
		if left < time.Second {
			left = time.Second
		}
		parts = append(parts, fmt.Sprintf("%s (starting for %v; it may take up to %v more)", k,
			time.Since(st.Since).Round(time.Second), left))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Servers still starting, whose tools are not known yet: " + strings.Join(parts, ", ") +
		". Search again after that time with the same words, or with the server's name (select:<server>__<tool> once you know the tool's name); " +
		"a search that names a starting server waits for it."
}
