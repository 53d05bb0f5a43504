// Package policy decides, for every tool, whether it is invisible (denied),
// callable (allowed) or callable only after the user agrees (ask).
//
// Rules are globs over qualified tool names. A global pattern is matched
// against "server/tool" (the forms "server__tool" and "mcp__server__tool" are
// read as the same name); a server's own pattern is matched against the bare
// tool name, or against the qualified name when it names the server. In a
// glob, "*" matches any run of characters (including "/") and "?" one
// character; every other character matches itself, case-sensitively.
//
// Deny wins: a tool that any deny pattern matches is denied. When an allow
// list is given (globally, for the server, or both), a tool must match each
// given list, otherwise it is denied too. A visible tool that an ask pattern
// matches is "ask". A denied tool is invisible everywhere: the gateway hides
// it from every listing and search and refuses every call to it.
//
// The package imports no transport or SDK.
package policy

import (
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/catalog"
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

// Rules are one scope's allow, deny and ask globs.
type Rules struct {
	Allow, Deny, Ask []string
}

func (r Rules) empty() bool { return len(r.Allow)+len(r.Deny)+len(r.Ask) == 0 }

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
	case v.Decision == Deny && strings.HasPrefix(v.Rule, "not allowed"):
		return v.Rule
	}
	return "matched " + v.Rule
}

// Policy is a compiled set of rules. The zero value and nil allow
// everything. A Policy is immutable and safe for concurrent use.
type Policy struct {
	global  Rules
	servers map[string]Rules
}

// New compiles the global rules and each server's rules. It refuses empty
// patterns.
func New(global Rules, servers map[string]Rules) (*Policy, error) {
	check := func(scope string, r Rules) error {
		for _, l := range [][]string{r.Allow, r.Deny, r.Ask} {
			for _, p := range l {
				if strings.TrimSpace(p) == "" {
					return fmt.Errorf("policy %s: empty pattern", scope)
				}
			}
		}
		return nil
	}
	if err := check("(global)", global); err != nil {
		return nil, err
	}
	p := &Policy{global: normalise(global), servers: map[string]Rules{}}
	for k, r := range servers {
		if err := check("of server "+k, r); err != nil {
			return nil, err
		}
		if !r.empty() {
			p.servers[k] = normalise(r)
		}
	}
	return p, nil
}

// Empty reports whether the policy has no rule at all.
func (p *Policy) Empty() bool {
	return p == nil || (p.global.empty() && len(p.servers) == 0)
}

// normalise rewrites "mcp__s__t" and "s__t" patterns as "s/t".
func normalise(r Rules) Rules {
	f := func(l []string) []string {
		out := make([]string, len(l))
		for i, s := range l {
			s = strings.TrimSpace(s)
			s = strings.TrimPrefix(s, "mcp__")
			if !strings.Contains(s, catalog.IDSeparator) {
				s = strings.Replace(s, catalog.WireSeparator, catalog.IDSeparator, 1)
			}
			out[i] = s
		}
		return out
	}
	return Rules{Allow: f(r.Allow), Deny: f(r.Deny), Ask: f(r.Ask)}
}

// Decide returns the verdict for the tool name of the server.
func (p *Policy) Decide(server, tool string) Verdict {
	if p.Empty() {
		return Verdict{Decision: Allow}
	}
	id := server + catalog.IDSeparator + tool
	local, hasLocal := p.servers[server]
	matchLocal := func(pat string) bool {
		if strings.Contains(pat, catalog.IDSeparator) {
			return Match(pat, id)
		}
		return Match(pat, tool)
	}
	for _, pat := range p.global.Deny {
		if Match(pat, id) {
			return Verdict{Decision: Deny, Rule: "deny " + pat}
		}
	}
	if hasLocal {
		for _, pat := range local.Deny {
			if matchLocal(pat) {
				return Verdict{Decision: Deny, Rule: "server " + server + ": deny " + pat}
			}
		}
	}
	if len(p.global.Allow) > 0 && !anyMatch(p.global.Allow, func(pat string) bool { return Match(pat, id) }) {
		return Verdict{Decision: Deny, Rule: "not allowed by the global allow list"}
	}
	if hasLocal && len(local.Allow) > 0 && !anyMatch(local.Allow, matchLocal) {
		return Verdict{Decision: Deny, Rule: "not allowed by server " + server + "'s allow list"}
	}
	for _, pat := range p.global.Ask {
		if Match(pat, id) {
			return Verdict{Decision: Ask, Rule: "ask " + pat}
		}
	}
	if hasLocal {
		for _, pat := range local.Ask {
			if matchLocal(pat) {
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
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
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
