package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/skills"
)

// demoCatalog names the embedded demo catalog where a catalog file is
// expected (--catalog demo); a file of that name is ./demo.
const demoCatalog = "demo"

// loadSnapshot reads the catalog file, or returns the embedded demo catalog
// when path is empty or demoCatalog.
func loadSnapshot(path string) (*catalog.Snapshot, error) {
	if path == "" || path == demoCatalog {
		return demo.Snapshot(), nil
	}
	return catalog.LoadFile(path)
}

const catalogHelp = "catalog `file` (collected or plain format); the embedded demo catalog when empty or " + demoCatalog

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("search", "[-c CONFIG | --catalog FILE] [flags] QUERY"+sourceHelp, stderr)
	src := addSourceFlags(fs)
	modeName := fs.String("mode", "auto", "how to read the query: auto, keyword or regex")
	n := fs.Int("n", search.DefaultMaxResults, fmt.Sprintf("maximum results (1 to %d)", search.MaxMaxResults))
	explain := fs.Bool("explain", false, "show the score and what matched for each hit")
	minScore := fs.Float64("min-score", 0, "drop keyword hits scoring below `F` (--explain shows scores); 0 lists the n best that match")
	asJSON := fs.Bool("json", false, "print one JSON object")
	kind := fs.String("kind", kindBoth, "what to find: tools, skills (those the config's servers serve) or both; with both, -n is shared: a tool, then a skill, in turn")
	var servers stringList
	fs.Var(&servers, "server", "only search this server `key` (repeatable)")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "toolsearch search: a QUERY is required")
		fs.Usage()
		return exitUsage
	}
	if *n < 1 || *n > search.MaxMaxResults {
		fmt.Fprintf(stderr, "toolsearch search: -n is %d; it must be between 1 and %d\n", *n, search.MaxMaxResults)
		return exitUsage
	}
	if math.IsNaN(*minScore) || math.IsInf(*minScore, 0) || *minScore < 0 {
		fmt.Fprintf(stderr, "toolsearch search: --min-score is %v; it must be a number of at least 0\n", *minScore)
		return exitUsage
	}
	switch *kind {
	case kindTools, kindSkills, kindBoth:
	default:
		fmt.Fprintf(stderr, "toolsearch search: --kind is %q; it is %s, %s or %s\n", *kind, kindTools, kindSkills, kindBoth)
		return exitUsage
	}
	mode, err := search.ParseMode(*modeName)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch search: %v\n", err)
		return exitUsage
	}
	snap, _, err := src.load(ctx, "search", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch search: %v\n", err)
		return exitUsage
	}
	query := strings.Join(pos, " ")
	req := search.Request{Query: query, Mode: mode, MaxResults: *n, Servers: servers, MinScore: *minScore, Explain: *explain || *asJSON}
	var res search.Result
	if *kind != kindSkills {
		res, err = search.Build(snap).Search(ctx, req)
		if err != nil {
			return searchFailed(stderr, err)
		}
	}
	var found []skills.Hit
	if *kind != kindTools {
		if len(src.skills.refs) == 0 && *kind == kindSkills {
			fmt.Fprintln(stderr, "toolsearch search: no server of the source serves skills (skills come from a config's servers, never from a catalog file)")
		}
		ix, err := skills.NewIndex(src.skills.refs)
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch search: %v\n", err)
		}
		found, err = ix.Search(ctx, []string{query}, req)
		if err != nil {
			return searchFailed(stderr, err)
		}
		if *kind == kindBoth {
			nt, ns := skills.Share(len(res.Hits), len(found), *n)
			res.Hits, found = res.Hits[:nt], found[:ns]
		}
	}
	if *asJSON {
		out := searchJSON(query, res)
		out.Kind = *kind
		for _, h := range found {
			out.Skills = append(out.Skills, skillHitJSON{URI: h.URI, Server: h.Server, Name: h.Entry.Name, Description: h.Entry.Description, Score: h.Score, Why: h.Why})
		}
		writeJSON(stdout, out)
	} else {
		if *kind != kindSkills {
			shownMax := *n
			if len(found) > 0 {
				shownMax = len(res.Hits) // -n was shared with the skills: a larger one shows more
			}
			printResult(stdout, query, res, shownMax, *minScore, *explain)
		}
		printSkills(stdout, query, found, len(res.Hits), *kind, *explain)
	}
	if len(res.Hits) == 0 && len(found) == 0 {
		return exitNoResult
	}
	return exitOK
}

// What search finds (--kind).
const (
	kindTools  = "tools"
	kindSkills = "skills"
	kindBoth   = "both"
)

// searchFailed reports a search's error and returns the exit code.
func searchFailed(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "toolsearch search: %v\n", err)
	if errors.Is(err, search.ErrBadQuery) {
		return exitUsage
	}
	return exitNoResult
}

// skillHitJSON is one skill found.
type skillHitJSON struct {
	URI         string  `json:"uri"`
	Server      string  `json:"server"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
	Why         string  `json:"why,omitempty"`
}

// printSkills lists the skills found after the tools (numbered on from
// them, shown hits counting the tools listed).
func printSkills(w io.Writer, query string, found []skills.Hit, shown int, kind string, explain bool) {
	if len(found) == 0 {
		if kind == kindSkills {
			fmt.Fprintf(w, "No skill matches %q.\n", query)
		}
		return
	}
	if kind != kindSkills {
		fmt.Fprintln(w, "Skills:")
	}
	for i, h := range found {
		fmt.Fprintf(w, "%d. %s (skill of %s)\n", shown+i+1, h.URI, h.Server)
		if d := firstLine(h.Entry.Description, 160); d != "" {
			fmt.Fprintf(w, "   %s\n", d)
		}
		if explain {
			fmt.Fprintf(w, "   score %.3f  %s\n", h.Score, h.Why)
		}
	}
}

type hitJSON struct {
	ID          string  `json:"id"`
	Server      string  `json:"server"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
	Why         string  `json:"why,omitempty"`
}

type resultJSON struct {
	Query          string    `json:"query"`
	Kind           string    `json:"kind,omitempty"`
	Form           string    `json:"form"`
	Total          int       `json:"total"`
	TotalAtLeast   bool      `json:"total_at_least,omitempty"`
	Hits           []hitJSON `json:"hits"`
	Unknown        []string  `json:"unknown,omitempty"`
	Ambiguous      []string  `json:"ambiguous,omitempty"`
	NearestServers []string  `json:"nearest_servers,omitempty"`
	// Skills are the skills found (--kind skills or both).
	Skills []skillHitJSON `json:"skills,omitempty"`
}

func searchJSON(query string, res search.Result) resultJSON {
	out := resultJSON{Query: query, Form: string(res.Form), Total: res.Total, TotalAtLeast: res.TotalAtLeast, Hits: []hitJSON{},
		Unknown: res.Unknown, Ambiguous: res.Ambiguous, NearestServers: res.NearestServers}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, hitJSON{ID: h.Tool.ID(), Server: h.Tool.Server, Name: h.Tool.Name,
			Description: h.Tool.Description, Score: h.Score, Why: h.Why})
	}
	return out
}

func printResult(w io.Writer, query string, res search.Result, n int, minScore float64, explain bool) {
	if len(res.Hits) == 0 {
		fmt.Fprintf(w, "No tool matches %q.\n", query)
		if len(res.NearestServers) > 0 {
			fmt.Fprintf(w, "Nearest servers: %s\n", strings.Join(res.NearestServers, ", "))
		}
	}
	for i, h := range res.Hits {
		fmt.Fprintf(w, "%d. %s\n", i+1, h.Tool.ID())
		if d := firstLine(h.Tool.Description, 160); d != "" {
			fmt.Fprintf(w, "   %s\n", d)
		}
		if explain {
			fmt.Fprintf(w, "   score %.3f  %s\n", h.Score, h.Why)
			if h.Breakdown != nil {
				fmt.Fprintf(w, "   %s\n", strings.ReplaceAll(h.Breakdown.String(), "\n", "\n   "))
			}
		}
	}
	if len(res.Unknown) > 0 {
		fmt.Fprintf(w, "Unknown names: %s\n", strings.Join(res.Unknown, ", "))
	}
	if len(res.Ambiguous) > 0 {
		fmt.Fprintf(w, "Names found on several servers: %s\n", strings.Join(res.Ambiguous, ", "))
	}
	if note := moreNote(res, n, minScore); note != "" {
		fmt.Fprintln(w, note)
	}
}

// moreNote says how many tools matched when not all of them are listed,
// and what would show more: a larger -n only while the list was cut by -n
// and -n is below its maximum. A list shorter than -n was cut by
// --min-score, or by the ranking itself (weights with a MinRelative drop
// the hits scoring below that share of the best), which a larger -n does
// not change.
func moreNote(res search.Result, n int, minScore float64) string {
	shown := len(res.Hits)
	if shown == 0 || res.Total <= shown {
		return ""
	}
	total := fmt.Sprint(res.Total)
	if res.TotalAtLeast {
		total = "at least " + total
	}
	var why string
	switch {
	case shown < n && minScore > 0:
		why = fmt.Sprintf("the others score below --min-score %g", minScore)
	case shown < n:
		why = "the others score too low beside the best to be listed"
	case n >= search.MaxMaxResults:
		why = fmt.Sprintf("%d is the most -n shows: add words to narrow the search", search.MaxMaxResults)
	default:
		why = fmt.Sprintf("raise -n (up to %d) to see more", search.MaxMaxResults)
	}
	return fmt.Sprintf("(%d of %s matching tools shown; %s)", shown, total, why)
}

// firstLine returns the first line of s, cut to at most max runes.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	r := []rune(s)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}
