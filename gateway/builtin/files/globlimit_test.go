package files

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

func TestBraceAlternatives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern  string
		n, depth int
	}{
		{"*.go", 1, 0},
		{"**/*.{ts,tsx,js,jsx}", 4, 1},
		{"{src,test}/**/*.{go,md}", 4, 1},
		{"{a,{b,c}}", 3, 2},
		{"{a,{b,{c,{d,e}}}}", 5, 4},
		{"{a,b}{c,d,e}", 6, 1},
		{"{a,b}/{c,{d,e}}x{f,g}", 12, 2},
		{"{}", 1, 1},
		{"{,a}", 2, 1},
		{`\{a,b}`, 1, 0},
		{`{a\,b}`, 1, 1},
		{"[{]a,b}", 1, 0},
		{"[}]{a,b}", 2, 1},
		{"a,b}", 1, 0},
		{"{a,b", 2, 1},
		{strings.Repeat("{a,b}", 7), MaxGlobAlternatives + 1, 1},
	} {
		n, depth := braceAlternatives(tc.pattern)
		if n != tc.n || depth != tc.depth {
			t.Errorf("%q: %d alternatives %d deep, want %d, %d", tc.pattern, n, depth, tc.n, tc.depth)
		}
	}
}

// TestHostileGlobs: patterns whose braces would make matching take
// seconds per path are refused at once, by glob and by grep's glob, with
// an error that names the limit.
func TestHostileGlobs(t *testing.T) {
	t.Parallel()
	r := mustRoots(t, tree(t, map[string]string{
		"a/b/c/d/e.txt": "x\n", strings.Repeat("ab", 60) + ".txt": "x\n", "aaaa/bbbb/cccc.go": "x\n",
	}))
	nested := func(n int) string { return strings.Repeat("{a,", n) + "b" + strings.Repeat("}", n) }
	for _, tc := range []struct {
		name, pattern, limit string
	}{
		{"deep nesting", nested(300), strconv.Itoa(MaxGlobBraceDepth)},
		{"nesting one too deep", nested(MaxGlobBraceDepth + 1), strconv.Itoa(MaxGlobBraceDepth)},
		{"sequence", strings.Repeat("{a,b}", 30), strconv.Itoa(MaxGlobAlternatives)},
		{"stars", strings.Repeat("{**/*,*}", 12) + "c", strconv.Itoa(MaxGlobAlternatives)},
		{"wide", "{" + strings.Repeat("*a,", 200) + "b}", strconv.Itoa(MaxGlobAlternatives)},
		{"long", strings.Repeat("*a", 600), strconv.Itoa(MaxGlobPatternBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for tool, call := range map[string]func() error{
				"glob": func() error { _, err := Glob(context.Background(), r, GlobArgs{Pattern: tc.pattern}); return err },
				"grep": func() error {
					_, err := Grep(context.Background(), r, GrepArgs{Pattern: "x", Glob: tc.pattern})
					return err
				},
			} {
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- call() }()
				select {
				case err := <-done:
					if !errors.Is(err, ErrGlobTooComplex) || !strings.Contains(err.Error(), tc.limit) {
						t.Fatalf("%s: err = %v; want the limit %s named", tool, err, tc.limit)
					}
					if d := time.Since(start); d > time.Second {
						t.Errorf("%s: the error took %v", tool, d)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: no answer after 5s", tool)
				}
			}
		})
	}
	// Patterns at the limits still work.
	for _, p := range []string{nested(MaxGlobBraceDepth) + "/**", strings.Repeat("{a,b}", 6) + "*", "**/*.{txt,go}"} {
		if _, err := Glob(context.Background(), r, GlobArgs{Pattern: p}); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

// expandBraces expands a pattern's braces by rewriting it, the plain way:
// a reference for braceAlternatives on patterns without "\" or "[".
func expandBraces(p string, budget *int) []string {
	open := strings.IndexByte(p, '{')
	if open < 0 || *budget <= 0 {
		return []string{p}
	}
	depth, alts, start, end := 0, []string(nil), open+1, -1
	for i := open; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				alts, end = append(alts, p[start:i]), i
			}
		case ',':
			if depth == 1 {
				alts, start = append(alts, p[start:i]), i+1
			}
		}
	}
	if end < 0 {
		return []string{p}
	}
	var out []string
	for _, a := range alts {
		*budget--
		out = append(out, expandBraces(p[:open]+a+p[end+1:], budget)...)
	}
	return out
}

func FuzzCheckGlob(f *testing.F) {
	for _, s := range []string{"*.go", "{a,b}{c,d}", "{a,{b,c}}", `\{a}`, "[{]", "{a,b", "a}b,c", "{{{{{x}}}}}", "{,}{,}{,}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		err := checkGlob(pattern)
		n, depth := braceAlternatives(pattern)
		if err == nil && (n > MaxGlobAlternatives || depth > MaxGlobBraceDepth || len(pattern) > MaxGlobPatternBytes) {
			t.Fatalf("%q accepted with %d alternatives %d deep", pattern, n, depth)
		}
		if err != nil && !errors.Is(err, ErrGlobTooComplex) {
			t.Fatalf("%q: %v", pattern, err)
		}
		if strings.ContainsAny(pattern, `\[`) || len(pattern) > 64 || !doublestar.ValidatePattern(pattern) {
			return
		}
		budget := 1000
		if want := len(expandBraces(pattern, &budget)); budget > 0 && min(want, MaxGlobAlternatives+1) != n {
			t.Fatalf("%q: counted %d alternatives, expansion gives %d", pattern, n, want)
		}
	})
}
