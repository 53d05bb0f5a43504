package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/core/lint"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/builtin"
)

func runLint(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("lint", "[-c CONFIG | --catalog FILE] [--hints FILE] [--server KEY] [-k 5] [--json]"+sourceHelp, stderr)
	src := addSourceFlags(fs)
	k := fs.Int("k", 5, "rank within which a tool must be found by its own description")
	asJSON := fs.Bool("json", false, "print one JSON object")
	var servers stringList
	fs.Var(&servers, "server", "only report this server `key` (repeatable); all servers still compete. "+
		"With a config, the gateway's built-in tools compete but are reported only with --server "+builtin.Key)
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch lint: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *k < 1 || *k > search.MaxMaxResults {
		fmt.Fprintf(stderr, "toolsearch lint: -k is %d; it must be between 1 and %d\n", *k, search.MaxMaxResults)
		return exitUsage
	}
	from, err := src.resolve("lint", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch lint: %v\n", err)
		return exitUsage
	}
	snap, hrep, err := src.snapshot(ctx, "lint", from, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch lint: %v\n", err)
		return exitUsage
	}
	if from.cfg != nil && len(servers) == 0 {
		// The gateway's own built-in tools compete in the searches, as
		// they do in serve, but are not the user's to fix: not reported
		// unless --server builtin asks.
		for _, srv := range snap.Servers() {
			if srv.Key != builtin.Key {
				servers = append(servers, srv.Key)
			}
		}
		if len(servers) == 0 {
			fmt.Fprintf(stderr, "toolsearch lint: the servers of %s listed no tools (the gateway's built-in tools are not linted)\n", from.configPath)
			return exitNoResult
		}
	}
	rep, err := lint.Check(ctx, snap, search.Build(snap), lint.Options{Servers: servers, K: *k})
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch lint: %v\n", err)
		return exitUsage
	}
	rep.Findings = append(rep.Findings, staleHintFindings(hrep, servers)...)
	serious := 0
	for _, f := range rep.Findings {
		if f.Severity >= lint.Warning {
			serious++
		}
	}
	if *asJSON {
		writeJSON(stdout, rep)
	} else {
		for _, f := range rep.Findings {
			fmt.Fprintf(stdout, "%-7s %s [%s] %s\n", f.Severity, f.Tool, f.Check, f.Message)
		}
		pct := 0.0
		if rep.Tools > 0 {
			pct = 100 * float64(rep.Findable) / float64(rep.Tools)
		}
		fmt.Fprintf(stdout, "\n%d tools: %d (%.0f%%) found in the top %d by their own description; %d warnings or errors.\n",
			rep.Tools, rep.Findable, pct, *k, serious)
	}
	if serious > 0 {
		return exitNoResult
	}
	return exitOK
}

// staleHintFindings reports the tools whose hints were written for an
// older definition, and so were not applied.
func staleHintFindings(rep hints.Report, servers []string) []lint.Finding {
	var out []lint.Finding
	for _, id := range rep.Stale {
		server, _, _ := strings.Cut(id, "/")
		if len(servers) > 0 && !slices.Contains(servers, server) {
			continue
		}
		out = append(out, lint.Finding{Tool: id, Check: "stale-hints", Severity: lint.Info,
			Message: "its hints were written for an older definition and are ignored; toolsearch enrich writes them again"})
	}
	return out
}
