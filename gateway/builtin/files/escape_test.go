package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// secret is what the files outside the root hold: no tool may show it.
const secret = "TOPSECRET"

// outsideTree makes a folder outside any root holding the secret under
// the same names as files inside the root, plus a name of its own.
func outsideTree(t testing.TB, names ...string) string {
	t.Helper()
	files := map[string]string{"only-outside.txt": secret + "\n"}
	for _, n := range names {
		files[n] = secret + "\n"
	}
	return tree(t, files)
}

// leaked reports whether a tool's output or error shows anything from
// outside the root, besides the caller's own path quoted back.
func leaked(s, outside string, given ...string) bool {
	for _, g := range given {
		s = strings.ReplaceAll(s, fmt.Sprintf("%q", g), "PATH")
	}
	return strings.Contains(s, secret) || strings.Contains(s, "only-outside") || strings.Contains(s, outside)
}

// TestSymlinkSwapRace swaps a folder inside the root for a link to a
// folder outside, as fast as it can, while glob, grep and Resolve run over
// and over. Whenever a tool looks, the folder is either the real one or a
// link it must not follow: nothing from outside may show.
func TestSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	var names []string
	files := map[string]string{"top.txt": "harmless\n"}
	for i := range 40 {
		n := fmt.Sprintf("f%02d.txt", i)
		names = append(names, n, "sub/"+n)
		files["d/"+n] = "harmless\n"
		files["d/sub/"+n] = "harmless\n"
	}
	root := tree(t, files)
	outside := outsideTree(t, names...)
	// The spare names live beside the root, on the same file system.
	spare := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(spare, "link")); err != nil {
		t.Fatal(err)
	}
	r := mustRoots(t, root)

	ctx, cancel := context.WithCancel(context.Background())
	var swapper sync.WaitGroup
	swapper.Go(func() {
		d, link, hold := filepath.Join(root, "d"), filepath.Join(spare, "link"), filepath.Join(spare, "d")
		for ctx.Err() == nil {
			// d is a folder, then a link out, then a folder again.
			_ = os.Rename(d, hold)
			_ = os.Rename(link, d)
			runtime.Gosched()
			_ = os.Rename(d, link)
			_ = os.Rename(hold, d)
		}
	})

	calls := []func() (string, error){
		func() (string, error) {
			res, err := Grep(ctx, r, GrepArgs{Pattern: secret + "|harmless", OutputMode: ModeContent, HeadLimit: MaxHeadLimit})
			return res.String(), err
		},
		func() (string, error) {
			res, err := Grep(ctx, r, GrepArgs{Pattern: secret + "|harmless", Path: "d", OutputMode: ModeContent, IncludeIgnored: true})
			return res.String(), err
		},
		func() (string, error) {
			res, err := Grep(ctx, r, GrepArgs{Pattern: secret + "|harmless", Path: "d/sub/f07.txt", OutputMode: ModeContent})
			return res.String(), err
		},
		func() (string, error) {
			res, err := Glob(ctx, r, GlobArgs{Pattern: "**/*", Limit: MaxGlobLimit})
			return res.String(), err
		},
		func() (string, error) {
			res, err := Glob(ctx, r, GlobArgs{Pattern: "*", Path: "d/sub"})
			return res.String(), err
		},
		func() (string, error) { return r.Resolve("d/sub/f07.txt") },
	}
	// Two callers, for a fixed time and at least a fixed number of calls.
	// A leak is the secret or a name from outside in what a tool found,
	// or the outside folder named in an error.
	var leaks, errLeaks, total atomic.Int64
	var first atomic.Value
	deadline := time.Now().Add(2 * time.Second)
	var callers sync.WaitGroup
	for range 2 {
		callers.Go(func() {
			for i := 0; time.Now().Before(deadline) || i < 300; i++ {
				out, err := calls[i%len(calls)]()
				total.Add(1)
				switch {
				case leaked(out, outside):
					leaks.Add(1)
					first.CompareAndSwap(nil, out)
				case err != nil && leaked(err.Error(), outside):
					errLeaks.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	callers.Wait()
	cancel()
	swapper.Wait()
	if leaks.Load() > 0 || errLeaks.Load() > 0 {
		t.Fatalf("of %d calls, %d found what lies outside the root and %d errors named it; the first:\n%s", total.Load(), leaks.Load(), errLeaks.Load(), first.Load())
	}
	t.Logf("%d calls, no leak", total.Load())
}

// TestPathsOutsideRoots covers the ways a path can point out of the root
// (a link, "..", an absolute path) and the links inside the root that
// must keep working, for every tool.
func TestPathsOutsideRoots(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"a/b.txt": "needle in a\n", "c.txt": "needle in c\n"})
	outside := outsideTree(t, "b.txt", "sub/b.txt")
	other := tree(t, map[string]string{"o.txt": "needle in other\n"})
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(outside, "out")                              // a folder outside
	link(filepath.Join(outside, "b.txt"), "out.txt")  // a file outside
	link("../"+filepath.Base(outside), "relout")      // relative, climbing out
	link(filepath.Join(root, "a"), "abs-in")          // absolute, inside
	link("a", "rel-in")                               // relative, inside
	link("a/../c.txt", "dotdot-in.txt")               // relative with "..", inside
	link("rel-in/b.txt", "chain.txt")                 // a link to a link
	link("../"+filepath.Base(root)+"/a", "climb-in")  // out and back in
	link("loop1", "loop2")                            // a loop
	link("loop2", "loop1")                            //
	link(filepath.Join(other, "o.txt"), "other.txt")  // into the second root
	link(filepath.Join(outside, "missing"), "dangle") // to nothing, outside
	r := mustRoots(t, root, other)

	for _, tc := range []struct {
		path string
		want string // the file or folder reached, relative to root; "" when refused
		err  string // part of the error, when refused
	}{
		{path: "out", err: "outside the allowed roots"},
		{path: "out/b.txt", err: "outside the allowed roots"},
		{path: "out/missing.txt", err: "outside the allowed roots"},
		{path: "out.txt", err: "outside the allowed roots"},
		{path: "relout/b.txt", err: "outside the allowed roots"},
		{path: "dangle", err: "outside the allowed roots"},
		{path: "../" + filepath.Base(outside) + "/b.txt", err: "outside the allowed roots"},
		{path: "a/../../" + filepath.Base(outside), err: "outside the allowed roots"},
		{path: filepath.Join(outside, "b.txt"), err: "outside the allowed roots"},
		{path: filepath.Join(root, "..", filepath.Base(outside), "b.txt"), err: "outside the allowed roots"},
		{path: "/", err: "outside the allowed roots"},
		{path: "loop1", err: "too many levels of symbolic links"},
		{path: "missing", err: "does not exist"},
		{path: "c.txt/x", err: "is a file, not a folder"},
		{path: "a/../c.txt", want: "c.txt"},
		{path: "../" + filepath.Base(root) + "/c.txt", want: "c.txt"},
		{path: filepath.Join(root, "a", "b.txt"), want: "a/b.txt"},
		{path: "abs-in/b.txt", want: "a/b.txt"},
		{path: "rel-in", want: "a"},
		{path: "dotdot-in.txt", want: "c.txt"},
		{path: "chain.txt", want: "a/b.txt"},
		{path: "climb-in/b.txt", want: "a/b.txt"},
		{path: "other.txt", want: filepath.Join(other, "o.txt")},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want != "" && !filepath.IsAbs(want) {
				want = filepath.Join(root, filepath.FromSlash(want))
			}
			got, err := r.Resolve(tc.path)
			if want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve = %q, %v; want an error with %q", got, err, tc.err)
				}
			} else if err != nil || got != want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, want)
			}
			// Every tool refuses the same paths and reaches the same
			// files; none shows anything from outside.
			gr, gerr := Grep(context.Background(), r, GrepArgs{Pattern: "needle|" + secret, Path: tc.path, OutputMode: ModeContent})
			gl, lerr := Glob(context.Background(), r, GlobArgs{Pattern: "**", Path: tc.path})
			for _, out := range []struct {
				tool string
				text string
				err  error
			}{{"grep", gr.String(), gerr}, {"glob", gl.String(), lerr}} {
				if out.err != nil {
					out.text += "\n" + out.err.Error()
				}
				if leaked(out.text, outside, tc.path) {
					t.Errorf("%s showed what lies outside: %s", out.tool, out.text)
				}
				if want == "" && (out.err == nil || !strings.Contains(out.err.Error(), tc.err)) {
					t.Errorf("%s: err = %v, want %q", out.tool, out.err, tc.err)
				}
			}
			if want == "" {
				return
			}
			if fi, _ := os.Stat(want); fi != nil && !fi.IsDir() {
				if gerr != nil || !strings.Contains(gr.String(), "needle in") {
					t.Errorf("grep of a file inside: %q, %v", gr.String(), gerr)
				}
			} else if lerr != nil || len(gl.Matches) == 0 {
				t.Errorf("glob of a folder inside: %q, %v", gl.String(), lerr)
			}
		})
	}
}

// TestOutsideErrorsSame: the error for a path outside the roots is the
// same whether or not what it names exists, and never shows a link's
// target.
func TestOutsideErrorsSame(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"in.txt": "x\n"})
	outside := outsideTree(t, "there.txt", "dir/there.txt")
	for name, target := range map[string]string{
		"to-file":    filepath.Join(outside, "there.txt"),
		"to-nothing": filepath.Join(outside, "not-there.txt"),
		"to-dir":     outside,
		"rel-dir":    "../" + filepath.Base(outside),
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := mustRoots(t, root)
	up := "../" + filepath.Base(outside)
	for _, pair := range [][2]string{
		{filepath.Join(outside, "there.txt"), filepath.Join(outside, "not-there.txt")},
		{filepath.Join(outside, "dir"), filepath.Join(outside, "no-dir")},
		{up + "/there.txt", up + "/not-there.txt"},
		{"to-file", "to-nothing"},
		{"to-dir/there.txt", "to-dir/not-there.txt"},
		{"to-dir/dir/there.txt", "to-dir/no-dir/there.txt"},
		{"rel-dir/there.txt", "rel-dir/not-there.txt"},
	} {
		t.Run(pair[0], func(t *testing.T) {
			t.Parallel()
			tools := map[string]func(p string) error{
				"resolve": func(p string) error { _, err := r.Resolve(p); return err },
				"grep": func(p string) error {
					_, err := Grep(context.Background(), r, GrepArgs{Pattern: "x", Path: p})
					return err
				},
				"glob": func(p string) error {
					_, err := Glob(context.Background(), r, GlobArgs{Pattern: "*", Path: p})
					return err
				},
			}
			for tool, call := range tools {
				var msgs [2]string
				for i, p := range pair {
					err := call(p)
					if !errors.Is(err, ErrOutsideRoots) {
						t.Fatalf("%s(%q) = %v; want outside the roots", tool, p, err)
					}
					// The path as given is quoted back; the rest must
					// not differ.
					msgs[i] = strings.ReplaceAll(err.Error(), fmt.Sprintf("%q", p), "PATH")
					if strings.Contains(msgs[i], outside) {
						t.Errorf("%s(%q) shows a place outside: %v", tool, p, err)
					}
				}
				if msgs[0] != msgs[1] {
					t.Errorf("%s: an existing and a missing path outside differ:\n%s\n%s", tool, msgs[0], msgs[1])
				}
			}
		})
	}
}

// TestWalksCloseFolders: walks that finish, stop early or are cancelled
// leave no folder open.
func TestWalksCloseFolders(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files")
	}
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/e%d/f.txt", i%5, i)] = "needle\n"
	}
	r := mustRoots(t, tree(t, files))
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	before := count()
	for range 20 {
		_, _ = Grep(context.Background(), r, GrepArgs{Pattern: "needle"})
		_, _ = Grep(context.Background(), r, GrepArgs{Pattern: "needle", Path: "d1/e1/f.txt"})
		_, _ = Grep(cancelled, r, GrepArgs{Pattern: "needle"})
		_, _ = Glob(context.Background(), r, GlobArgs{Pattern: "**/f.txt", Limit: 1})
		_, _ = Glob(cancelled, r, GlobArgs{Pattern: "**"})
		_, _ = r.Resolve("d2/e2/f.txt")
	}
	if after := count(); after != before {
		t.Errorf("open files: %d before, %d after", before, after)
	}
}

// TestReadFile: Roots.ReadFile reads a file inside the roots, through
// links that stay inside, and refuses what lies outside, folders and files
// over its limit.
func TestReadFile(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"a/b.txt": "inside\n"})
	outside := outsideTree(t, "b.txt")
	for target, name := range map[string]string{"a": "in", outside: "out"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := mustRoots(t, root)
	for _, tc := range []struct {
		path  string
		limit int64
		want  string
		err   string
	}{
		{path: "a/b.txt", limit: 100, want: "inside\n"},
		{path: "in/b.txt", limit: 100, want: "inside\n"},
		{path: filepath.Join(root, "in", "b.txt"), limit: 100, want: "inside\n"},
		{path: "out/b.txt", limit: 100, err: "outside the allowed roots"},
		{path: filepath.Join(outside, "b.txt"), limit: 100, err: "outside the allowed roots"},
		{path: "a", limit: 100, err: "is a folder"},
		{path: "a/b.txt", limit: 3, err: "over the limit of 3"},
	} {
		data, mod, err := r.ReadFile(tc.path, tc.limit)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || leaked(err.Error(), outside, tc.path) {
				t.Errorf("ReadFile(%q) = %q, %v; want an error with %q", tc.path, data, err, tc.err)
			}
		case err != nil || string(data) != tc.want || mod.IsZero():
			t.Errorf("ReadFile(%q) = %q, %v, %v; want %q", tc.path, data, mod, err, tc.want)
		}
	}
}
