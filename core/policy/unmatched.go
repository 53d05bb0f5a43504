package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Unmatched lists the tool patterns (allow, deny and ask, global and per
// server) that match none of the tools the servers have listed, with the
// nearest tool name when the pattern looks like a typo of one, in a stable
// order. configured are the configured server keys; listed holds, per
// server whose tools are known, their names. A pattern is judged only when
// every server it can name has listed its tools: a server that has not
// started yet may still have the tool. Patterns Warnings reports are left
// to it.
func (p *Policy) Unmatched(configured []string, listed map[string][]string) []Warning {
	if p == nil {
		return nil
	}
	seen := map[Warning]bool{}
	for _, w := range p.Warnings(configured) {
		w.Problem = ""
		seen[w] = true
	}
	allListed := true
	for _, k := range configured {
		if _, ok := listed[k]; !ok {
			allListed = false
		}
	}
	var out []Warning
	add := func(scope, list, pat, problem string) {
		w := Warning{Scope: scope, List: list, Pattern: pat}
		if seen[w] {
			return
		}
		w.Problem = problem
		out = append(out, w)
	}
	keys := make([]string, 0, len(listed))
	for k := range listed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, l := range p.rawGlobal.lists()[:3] { // allow, deny, ask
		for _, raw := range l.pats {
			q := qualified(raw)
			srv, name, hasServer := strings.Cut(q, catalog.IDSeparator)
			var ids []string
			switch {
			case hasServer && !strings.ContainsAny(srv, "*?"):
				names, ok := listed[srv]
				if !ok {
					continue // not listed yet, or not configured (Warnings)
				}
				for _, n := range names {
					ids = append(ids, srv+catalog.IDSeparator+n)
				}
			case !allListed:
				continue
			default:
				for _, k := range keys {
					for _, n := range listed[k] {
						ids = append(ids, k+catalog.IDSeparator+n)
					}
				}
			}
			if anyMatch(ids, func(id string) bool { return Match(q, id) }) {
				continue
			}
			problem := "matches none of the tools of the configured servers"
			if hasServer && !strings.ContainsAny(srv, "*?") {
				problem = fmt.Sprintf("matches none of server %q's %d tools", srv, len(ids))
				if _, fixed, ok := Nearest(name, listed[srv]); ok {
					problem += fmt.Sprintf("; did you mean %q?", srv+catalog.IDSeparator+fixed)
				}
			} else if _, fixed, ok := Nearest(q, ids); ok {
				problem += fmt.Sprintf("; did you mean %q?", fixed)
			}
			add("", l.name, raw, problem)
		}
	}
	for _, k := range keys {
		r, ok := p.rawServers[k]
		if !ok {
			continue
		}
		names := listed[k]
		for _, l := range r.lists()[:3] {
			for _, raw := range l.pats {
				pat := strings.TrimSpace(raw)
				if anyMatch(names, func(n string) bool { return matchLocal(k, pat, n) }) {
					continue
				}
				bare := pat
				for _, pre := range ownPrefixes(k) {
					if rest, ok := strings.CutPrefix(pat, pre); ok {
						bare = rest
						break
					}
				}
				problem := fmt.Sprintf("matches none of the server's %d tools", len(names))
				if _, fixed, ok := Nearest(bare, names); ok {
					problem += fmt.Sprintf("; did you mean %q?", fixed)
				}
				add(k, l.name, raw, problem)
			}
		}
	}
	return out
}
