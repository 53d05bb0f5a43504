package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// serverTokens is one row of the tools report.
type serverTokens struct {
	Server string `json:"server"`
	Tools  int    `json:"tools"`
	// Tokens is the o200k size of the server's definitions sent up front.
	Tokens int `json:"tokens"`
	// ClaudeTokens estimates the same for Claude models.
	ClaudeTokens int `json:"claude_tokens"`
	// Share is Tokens over the catalog's total.
	Share float64 `json:"share"`
	// AlwaysLoaded counts tools that are never deferred.
	AlwaysLoaded int `json:"always_loaded"`
	// Hinted counts the tools with search hints (--hints, _meta's
	// searchHint counts too).
	Hinted int `json:"hinted"`
	// DeferSaves is what deferring the server's tools saves per request:
	// their definitions, less the names that announce them to the model.
	DeferSaves int `json:"defer_saves"`
}

type toolsReport struct {
	Servers      []serverTokens `json:"servers"`
	Tools        int            `json:"tools"`
	Tokens       int            `json:"tokens"`
	ClaudeTokens int            `json:"claude_tokens"`
	DeferSaves   int            `json:"defer_saves"`
	Hinted       int            `json:"hinted"`
}

func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tools", "[-c CONFIG | --catalog FILE] [--hints FILE] [--json]"+sourceHelp, stderr)
	src := addSourceFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch tools: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	snap, _, err := src.load(ctx, "tools", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch tools: %v\n", err)
		return exitUsage
	}
	rep := tokenReport(snap)
	if *asJSON {
		writeJSON(stdout, rep)
		return exitOK
	}
	fmt.Fprintf(stdout, "%-28s %6s %10s %7s %10s\n", "SERVER", "TOOLS", "TOKENS", "SHARE", "DEFER SAVES")
	for _, r := range rep.Servers {
		name := r.Server
		if r.AlwaysLoaded > 0 {
			name += fmt.Sprintf(" (%d pinned)", r.AlwaysLoaded)
		}
		fmt.Fprintf(stdout, "%-28s %6d %10d %6.1f%% %10d\n", name, r.Tools, r.Tokens, 100*r.Share, r.DeferSaves)
	}
	fmt.Fprintf(stdout, "%-28s %6d %10d %6.1f%% %10d\n", "total", rep.Tools, rep.Tokens, 100.0, rep.DeferSaves)
	fmt.Fprintf(stdout, "\nTokens are o200k counts of each definition {name, description, input_schema}; Claude models count about %.0f%% more (≈%d in all).\n",
		100*(catalog.ClaudeTokenFactor-1), rep.ClaudeTokens)
	if rep.Hinted > 0 {
		fmt.Fprintf(stdout, "%d of %d tools have search hints (hints are indexed, never sent to the model).\n", rep.Hinted, rep.Tools)
	}
	return exitOK
}

// tokenReport sizes every server's definitions, largest first.
func tokenReport(snap *catalog.Snapshot) toolsReport {
	var rep toolsReport
	for _, srv := range snap.Servers() {
		r := serverTokens{Server: srv.Key, Tools: len(srv.Tools)}
		var names strings.Builder
		for _, t := range srv.Tools {
			n := t.Tokens()
			r.Tokens += n
			if len(t.Hints) > 0 || t.SearchHint != "" {
				r.Hinted++
			}
			if t.AlwaysLoad {
				r.AlwaysLoaded++
				continue
			}
			r.DeferSaves += n
			names.WriteString(t.WireName())
			names.WriteByte('\n')
		}
		if names.Len() > 0 {
			r.DeferSaves -= catalog.CountTokens(names.String())
		}
		r.DeferSaves = max(r.DeferSaves, 0)
		r.ClaudeTokens = catalog.ClaudeTokens(r.Tokens)
		rep.Servers = append(rep.Servers, r)
		rep.Tools += r.Tools
		rep.Tokens += r.Tokens
		rep.ClaudeTokens += r.ClaudeTokens
		rep.DeferSaves += r.DeferSaves
		rep.Hinted += r.Hinted
	}
	for i := range rep.Servers {
		if rep.Tokens > 0 {
			rep.Servers[i].Share = float64(rep.Servers[i].Tokens) / float64(rep.Tokens)
		}
	}
	sort.SliceStable(rep.Servers, func(i, j int) bool { return rep.Servers[i].Tokens > rep.Servers[j].Tokens })
	return rep
}
