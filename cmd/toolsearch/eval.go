package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/core/evaluate"
	"github.com/toolsearch/toolsearch/core/search"
	learnusage "github.com/toolsearch/toolsearch/core/usage"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", "--catalog FILE --queries FILE [--hints FILE] [-k 5] [--part K/N] [--learn] [--json] [--misses]", stderr)
	catPath := fs.String("catalog", "", catalogHelp)
	hintsPath := fs.String("hints", "", hintsHelp)
	qPath := fs.String("queries", "", "query `file` (JSON Lines: id, query, gold, style, category)")
	k := fs.Int("k", 5, "rank cut-off for every figure (hit@k, MRR, NDCG@k, recall@k)")
	partFlag := fs.String("part", "", "evaluate only part `K/N` of the queries: those whose id hashes (FNV-1a) to K-1 mod N")
	asJSON := fs.Bool("json", false, "print one JSON object")
	misses := fs.Bool("misses", false, "list the queries not answered at rank 1, and those the engine refused")
	learn := fs.Bool("learn", false, "simulate learning from use: per style, record the gold tools of every second query as called\n"+
		"after it, then measure the other queries with learning off and on (hit@1, hit@5, NDCG@10); -k and --misses do not apply")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch eval: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *qPath == "" {
		fmt.Fprintln(stderr, "toolsearch eval: --queries is required")
		fs.Usage()
		return exitUsage
	}
	if *k < 1 || *k > search.MaxMaxResults {
		fmt.Fprintf(stderr, "toolsearch eval: -k is %d; it must be between 1 and %d\n", *k, search.MaxMaxResults)
		return exitUsage
	}
	var part evaluate.Part
	if *partFlag != "" {
		p, err := evaluate.ParsePart(*partFlag)
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch eval: --part: %v\n", err)
			return exitUsage
		}
		part = p
	}
	snap, _, err := loadCatalog("eval", *catPath, *hintsPath, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch eval: %v\n", err)
		return exitUsage
	}
	f, err := safefile.Open(*qPath)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch eval: %v\n", err)
		return exitUsage
	}
	qs, err := evaluate.LoadQueries(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch eval: %s: %v\n", *qPath, err)
		return exitUsage
	}
	if all := len(qs); part.N > 0 {
		if qs = part.Select(qs); len(qs) == 0 {
			fmt.Fprintf(stderr, "toolsearch eval: --part %s holds none of the %d queries of %s\n", part, all, *qPath)
			return exitUsage
		}
	}
	if *learn {
		lr, err := evaluate.SimulateLearning(ctx, search.Build(snap), qs, learnusage.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch eval: --learn: %v\n", err)
			return exitNoResult
		}
		if *asJSON {
			writeJSON(stdout, lr)
			return exitOK
		}
		if part.N > 0 {
			fmt.Fprintf(stdout, "part %s of the queries\n", part)
		}
		printLearnTable(stdout, lr)
		return exitOK
	}
	rep, err := evaluate.Run(ctx, search.Build(snap), qs, *k)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch eval: %v\n", err)
		return exitNoResult
	}
	rep.Part = part.String()
	if !*misses {
		rep.Misses = nil
	}
	if *asJSON {
		writeJSON(stdout, rep)
		return exitOK
	}
	printReport(stdout, rep, *misses)
	return exitOK
}

// printReport writes the per-style table, the per-category table when the
// queries carry categories, and the misses when asked.
func printReport(w io.Writer, rep evaluate.Report, misses bool) {
	if rep.Part != "" {
		fmt.Fprintf(w, "part %s of the queries\n", rep.Part)
	}
	printTable(w, "style", rep.ByStyle, rep.Scores, rep.K)
	if len(rep.ByCategory) > 0 {
		fmt.Fprintln(w)
		printTable(w, "category", rep.ByCategory, rep.Scores, rep.K)
	}
	if rep.Errors > 0 {
		fmt.Fprintf(w, "\n%d of %d queries were refused by the engine and score 0", rep.Errors, rep.N)
		if !misses {
			fmt.Fprint(w, " (--misses lists them)")
		}
		fmt.Fprintln(w, ".")
	}
	if !misses {
		return
	}
	fmt.Fprintln(w)
	for _, m := range rep.Misses {
		rank := "miss"
		switch {
		case m.Err != "":
			rank = "refused"
		case m.Rank > 0:
			rank = fmt.Sprintf("rank %d", m.Rank)
		}
		label := m.Style
		if m.Category != "" {
			label += ", " + m.Category
		}
		fmt.Fprintf(w, "%s [%s] %s: %q\n  gold: %s\n", m.ID, label, rank, m.Query, strings.Join(m.Gold, " "))
		if m.Err != "" {
			fmt.Fprintf(w, "  error: %s\n", m.Err)
		} else {
			fmt.Fprintf(w, "  got:  %s\n", strings.Join(m.Got, " "))
		}
	}
}

// printTable writes one row per group, sorted by name, then the row of all
// queries.
func printTable(w io.Writer, by string, groups map[string]evaluate.Scores, all evaluate.Scores, k int) {
	names := make([]string, 0, len(groups))
	width := max(len(by), len("all"))
	for name := range groups {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-*s %5s %6s %7s %7s %7s %7s %7s\n", width, by, "n", "errors", "hit@1",
		fmt.Sprintf("hit@%d", k), "MRR", fmt.Sprintf("N@%d", k), fmt.Sprintf("R@%d", k))
	row := func(name string, sc evaluate.Scores) {
		fmt.Fprintf(w, "%-*s %5d %6d %7.3f %7.3f %7.3f %7.3f %7.3f\n", width, name, sc.N, sc.Errors,
			sc.HitAt1, sc.HitAtK, sc.MRR, sc.NDCGAtK, sc.RecallAtK)
	}
	for _, name := range names {
		row(name, groups[name])
	}
	row("all", all)
}

// printLearnTable writes a learning simulation: per style, then for all
// measured queries, each figure with learning off, on, and the change.
func printLearnTable(w io.Writer, lr evaluate.LearnReport) {
	fmt.Fprintf(w, "learned from %d queries (%d entries); measured with learning off / on:\n", lr.Learned, lr.Entries)
	names := make([]string, 0, len(lr.ByStyleOff))
	width := len("style")
	for name := range lr.ByStyleOff {
		names = append(names, name)
		width = max(width, len(name))
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-*s %5s  %-21s  %-21s  %-21s\n", width, "style", "n", "hit@1 off/on (Δ)", "hit@5 off/on (Δ)", "NDCG@10 off/on (Δ)")
	cell := func(off, on float64) string { return fmt.Sprintf("%.3f/%.3f (%+.3f)", off, on, on-off) }
	row := func(name string, off, on evaluate.LearnScores) {
		fmt.Fprintf(w, "%-*s %5d  %-21s  %-21s  %-21s\n", width, name, off.N, cell(off.HitAt1, on.HitAt1),
			cell(off.HitAt5, on.HitAt5), cell(off.NDCGAt10, on.NDCGAt10))
	}
	for _, name := range names {
		row(name, lr.ByStyleOff[name], lr.ByStyleOn[name])
	}
	row("all", lr.Off, lr.On)
}
