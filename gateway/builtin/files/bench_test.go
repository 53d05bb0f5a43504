package files

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchPatterns are the patterns compared with ripgrep: literals, regexes
// with a literal, case-insensitive, and one with no literal at all.
var benchPatterns = []struct {
	name    string
	pattern string
	fold    bool
	mode    string
}{
	{"literal", "func main", false, ModeFiles},
	{"regex_with_literal", `func \w+Handler\(`, false, ModeFiles},
	{"case_insensitive", "deadline exceeded", true, ModeFiles},
	{"content_mode", `errors\.New\("`, false, ModeContent},
	{"no_match", "zqxjkvbw", false, ModeFiles},
	{"count", `TODO`, false, ModeCount},
	{"no_literal", `[A-Z]{3}[0-9]{2}`, false, ModeFiles},
}

// benchTree is the tree to search: $TOOLSEARCH_GREP_BENCH_DIR, else the Go
// distribution's source (about 11,000 files, 150 MB).
func benchTree(tb testing.TB) string {
	if d := os.Getenv("TOOLSEARCH_GREP_BENCH_DIR"); d != "" {
		return d
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skip("no tree to search: set TOOLSEARCH_GREP_BENCH_DIR")
	}
	return strings.TrimSpace(string(out)) + "/src"
}

func rgArgs(pattern string, fold bool, mode, dir string) []string {
	// Same work as ours: hidden files searched, .gitignore honoured with or
	// without a .git folder, one line per match.
	args := []string{"--hidden", "--no-require-git", "--no-config"}
	switch mode {
	case ModeFiles:
		args = append(args, "-l")
	case ModeCount:
		args = append(args, "-c")
	default:
		args = append(args, "-n")
	}
	if fold {
		args = append(args, "-i")
	}
	return append(args, "-e", pattern, dir)
}

// BenchmarkGrepVsRipgrep times our grep and rg on the same tree and
// patterns, alternating runs, and reports the ratio of the medians
// (ours / rg). Run it with:
//
//	go test ./gateway/builtin/files/ -run '^$' -bench GrepVsRipgrep -benchtime 1x
func BenchmarkGrepVsRipgrep(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("ripgrep (rg) is not installed: apt-get install -y ripgrep")
	}
	dir := benchTree(b)
	roots, err := NewRoots([]string{dir})
	if err != nil {
		b.Skip(err)
	}
	const rounds = 7
	for _, p := range benchPatterns {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				var ours, theirs []time.Duration
				files := 0
				for range rounds {
					start := time.Now()
					res, err := Grep(context.Background(), roots, GrepArgs{Pattern: p.pattern, CaseInsensitive: p.fold, OutputMode: p.mode, HeadLimit: MaxHeadLimit})
					if err != nil {
						b.Fatal(err)
					}
					ours = append(ours, time.Since(start))
					files = len(res.Files)
					start = time.Now()
					out, err := exec.Command(rg, rgArgs(p.pattern, p.fold, p.mode, dir)...).Output()
					if err != nil && len(out) > 0 {
						b.Fatal(err)
					}
					theirs = append(theirs, time.Since(start))
				}
				slices.Sort(ours)
				slices.Sort(theirs)
				o, r := ours[rounds/2], theirs[rounds/2]
				b.ReportMetric(float64(o.Microseconds())/1000, "ours-ms")
				b.ReportMetric(float64(r.Microseconds())/1000, "rg-ms")
				b.ReportMetric(float64(o)/float64(r), "ratio")
				b.Logf("%-20s %-26q ours %7.1fms  rg %7.1fms  ratio %.2f  (%d files, GOMAXPROCS %d)", p.name, p.pattern,
					float64(o.Microseconds())/1000, float64(r.Microseconds())/1000, float64(o)/float64(r), files, runtime.GOMAXPROCS(0))
			}
		})
	}
}
