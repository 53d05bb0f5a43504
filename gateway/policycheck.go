package gateway

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/gateway/builtin"
)

// PolicyWarnings lists the policy's mistakes: the patterns that can match
// nothing whatever the servers list (a server that is not configured, a
// name no tool can have), then the tool patterns that match none of the
// tools known now, each with the nearest name when it looks like a typo.
// A pattern naming a server whose tools are not known yet (not started,
// failed with no cached manifest) is not judged by the second test.
func (g *Gateway) PolicyWarnings() []policy.Warning {
	static, unmatched := g.policyWarnings()
	return append(static, unmatched...)
}

// policyWarnings returns the warnings of the policy as written, then those
// of the tools known now.
func (g *Gateway) policyWarnings() (static, unmatched []policy.Warning) {
	pol := g.policy()
	enabled := g.policyKeys(g.keys())
	all := slices.Clone(enabled)
	for _, s := range g.cfg.Servers {
		if s.Disabled {
			all = append(all, s.Key) // configured, though not started
		}
	}
	listed := map[string][]string{builtin.Key: builtin.Names()}
	for _, s := range g.Snapshot().Servers() {
		if s.Key == builtin.Key {
			continue // every built-in tool, on or not: set above
		}
		names := make([]string, 0, len(s.Tools))
		for _, t := range s.Tools {
			names = append(names, t.Name)
		}
		listed[s.Key] = names
	}
	return pol.Warnings(all), pol.Unmatched(enabled, listed)
}

// policyKeys are the server keys a policy may name: the configured ones
// and the built-in tools' own.
func (g *Gateway) policyKeys(servers []string) []string {
	return append([]string{builtin.Key}, servers...)
}

// logPolicyWarnings logs each policy warning.
func logPolicyWarnings(log *slog.Logger, ws []policy.Warning) {
	for _, w := range ws {
		log.Warn("a policy pattern can match nothing: "+w.String(), "scope", cmp.Or(w.Scope, "global"), "list", w.List, "pattern", w.Pattern)
	}
}

// warnUnmatchedPolicy waits until every server has finished its first
// start, then logs each tool pattern that matches none of the tools (the
// patterns wrong whatever is listed were logged by New).
func (g *Gateway) warnUnmatchedPolicy(ctx context.Context) {
	if g.policy().Empty() {
		return
	}
	if p := g.servers.Load(); p != nil {
		for _, k := range p.keys { // this pool's, whatever a reload does meanwhile
			select {
			case <-p.ups[k].Settled():
			case <-ctx.Done():
				return
			}
		}
	}
	_, unmatched := g.policyWarnings()
	logPolicyWarnings(g.log, unmatched)
}
