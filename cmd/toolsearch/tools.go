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
	// Skills are what the config's servers serve as skills, absent when
	// none does.
	Skills *skillsReport `json:"skills,omitempty"`
}

// skillsReport is the skills of a config's servers, as clients of serve
// see them: listed by skills/list, their files read only when used.
type skillsReport struct {
	Servers []serverSkills `json:"servers"`
	Skills  int            `json:"skills"`
	// Tokens is the o200k size of every entry as skills/list serves it;
	// FirstListTokens what a client's first skills/list page costs.
	Tokens          int `json:"tokens"`
	FirstListTokens int `json:"first_list_tokens"`
	// FileBytes is the size of their files by the manifests: what stays
	// out of the model's context until a skill is used.
	FileBytes int64 `json:"file_bytes"`
	// List is every skill, servers in key order.
	List []skillRow `json:"list"`
}

// serverSkills is one server's row of the skills report.
type serverSkills struct {
	Server    string `json:"server"`
	Skills    int    `json:"skills"`
	Tokens    int    `json:"tokens"`
	FileBytes int64  `json:"file_bytes"`
}

// skillRow is one skill: the kind "skill" beside the tools.
type skillRow struct {
	Kind        string `json:"kind"`
	URI         string `json:"uri"`
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Tokens      int    `json:"tokens"`
	Files       int    `json:"files"`
	FileBytes   int64  `json:"file_bytes"`
	Dynamic     bool   `json:"dynamic,omitempty"`
}

// skillReport builds the skills report, nil when no server serves skills.
func skillReport(cs configSkills) *skillsReport {
	if len(cs.stats.Servers) == 0 {
		return nil
	}
	rep := &skillsReport{Skills: cs.stats.Skills, Tokens: cs.stats.Tokens, FirstListTokens: cs.stats.ListTokens,
		FileBytes: cs.stats.FileBytes, Servers: []serverSkills{}, List: []skillRow{}}
	for _, s := range cs.stats.Servers {
		rep.Servers = append(rep.Servers, serverSkills{Server: s.Server, Skills: s.Skills, Tokens: s.Tokens, FileBytes: s.FileBytes})
	}
	for _, r := range cs.refs {
		rep.List = append(rep.List, skillRow{Kind: "skill", URI: r.URI, Server: r.Server, Name: r.Entry.Name,
			Description: firstLine(r.Entry.Description, 160), Tokens: r.Tokens(), Files: len(r.Entry.Files), FileBytes: r.Bytes(), Dynamic: r.Entry.Dynamic})
	}
	return rep
}

// printSkillReport writes the skills report after the tools'.
func printSkillReport(w io.Writer, rep *skillsReport) {
	fmt.Fprintf(w, "\n%-28s %6s %10s %12s\n", "SERVER", "SKILLS", "TOKENS", "FILE BYTES")
	for _, s := range rep.Servers {
		fmt.Fprintf(w, "%-28s %6d %10d %12d\n", s.Server, s.Skills, s.Tokens, s.FileBytes)
	}
	fmt.Fprintf(w, "%-28s %6d %10d %12d\n", "total", rep.Skills, rep.Tokens, rep.FileBytes)
	fmt.Fprintf(w, "\nKIND   %-48s %8s %6s %10s\n", "SKILL", "TOKENS", "FILES", "BYTES")
	for _, r := range rep.List {
		files := fmt.Sprint(r.Files)
		if r.Dynamic {
			files = "dyn."
		}
		fmt.Fprintf(w, "skill  %-48s %8d %6s %10d\n", r.URI, r.Tokens, files, r.FileBytes)
	}
	fmt.Fprintf(w, "\nSkills are listed by skills/list, entries only: a client's first skills/list costs %d tokens (o200k); "+
		"their files (%d bytes) reach the model only when a skill is read.\n", rep.FirstListTokens, rep.FileBytes)
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
	rep.Skills = skillReport(src.skills)
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
	if rep.Skills != nil {
		printSkillReport(stdout, rep.Skills)
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
