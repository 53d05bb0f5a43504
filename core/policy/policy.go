// Package policy decides, for every tool, whether it is invisible (denied),
// callable (allowed) or callable only after the user agrees (ask), and, for
// every prompt and resource, whether it is listed and readable.
//
// Rules are globs. In a glob, "*" matches any run of characters (including
// "/") and "?" one character; every other character matches itself,
// case-sensitively.
//
// Two scopes, two grammars:
//
//   - A global pattern is matched against the qualified name "server/tool".
//     The forms "server__tool" and "mcp__server__tool" are read as
//     "server/tool": the first "__" (after an optional "mcp__") separates the
//     server from the tool, and the tool part is kept as written, so
//     "db__drop__table" is the tool "drop__table" of server "db".
//   - A server's own pattern is matched against the server's bare tool names
//     literally: "drop__table" and "admin__*" under server "db" match the
//     tools "drop__table" and "admin__reset". A pattern may also start with
//     the server's own qualified prefix ("db/", "db__" or "mcp__db__"); the
//     rest is then matched too.
//
// Deny wins: a tool that any deny pattern matches is denied. When an allow
// list is given (globally, for the server, or both), a tool must match each
// given list, otherwise it is denied too. A visible tool that an ask pattern
// matches is "ask". A denied tool is invisible everywhere: the gateway hides
// it from every listing and search and refuses every call to it.
//
// Prompts, resources and skills have globs of their own (Rules.Prompts,
// Rules.Resources and Rules.Skills: allow and deny, no ask), over prompt
// names, resource URIs and skill paths (the path of a skill's folder in
// its server's skill namespace, "pdf-forms" or "acme/billing/refunds"), in
// the same two scopes. They follow the same order (deny wins, then
// the allow lists), and one more rule: the prompts and resources of a
// server whose every tool is denied by its rules (a "*" in its own deny
// list, "db/*" in the global one, or a global allow list that names none of
// its tools) are denied too, unless a prompt or resource allow pattern
// names them.
//
// Warnings lists the patterns that can match nothing, so that a mistyped
// rule is reported when the configuration is loaded rather than found out
// when a tool it meant to hide is called; a pattern naming a server that
// is not configured suggests the nearest configured name. Unmatched lists
// the tool patterns that match none of the tools the servers have listed,
// with the nearest tool name when the pattern looks like a typo of one
// (Nearest).
//
// The package imports no transport or SDK.
package policy

import (
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Decision is what the policy says about one tool.
type Decision int

// Decisions.
const (
	Allow Decision = iota
	Ask
	Deny
)

func (d Decision) String() string {
	switch d {
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "allow"
}

// Rules are one scope's allow, deny and ask globs for tools, and its allow
// and deny globs for prompts and resources.
type Rules struct {
	Allow, Deny, Ask []string
	// Prompts match prompt names; Resources match resource URIs and
	// resource templates; Skills match skill paths.
	Prompts, Resources, Skills Globs
}

// Globs are the allow and deny patterns of prompts or resources.
type Globs struct {
	Allow, Deny []string
}

func (g Globs) empty() bool { return len(g.Allow)+len(g.Deny) == 0 }

func (r Rules) empty() bool {
	return len(r.Allow)+len(r.Deny)+len(r.Ask) == 0 && r.Prompts.empty() && r.Resources.empty() && r.Skills.empty()
}

// Verdict is a decision with the rule behind it.
type Verdict struct {
	Decision Decision
	// Rule is the pattern that decided ("" when no rule matched), prefixed by
	// its scope: "deny github/delete_*" or "server github: ask merge_*".
	Rule string
}

// Reason says in a sentence why the verdict was reached.
func (v Verdict) Reason() string {
	switch {
	case v.Rule == "":
		return "no rule matched"
	case v.Decision == Deny && (strings.HasPrefix(v.Rule, "not allowed") || strings.HasPrefix(v.Rule, "every tool")):
		return v.Rule
	}
	return "matched " + v.Rule
}

// Policy is a compiled set of rules. The zero value and nil allow
// everything. A Policy is immutable and safe for concurrent use.
type Policy struct {
	global  Rules
	servers map[string]Rules
	// raw keeps the patterns as written, for Warnings.
	rawGlobal  Rules
	rawServers map[string]Rules
}

// New compiles the global rules and each server's rules. It refuses empty
// patterns.
func New(global Rules, servers map[string]Rules) (*Policy, error) {
	if err := checkEmpty("(global)", global); err != nil {
		return nil, err
	}
	p := &Policy{global: normaliseGlobal(global), servers: map[string]Rules{},
		rawGlobal: global, rawServers: map[string]Rules{}}
	for k, r := range servers {
		if err := checkEmpty("of server "+k, r); err != nil {
			return nil, err
		}
		if !r.empty() {
			p.servers[k] = trimLocal(r)
			p.rawServers[k] = r
		}
	}
	return p, nil
}

// namedList is one of a scope's pattern lists, with its name in the
// configuration.
type namedList struct {
	name string
	pats []string
	// resource lists match URIs, not names.
	resource bool
}

// lists returns every pattern list of r, named as in the configuration.
func (r Rules) lists() []namedList {
	return []namedList{{"allow", r.Allow, false}, {"deny", r.Deny, false}, {"ask", r.Ask, false},
		{"prompts.allow", r.Prompts.Allow, false}, {"prompts.deny", r.Prompts.Deny, false},
		{"resources.allow", r.Resources.Allow, true}, {"resources.deny", r.Resources.Deny, true},
		{"skills.allow", r.Skills.Allow, true}, {"skills.deny", r.Skills.Deny, true}}
}

func checkEmpty(scope string, r Rules) error {
	for _, l := range r.lists() {
		for _, p := range l.pats {
			if strings.TrimSpace(p) == "" {
				return fmt.Errorf("policy %s: empty pattern", scope)
			}
		}
	}
	return nil
}

// Empty reports whether the policy has no rule at all.
func (p *Policy) Empty() bool {
	return p == nil || (p.global.empty() && len(p.servers) == 0)
}

// qualified reads a global tool or prompt pattern as "server/name":
// "mcp__s__t" and "s__t" become "s/t"; a pattern with a "/" is kept.
func qualified(s string) string {
	s = strings.TrimSpace(s)
	if strings.Contains(s, catalog.IDSeparator) {
		return s
	}
	s = strings.TrimPrefix(s, "mcp__")
	return strings.Replace(s, catalog.WireSeparator, catalog.IDSeparator, 1)
}

func mapList(l []string, f func(string) string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = f(s)
	}
	return out
}

// normaliseGlobal reads every global tool and prompt pattern as
// "server/name". Resource patterns are "server/uri" as written: a URI may
// hold "__".
func normaliseGlobal(r Rules) Rules {
	return Rules{Allow: mapList(r.Allow, qualified), Deny: mapList(r.Deny, qualified), Ask: mapList(r.Ask, qualified),
		Prompts:   Globs{Allow: mapList(r.Prompts.Allow, qualified), Deny: mapList(r.Prompts.Deny, qualified)},
		Resources: Globs{Allow: mapList(r.Resources.Allow, strings.TrimSpace), Deny: mapList(r.Resources.Deny, strings.TrimSpace)},
		Skills:    Globs{Allow: mapList(r.Skills.Allow, strings.TrimSpace), Deny: mapList(r.Skills.Deny, strings.TrimSpace)}}
}

// trimLocal trims a server's own patterns; they are otherwise kept as
// written, since they match bare names literally.
func trimLocal(r Rules) Rules {
	t := strings.TrimSpace
	return Rules{Allow: mapList(r.Allow, t), Deny: mapList(r.Deny, t), Ask: mapList(r.Ask, t),
		Prompts:   Globs{Allow: mapList(r.Prompts.Allow, t), Deny: mapList(r.Prompts.Deny, t)},
		Resources: Globs{Allow: mapList(r.Resources.Allow, t), Deny: mapList(r.Resources.Deny, t)},
		Skills:    Globs{Allow: mapList(r.Skills.Allow, t), Deny: mapList(r.Skills.Deny, t)}}
}

// ownPrefixes are the qualified prefixes by which a server's own pattern
// may name its server.
func ownPrefixes(server string) []string {
	return []string{server + catalog.IDSeparator, "mcp__" + server + catalog.WireSeparator, server + catalog.WireSeparator}
}

// matchLocal matches a server's own pattern against one of its bare names:
// literally, or, when the pattern starts with the server's own qualified
// prefix, the rest of it.
func matchLocal(server, pat, name string) bool {
	if Match(pat, name) {
		return true
	}
	for _, pre := range ownPrefixes(server) {
		if rest, ok := strings.CutPrefix(pat, pre); ok && Match(rest, name) {
			return true
		}
	}
	return false
}

// Decide returns the verdict for the tool name of the server.
func (p *Policy) Decide(server, tool string) Verdict {
	if p.Empty() {
		return Verdict{Decision: Allow}
	}
	id := server + catalog.IDSeparator + tool
	local, hasLocal := p.servers[server]
	inLocal := func(pat string) bool { return matchLocal(server, pat, tool) }
	inGlobal := func(pat string) bool { return Match(pat, id) }
	for _, pat := range p.global.Deny {
		if inGlobal(pat) {
			return Verdict{Decision: Deny, Rule: "deny " + pat}
		}
	}
	if hasLocal {
		for _, pat := range local.Deny {
			if inLocal(pat) {
				return Verdict{Decision: Deny, Rule: "server " + server + ": deny " + pat}
			}
		}
	}
	if len(p.global.Allow) > 0 && !anyMatch(p.global.Allow, inGlobal) {
		return Verdict{Decision: Deny, Rule: "not allowed by the global allow list"}
	}
	if hasLocal && len(local.Allow) > 0 && !anyMatch(local.Allow, inLocal) {
		return Verdict{Decision: Deny, Rule: "not allowed by server " + server + "'s allow list"}
	}
	for _, pat := range p.global.Ask {
		if inGlobal(pat) {
			return Verdict{Decision: Ask, Rule: "ask " + pat}
		}
	}
	if hasLocal {
		for _, pat := range local.Ask {
			if inLocal(pat) {
				return Verdict{Decision: Ask, Rule: "server " + server + ": ask " + pat}
			}
		}
	}
	return Verdict{Decision: Allow}
}

// Visible reports whether the tool is not denied. It fits
// search.Request.Visible.
func (p *Policy) Visible(t *catalog.Tool) bool {
	return p.Decide(t.Server, t.Name).Decision != Deny
}

// DecidePrompt returns the verdict (Allow or Deny) for a server's prompt.
func (p *Policy) DecidePrompt(server, prompt string) Verdict {
	return p.decideItem("prompt", server, prompt, func(r Rules) Globs { return r.Prompts })
}

// DecideResource returns the verdict (Allow or Deny) for a server's
// resource URI or resource template.
func (p *Policy) DecideResource(server, uri string) Verdict {
	return p.decideItem("resource", server, uri, func(r Rules) Globs { return r.Resources })
}

// DecideSkill returns the verdict (Allow or Deny) for a server's skill, by
// its path (the skill URI without scheme and /SKILL.md).
func (p *Policy) DecideSkill(server, path string) Verdict {
	return p.decideItem("skill", server, path, func(r Rules) Globs { return r.Skills })
}

// decideItem decides a prompt or a resource: deny patterns, then allow
// lists, then whether the server's tools are all denied.
func (p *Policy) decideItem(kind, server, name string, globs func(Rules) Globs) Verdict {
	if p.Empty() {
		return Verdict{Decision: Allow}
	}
	id := server + catalog.IDSeparator + name
	global := globs(p.global)
	local, hasLocal := p.servers[server]
	own := globs(local)
	inLocal := func(pat string) bool { return matchLocal(server, pat, name) }
	inGlobal := func(pat string) bool { return Match(pat, id) }
	for _, pat := range global.Deny {
		if inGlobal(pat) {
			return Verdict{Decision: Deny, Rule: kind + "s: deny " + pat}
		}
	}
	for _, pat := range own.Deny {
		if hasLocal && inLocal(pat) {
			return Verdict{Decision: Deny, Rule: "server " + server + ": " + kind + "s: deny " + pat}
		}
	}
	allowed := false
	if len(global.Allow) > 0 {
		if !anyMatch(global.Allow, inGlobal) {
			return Verdict{Decision: Deny, Rule: "not allowed by the global " + kind + " allow list"}
		}
		allowed = true
	}
	if hasLocal && len(own.Allow) > 0 {
		if !anyMatch(own.Allow, inLocal) {
			return Verdict{Decision: Deny, Rule: "not allowed by server " + server + "'s " + kind + " allow list"}
		}
		allowed = true
	}
	if !allowed {
		if rule, closed := p.toolsClosed(server); closed {
			return Verdict{Decision: Deny, Rule: fmt.Sprintf("every tool of server %s is denied (%s), and so are its %ss unless a %s allow pattern names them",
				server, rule, kind, kind)}
		}
	}
	return Verdict{Decision: Allow}
}

// ToolsClosed reports whether the rules deny every tool the server could
// list, whatever its name, and names the rule that does.
func (p *Policy) ToolsClosed(server string) (rule string, closed bool) {
	if p.Empty() {
		return "", false
	}
	return p.toolsClosed(server)
}

func (p *Policy) toolsClosed(server string) (string, bool) {
	prefix := server + catalog.IDSeparator
	for _, pat := range p.global.Deny {
		if matchesEveryExtension(pat, prefix) {
			return "deny " + pat, true
		}
	}
	if local, ok := p.servers[server]; ok {
		for _, pat := range local.Deny {
			if matchesEveryExtension(pat, "") {
				return "server " + server + ": deny " + pat, true
			}
			for _, pre := range ownPrefixes(server) {
				if rest, ok := strings.CutPrefix(pat, pre); ok && matchesEveryExtension(rest, "") {
					return "server " + server + ": deny " + pat, true
				}
			}
		}
	}
	if len(p.global.Allow) > 0 && !anyMatch(p.global.Allow, func(pat string) bool { return canMatchExtension(pat, prefix) }) {
		return "the global allow list names none of its tools", true
	}
	return "", false
}

func anyMatch(pats []string, f func(string) bool) bool {
	for _, p := range pats {
		if f(p) {
			return true
		}
	}
	return false
}

// Match reports whether name matches the glob pattern ("*" any run, "?" one
// character). It runs in O(len(pattern)·len(name)) at worst.
func Match(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			// Before the literal test: a "*" in the name is not a
			// literal match for the pattern's star.
			star, mark = p, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// statesAfter returns the positions in pattern a glob matcher can be at
// after reading prefix: states[i] is true when pattern[:i] can match
// prefix. It runs in O(len(pattern)·len(prefix)).
func statesAfter(pattern, prefix string) []bool {
	cur := make([]bool, len(pattern)+1)
	cur[0] = true
	closeStars(pattern, cur)
	next := make([]bool, len(pattern)+1)
	for i := 0; i < len(prefix); i++ {
		clear(next)
		any := false
		for pos, on := range cur {
			if !on || pos == len(pattern) {
				continue
			}
			switch c := pattern[pos]; {
			case c == '*':
				next[pos] = true
				any = true
			case c == '?' || c == prefix[i]:
				next[pos+1] = true
				any = true
			}
		}
		if !any {
			return nil
		}
		closeStars(pattern, next)
		cur, next = next, cur
	}
	return cur
}

// closeStars adds the positions reached by letting stars match nothing.
func closeStars(pattern string, states []bool) {
	for pos := 0; pos < len(pattern); pos++ {
		if states[pos] && pattern[pos] == '*' {
			states[pos+1] = true
		}
	}
}

// matchesEveryExtension reports whether pattern matches prefix+s for every
// non-empty s.
func matchesEveryExtension(pattern, prefix string) bool {
	states := statesAfter(pattern, prefix)
	for pos, on := range states {
		if on && pos < len(pattern) && strings.Trim(pattern[pos:], "*") == "" {
			return true
		}
	}
	return false
}

// canMatchExtension reports whether pattern matches prefix+s for some
// non-empty s.
func canMatchExtension(pattern, prefix string) bool {
	for pos, on := range statesAfter(pattern, prefix) {
		if on && pos < len(pattern) {
			return true
		}
	}
	return false
}
