package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/evaluate"
	"github.com/toolsearch/toolsearch/internal/safefile"
	"github.com/toolsearch/toolsearch/search"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", "--catalog FILE --queries FILE [-k 5] [--json] [--misses]", stderr)
	catPath := fs.String("catalog", "", catalogHelp)
	qPath := fs.String("queries", "", "query `file` (JSON Lines: id, query, gold, style)")
	k := fs.Int("k", 5, "rank cut-off for hit@k and MRR")
	asJSON := fs.Bool("json", false, "print one JSON object")
	misses := fs.Bool("misses", false, "list the queries not answered at rank 1")
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
	snap, err := loadSnapshot(*catPath)
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
	rep, err := evaluate.Run(ctx, search.Build(snap), qs, *k)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch eval: %v\n", err)
		return exitNoResult
	}
	if !*misses {
		rep.Misses = nil
	}
	if *asJSON {
		writeJSON(stdout, rep)
		return exitOK
	}
	fmt.Fprintf(stdout, "%-10s %5s %7s %7s %7s\n", "style", "n", "hit@1", fmt.Sprintf("hit@%d", *k), "MRR")
	styles := make([]string, 0, len(rep.ByStyle))
	for s := range rep.ByStyle {
		styles = append(styles, s)
	}
	sort.Strings(styles)
	for _, s := range styles {
		sc := rep.ByStyle[s]
		fmt.Fprintf(stdout, "%-10s %5d %7.3f %7.3f %7.3f\n", s, sc.N, sc.HitAt1, sc.HitAtK, sc.MRR)
	}
	fmt.Fprintf(stdout, "%-10s %5d %7.3f %7.3f %7.3f\n", "all", rep.N, rep.HitAt1, rep.HitAtK, rep.MRR)
	if *misses {
		fmt.Fprintln(stdout)
		for _, m := range rep.Misses {
			rank := "miss"
			if m.Rank > 0 {
				rank = fmt.Sprintf("rank %d", m.Rank)
			}
			fmt.Fprintf(stdout, "%s [%s] %s: %q\n  gold: %s\n  got:  %s\n", m.ID, m.Style, rank, m.Query,
				strings.Join(m.Gold, " "), strings.Join(m.Got, " "))
			if m.Err != "" {
				fmt.Fprintf(stdout, "  error: %s\n", m.Err)
			}
		}
	}
	return exitOK
}
