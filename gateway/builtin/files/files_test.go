package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tree writes files (path → content) under a new folder and returns it.
// Modification times increase in the order of the paths given in order.
func tree(t testing.TB, files map[string]string, order ...string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Hour)
	for i, p := range order {
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(p)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	return real
}

func mustRoots(t testing.TB, dirs ...string) Roots {
	t.Helper()
	r, err := NewRoots(dirs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"a/b.txt": "x"})
	outside := tree(t, map[string]string{"secret.txt": "s"})
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	r := mustRoots(t, dir)
	for _, tc := range []struct {
		path    string
		want    string
		outside bool
		err     bool
	}{
		{path: "", want: dir},
		{path: "a", want: filepath.Join(dir, "a")},
		{path: "a/b.txt", want: filepath.Join(dir, "a", "b.txt")},
		{path: filepath.Join(dir, "a"), want: filepath.Join(dir, "a")},
		{path: "inside/b.txt", want: filepath.Join(dir, "a", "b.txt")},
		{path: "../", outside: true},
		{path: "a/../../x", outside: true},
		{path: "escape", outside: true},
		{path: "escape/secret.txt", outside: true},
		{path: "/etc/passwd", outside: true},
		{path: "missing", err: true},
		{path: "a\x00b", err: true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			got, err := r.Resolve(tc.path)
			switch {
			case tc.outside:
				if !errors.Is(err, ErrOutsideRoots) {
					t.Fatalf("Resolve(%q) = %q, %v; want outside", tc.path, got, err)
				}
			case tc.err:
				if err == nil {
					t.Fatalf("Resolve(%q) = %q; want an error", tc.path, got)
				}
			default:
				if err != nil || got != tc.want {
					t.Fatalf("Resolve(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
				}
			}
		})
	}
	if _, err := (Roots{}).Resolve("x"); !errors.Is(err, ErrNoRoots) {
		t.Errorf("no roots: %v", err)
	}
	if _, err := NewRoots([]string{filepath.Join(dir, "nope")}); err == nil {
		t.Error("a missing root was accepted")
	}
	if r2 := mustRoots(t, dir, filepath.Join(dir, "a"), dir); len(r2.Dirs()) != 1 {
		t.Errorf("nested roots kept: %v", r2.Dirs())
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.go": "", "util.go": "", "README.md": "", "cmd/app/app.go": "", "cmd/app/app_test.go": "",
		"web/index.ts": "", "web/app.tsx": "", "node_modules/x/index.js": "", ".gitignore": "node_modules/\n*.log\n",
		"debug.log": "", "sub/.gitignore": "!keep.log\n", "sub/keep.log": "", "sub/drop.tmp": "",
		".git/config": "", "{weird}.go": "",
	}
	dir := tree(t, files, "{weird}.go", "util.go", "main.go", "cmd/app/app_test.go", "cmd/app/app.go")
	r := mustRoots(t, dir)
	for _, tc := range []struct {
		name string
		args GlobArgs
		want []string // in order, when ordered
		more int
		set  bool // compare as sets
		err  string
	}{
		{name: "top level only", args: GlobArgs{Pattern: "*.go"}, want: []string{"{weird}.go", "main.go", "util.go"}, set: true},
		{name: "newest first", args: GlobArgs{Pattern: "**/*.go", Limit: 2}, want: []string{"cmd/app/app.go", "cmd/app/app_test.go"}, more: 3},
		{name: "start folder", args: GlobArgs{Pattern: "*_test.go", Path: "cmd/app"}, want: []string{"cmd/app/app_test.go"}},
		{name: "braces", args: GlobArgs{Pattern: "web/*.{ts,tsx}"}, want: []string{"web/app.tsx", "web/index.ts"}, set: true},
		{name: "gitignore", args: GlobArgs{Pattern: "**/*.{js,log}"}, want: []string{"sub/keep.log"}},
		{name: "include ignored", args: GlobArgs{Pattern: "**/*.{js,log}", IncludeIgnored: true}, want: []string{"debug.log", "node_modules/x/index.js", "sub/keep.log"}, set: true},
		{name: "no vcs", args: GlobArgs{Pattern: "**/config"}, want: nil},
		{name: "absolute pattern", args: GlobArgs{Pattern: filepath.Join(dir, "cmd", "**", "app.go")}, want: []string{"cmd/app/app.go"}},
		{name: "outside", args: GlobArgs{Pattern: "*", Path: ".."}, err: "outside"},
		{name: "bad pattern", args: GlobArgs{Pattern: "[a"}, err: "not a valid pattern"},
		{name: "empty", args: GlobArgs{}, err: "empty"},
		{name: "file as folder", args: GlobArgs{Pattern: "*", Path: "main.go"}, err: "is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Glob(context.Background(), r, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Matches {
				got = append(got, m.Path)
			}
			if tc.set {
				slices.Sort(got)
				slices.Sort(tc.want)
			}
			if !slices.Equal(got, tc.want) || res.More != tc.more {
				t.Fatalf("got %v (+%d), want %v (+%d)", got, res.More, tc.want, tc.more)
			}
			if tc.more > 0 && !strings.Contains(res.String(), "3 more") {
				t.Errorf("String() = %q", res.String())
			}
		})
	}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.go":        "package a\n\nfunc Hello() string {\n\treturn \"hello\"\n}\n\nfunc World() {}\n",
		"b.py":        "def hello():\n    return 'HELLO'\n",
		"c.txt":       "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
		"bin.dat":     "hello\x00world",
		".gitignore":  "gen/\n",
		"gen/x.go":    "func Hello() {}\n",
		"deep/d/e.go": "// hello there\nvar x = 1\n",
		"crlf.txt":    "alpha\r\nbeta\r\n",
	}
	dir := tree(t, files)
	r := mustRoots(t, dir)
	no := false
	for _, tc := range []struct {
		name string
		args GrepArgs
		want string
		err  string
	}{
		{name: "files", args: GrepArgs{Pattern: "HELLO"}, want: "b.py"},
		{name: "fold", args: GrepArgs{Pattern: "HELLO", CaseInsensitive: true}, want: "a.go\nb.py\ndeep/d/e.go"},
		{name: "regex", args: GrepArgs{Pattern: `func \w+\(\)`, OutputMode: ModeContent}, want: "a.go:3:func Hello() string {\n--\na.go:7:func World() {}"},
		{name: "no literal", args: GrepArgs{Pattern: `^\w{4}$`, OutputMode: ModeContent, Path: "c.txt"}, want: "c.txt:4:four\nc.txt:5:five"},
		{name: "count", args: GrepArgs{Pattern: "func", OutputMode: ModeCount}, want: "a.go:2\n(2 matches in 1 files)"},
		{name: "type", args: GrepArgs{Pattern: "hello", CaseInsensitive: true, Type: "python"}, want: "b.py"},
		{name: "glob", args: GrepArgs{Pattern: "hello", Glob: "deep/**/*.go"}, want: "deep/d/e.go"},
		{name: "glob name", args: GrepArgs{Pattern: "hello", Glob: "*.go"}, want: "a.go\ndeep/d/e.go"},
		{name: "ignored", args: GrepArgs{Pattern: "Hello", IncludeIgnored: true}, want: "a.go\ngen/x.go"},
		{name: "context", args: GrepArgs{Pattern: "four", OutputMode: ModeContent, Context: 1}, want: "c.txt-3-three\nc.txt:4:four\nc.txt-5-five"},
		{name: "before after", args: GrepArgs{Pattern: "^(two|six)$", OutputMode: ModeContent, Before: 1, After: 2}, want: "c.txt-1-one\nc.txt:2:two\nc.txt-3-three\nc.txt-4-four\nc.txt-5-five\nc.txt:6:six\nc.txt-7-seven"},
		{name: "no numbers", args: GrepArgs{Pattern: "three", OutputMode: ModeContent, LineNumbers: &no}, want: "c.txt:three"},
		{name: "head limit", args: GrepArgs{Pattern: "e", OutputMode: ModeContent, Path: "c.txt", HeadLimit: 2}, want: "c.txt:1:one\n--\nc.txt:3:three\n(2 more lines not shown; raise head_limit or narrow the search)"},
		{name: "multiline", args: GrepArgs{Pattern: `two.three`, Multiline: true, OutputMode: ModeContent}, want: "c.txt:2:two\nc.txt:3:three"},
		{name: "no cross-line without multiline", args: GrepArgs{Pattern: `two\sthree`}, want: "No matches (7 files searched)."},
		{name: "literal with newline", args: GrepArgs{Pattern: "two\nthree"}, want: "No matches (7 files searched)."},
		{name: "crlf", args: GrepArgs{Pattern: "beta", OutputMode: ModeContent}, want: "crlf.txt:2:beta"},
		{name: "single file", args: GrepArgs{Pattern: "return", Path: "b.py", OutputMode: ModeContent}, want: "b.py:2:    return 'HELLO'"},
		{name: "bad regex", args: GrepArgs{Pattern: "(a"}, err: "not a valid RE2"},
		{name: "perl lookahead", args: GrepArgs{Pattern: "a(?=b)"}, err: "not a valid RE2"},
		{name: "bad mode", args: GrepArgs{Pattern: "a", OutputMode: "lines"}, err: "output_mode"},
		{name: "bad type", args: GrepArgs{Pattern: "a", Type: "cobol"}, err: "unknown file type"},
		{name: "outside", args: GrepArgs{Pattern: "a", Path: "/etc"}, err: "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := Grep(context.Background(), r, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.String(); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"a/b/c.txt": "x", "d.txt": "x"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Grep(ctx, mustRoots(t, dir), GrepArgs{Pattern: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestIgnoreRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rules string
		path  string
		dir   bool
		want  bool
	}{
		{"*.log", "a/b/x.log", false, true},
		{"*.log\n!keep.log", "keep.log", false, false},
		{"/build", "build", true, true},
		{"/build", "src/build", true, false},
		{"build/", "src/build", false, false},
		{"build/", "src/build", true, true},
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/x/a.txt", false, false},
		{"doc/**/*.txt", "doc/x/y/a.txt", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"a/**/b", "a/b", false, true},
		{"\\#x", "#x", false, true},
		{"# comment", "# comment", false, false},
		{"\\!bang", "!bang", false, true},
		{"{a,b}", "a", false, false},
		{"{a,b}", "{a,b}", false, true},
		{"trail   ", "trail", false, true},
		{"[ab].c", "b.c", false, true},
		{"[!ab].c", "b.c", false, false},
	} {
		f := parseIgnore("", []byte(tc.rules))
		c := &ignoreChain{file: f}
		if got := c.ignored(tc.path, tc.dir); got != tc.want {
			t.Errorf("rules %q, path %q (dir %v) = %v, want %v", tc.rules, tc.path, tc.dir, got, tc.want)
		}
	}
	// A nested file's rules apply below its folder only.
	outer := &ignoreChain{file: parseIgnore("", []byte("*.tmp"))}
	inner := &ignoreChain{file: parseIgnore("sub", []byte("!x.tmp\n/only")), parent: outer}
	for _, tc := range []struct {
		path string
		want bool
	}{{"sub/x.tmp", false}, {"x.tmp", true}, {"sub/y.tmp", true}, {"sub/only", true}, {"sub/z/only", false}, {"only", false}} {
		if got := inner.ignored(tc.path, false); got != tc.want {
			t.Errorf("nested: %q = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func FuzzIgnore(f *testing.F) {
	for _, s := range []string{"*.log\n!a.log", "/x/**/y/", "\\", "[", "{", "!", "a\\ ", "**", "/"} {
		f.Add(s, "a/b/c.log", true)
	}
	f.Fuzz(func(t *testing.T, rules, path string, dir bool) {
		c := &ignoreChain{file: parseIgnore("", []byte(rules))}
		_ = c.ignored(path, dir)
	})
}

func FuzzMatcher(f *testing.F) {
	for _, s := range []string{"hello", `func \w+`, `(?i)abc`, `^$`, `a|b`, `x{2,}`, `\bword\b`, "a\nb", `[^a]+`} {
		f.Add(s, "hello world\nfunc main() {}\n\nABC abc\n", false, false)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold, multi bool) {
		m, err := newMatcher(pattern, fold, multi)
		if err != nil {
			return
		}
		var scratch []byte
		var got []int
		m.matchLines([]byte(text), &scratch, func(s, e int) bool {
			if s < 0 || e > len(text) || s > e {
				t.Fatalf("span %d..%d out of %d", s, e, len(text))
			}
			got = append(got, s)
			return true
		})
		if multi {
			return
		}
		// The prefilters must not change which lines match.
		re := m.re
		var want []int
		pos := 0
		for _, line := range strings.SplitAfter(text, "\n") {
			l := strings.TrimSuffix(line, "\n")
			if re.MatchString(l) {
				want = append(want, pos)
			}
			pos += len(line)
			if line == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %q fold %v: lines at %v, want %v", pattern, fold, got, want)
		}
	})
}

// TestSymlinksNotFollowed: a link inside a root that leads out of it is
// neither searched nor walked into.
func TestSymlinksNotFollowed(t *testing.T) {
	t.Parallel()
	dir := tree(t, map[string]string{"in.txt": "needle inside\n"})
	outside := tree(t, map[string]string{"secret.txt": "needle outside\n", "sub/deep.txt": "needle deep\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	r := mustRoots(t, dir)
	res, err := Grep(context.Background(), r, GrepArgs{Pattern: "needle", OutputMode: ModeContent})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.String(); got != "in.txt:1:needle inside" {
		t.Errorf("grep followed a link: %q", got)
	}
	if _, err := Grep(context.Background(), r, GrepArgs{Pattern: "needle", Path: "link.txt"}); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("grep of a link out: %v", err)
	}
	g, err := Glob(context.Background(), r, GlobArgs{Pattern: "**/*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range g.Matches {
		if strings.Contains(m.Path, "deep") {
			t.Errorf("glob walked into a linked folder: %v", g.Matches)
		}
	}
}
