package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Warning is a pattern that can match nothing, or that matches something
// other than what it seems to name, with what to write instead.
type Warning struct {
	// Scope is "" for a global pattern, or the server's key.
	Scope string
	// List is "allow", "deny", "ask", "prompts.allow", "resources.deny"...
	List    string
	Pattern string
	Problem string
}

func (w Warning) String() string {
	scope := "global policy"
	if w.Scope != "" {
		scope = "server " + w.Scope
	}
	return fmt.Sprintf("%s: %s pattern %q %s", scope, w.List, w.Pattern, w.Problem)
}

// toolNameChar reports whether c may appear in a tool or prompt name as
// MCP defines them, or is a glob wildcard.
func toolNameChar(c byte) bool {
	return c == '*' || c == '?' || catalog.NameByte(c)
}

// badNameChar returns the first character of pat that no tool name has, or
// "" when there is none.
func badNameChar(pat string) string {
	for i := 0; i < len(pat); i++ {
		if !toolNameChar(pat[i]) {
			r := []rune(pat[i:])[0]
			return string(r)
		}
	}
	return ""
}

// Warnings lists the patterns that can match no tool, prompt or resource
// of the given servers (the configured keys), in a stable order. Tool and
// prompt names are taken to be what MCP allows: ASCII letters, digits,
// "_", "-" and ".".
func (p *Policy) Warnings(servers []string) []Warning {
	if p == nil {
		return nil
	}
	known := map[string]bool{}
	for _, k := range servers {
		known[k] = true
	}
	var out []Warning
	add := func(scope, list, pat, problem string) {
		out = append(out, Warning{Scope: scope, List: list, Pattern: pat, Problem: problem})
	}
	// Global patterns name server/name.
	for _, l := range p.rawGlobal.lists() {
		for _, raw := range l.pats {
			pat := strings.TrimSpace(raw)
			q := pat
			if !l.resource {
				q = qualified(pat)
			}
			srv, name, hasServer := strings.Cut(q, catalog.IDSeparator)
			switch {
			case !hasServer && !strings.ContainsAny(q, "*?"):
				add("", l.name, raw, "has no server part, so it matches nothing (global patterns match server/name); write */"+pat+
					" or put it in a server's own list")
			case hasServer && !strings.ContainsAny(srv, "*?") && !known[srv]:
				problem := fmt.Sprintf("names server %q, which is not configured, so it matches nothing", srv)
				if near, _, ok := Nearest(srv, servers); ok {
					problem += fmt.Sprintf("; did you mean %q?", near+catalog.IDSeparator+name)
				}
				add("", l.name, raw, problem)
			case hasServer && !l.resource && strings.Contains(name, catalog.IDSeparator) && !strings.Contains(srv, "*"):
				add("", l.name, raw, "has a \"/\" in its name part, which no tool or prompt name has, so it matches nothing")
			case hasServer && !l.resource && badNameChar(name) != "":
				add("", l.name, raw, fmt.Sprintf("contains %q, which no tool or prompt name has, so it matches nothing", badNameChar(name)))
			}
		}
	}
	// A server's own patterns name its bare names.
	keys := make([]string, 0, len(p.rawServers))
	for k := range p.rawServers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, l := range p.rawServers[k].lists() {
			if l.resource {
				continue // URIs can hold anything
			}
			for _, raw := range l.pats {
				if w := localProblem(k, strings.TrimSpace(raw), known); w != "" {
					add(k, l.name, raw, w)
				}
			}
		}
	}
	return out
}

// localProblem says what is wrong with a server's own tool or prompt
// pattern, or "" when nothing is.
func localProblem(server, pat string, known map[string]bool) string {
	for _, pre := range ownPrefixes(server) {
		if rest, ok := strings.CutPrefix(pat, pre); ok {
			pat = rest
			break
		}
	}
	other := ""
	n := strings.TrimPrefix(pat, "mcp__")
	if k, _, ok := strings.Cut(n, catalog.IDSeparator); ok && known[k] {
		other = k
	} else if k, _, ok := strings.Cut(n, catalog.WireSeparator); ok && known[k] && k != server {
		other = k
	}
	switch {
	case other != "":
		return fmt.Sprintf("names server %q, but a server's own patterns match its bare tool names; move it to server %q's list or to the global policy",
			other, other)
	case strings.Contains(pat, catalog.IDSeparator):
		return "has a \"/\", which no tool name has, so it matches nothing (a server's own patterns match its bare tool names; qualified names belong in the global policy)"
	case strings.HasPrefix(pat, "mcp__"):
		return "starts with \"mcp__\", but a server's own patterns match its bare tool names literally; write the bare name"
	case badNameChar(pat) != "":
		return fmt.Sprintf("contains %q, which no tool name has, so it matches nothing", badNameChar(pat))
	}
	return ""
}
