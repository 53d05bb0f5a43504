// Package files implements the gateway's built-in file tools, glob and grep,
// confined to a set of root folders.
//
// Every path a caller gives is resolved against the roots: relative paths
// against the first root in which they exist, absolute paths as they are
// (inside a root as configured or with its symbolic links evaluated). ".."
// segments are applied to the path as written; one that climbs out of
// every root is refused. The tools never open a path whole: they open the
// root folder, then one name at a time relative to the folder before it,
// never letting the system follow a symbolic link. A link on the way is
// read and followed only when its target lies inside a root (the part of a
// target above its root is read as written, without looking at anything
// outside), so swapping a folder for a link while a tool runs cannot lead
// it out. Walks never follow symbolic links at all.
//
// A path outside every root is refused with the same error whether or not
// it exists, and the error never shows where a link points.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrOutsideRoots is wrapped by the error for a path outside every root.
var ErrOutsideRoots = errors.New("outside the allowed roots")

// ErrNoRoots is returned when there is no root to work in.
var ErrNoRoots = errors.New("no root folders: the client declared no MCP roots and the configuration names none (toolsearch.builtins.roots)")

// Roots is a set of absolute root folders with their symbolic links
// evaluated. The zero value has no roots and refuses every path.
type Roots struct {
	dirs []string // with symbolic links evaluated
	// given are the same folders as configured (absolute and clean, links
	// not evaluated), for absolute paths written that way.
	given []string
}

// NewRoots checks and resolves dirs: each must be an existing folder.
// Folders that do not exist are an error naming them; duplicates and
// folders inside another root are dropped.
func NewRoots(dirs []string) (Roots, error) {
	var out, given []string
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return Roots{}, fmt.Errorf("root %q: %w", d, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return Roots{}, fmt.Errorf("root %q: %w", d, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return Roots{}, fmt.Errorf("root %q: %w", d, err)
		}
		if !fi.IsDir() {
			return Roots{}, fmt.Errorf("root %q is not a folder", d)
		}
		out = append(out, real)
		given = append(given, abs)
	}
	// Drop duplicates and nested roots, keeping the order of the rest.
	var r Roots
	for i, d := range out {
		inner := false
		for j, o := range out {
			if i != j && within(o, d) && (o != d || j < i) {
				inner = true
				break
			}
		}
		if !inner {
			r.dirs = append(r.dirs, d)
			r.given = append(r.given, given[i])
		}
	}
	return r, nil
}

// Dirs returns the root folders.
func (r Roots) Dirs() []string { return append([]string(nil), r.dirs...) }

// Empty reports whether there is no root.
func (r Roots) Empty() bool { return len(r.dirs) == 0 }

// within reports whether p is root or inside it. Both are clean and absolute.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// Root returns the root that contains the clean absolute path p.
func (r Roots) Root(p string) (string, bool) {
	for _, d := range r.dirs {
		if within(d, p) {
			return d, true
		}
	}
	return "", false
}

// locate finds the root that lexically contains the clean absolute path p,
// as resolved or as configured, and returns its index and p's names below
// it.
func (r Roots) locate(p string) (int, []string, bool) {
	for i := range r.dirs {
		for _, d := range []string{r.dirs[i], r.given[i]} {
			if within(d, p) {
				return i, splitRel(strings.TrimPrefix(p, d)), true
			}
		}
	}
	return 0, nil, false
}

// splitRel splits a relative path into its names, dropping empty ones.
func splitRel(rel string) []string {
	var names []string
	for _, n := range strings.FieldsFunc(rel, isSep) {
		if n != "." {
			names = append(names, n)
		}
	}
	return names
}

// maxLinks bounds the symbolic links followed in resolving one path, as
// the kernel does.
const maxLinks = 40

// A place is a path inside a root, open: a folder or a regular file.
type place struct {
	root  int      // index of the root in Roots.dirs
	names []string // the names from the root, none of them a link
	dir   *dirFD   // the folder, when the path is one
	file  *fileFD  // the file, otherwise (when asked to open it)
}

// close releases what p holds open.
func (p *place) close() {
	if p.dir != nil {
		p.dir.close()
	}
	if p.file != nil {
		p.file.close()
	}
}

// abs is p's absolute path, with symbolic links evaluated.
func (r Roots) abs(root int, names []string) string {
	return filepath.Join(append([]string{r.dirs[root]}, names...)...)
}

// errOutside is the error for a path outside every root. It is the same
// whatever lies outside and wherever a link points.
func (r Roots) errOutside(p string) error {
	return fmt.Errorf("path %q is %w (%s)", p, ErrOutsideRoots, strings.Join(r.dirs, ", "))
}

// errLinkOut is an internal signal: a link leads out of every root.
var errLinkOut = errors.New("a link leads out of the roots")

// errTooManyLinks is the error for a chain of links that does not end.
var errTooManyLinks = errors.New("too many levels of symbolic links")

// open resolves the caller's path p (see Resolve) and opens it: a folder,
// or, when openFiles is set, a regular file (else only its names are
// returned). The caller closes the place.
func (r Roots) open(p string, openFiles bool) (*place, error) {
	if r.Empty() {
		return nil, ErrNoRoots
	}
	p = strings.TrimSpace(p)
	if strings.ContainsRune(p, 0) {
		return nil, fmt.Errorf("path %q contains a NUL byte", p)
	}
	type cand struct {
		root  int
		names []string
	}
	var cands []cand
	switch {
	case p == "" || p == ".":
		cands = []cand{{0, nil}}
	case filepath.IsAbs(p):
		i, names, ok := r.locate(filepath.Clean(p))
		if !ok {
			return nil, r.errOutside(p)
		}
		cands = []cand{{i, names}}
	default:
		// ".." applies to the path as written, before anything is
		// looked at.
		for i := range r.dirs {
			if j, names, ok := r.locate(filepath.Join(r.dirs[i], p)); ok {
				cands = append(cands, cand{j, names})
			}
		}
		if len(cands) == 0 {
			return nil, r.errOutside(p)
		}
	}
	var firstErr error
	for _, c := range cands {
		pl, err := r.walkTo(c.root, c.names, openFiles)
		switch {
		case err == nil:
			return pl, nil
		case errors.Is(err, errLinkOut):
			return nil, r.errOutside(p)
		case errors.Is(err, fs.ErrNotExist):
			if firstErr == nil {
				firstErr = fmt.Errorf("path %q does not exist", p)
			}
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("path %q: %w", p, err)
			}
		}
	}
	return nil, firstErr
}

// walkTo opens names under the root root, one at a time, following the
// links on the way while they stay inside the roots.
func (r Roots) walkTo(root int, names []string, openFiles bool) (*place, error) {
	links := 0
restart:
	d, err := openRootDir(r.dirs[root])
	if err != nil {
		return nil, err
	}
	var done []string // names opened so far, none a link
	for k := 0; k < len(names); k++ {
		name := names[k]
		switch name {
		case "", ".":
			continue
		case "..":
			// Only a link's target brings "..": step back by what is
			// known, from the root again.
			d.close()
			if len(done) == 0 {
				// Above the root: what follows is read as written,
				// without looking at anything outside.
				abs := filepath.Join(append([]string{filepath.Dir(r.dirs[root])}, names[k+1:]...)...)
				i, rest, ok := r.locate(abs)
				if !ok {
					return nil, errLinkOut
				}
				root, names = i, rest
				goto restart
			}
			names = append(append([]string(nil), done[:len(done)-1]...), names[k+1:]...)
			goto restart
		}
		last := k == len(names)-1
		sub, err := d.openDir(name)
		if err == nil {
			d.close()
			d = sub
			done = append(done, name)
			continue
		}
		switch {
		case errors.Is(err, errSymlink):
			links++
			if links > maxLinks {
				d.close()
				return nil, errTooManyLinks
			}
			target, err := d.readlink(name)
			d.close()
			if err != nil {
				return nil, err
			}
			rest := names[k+1:]
			if filepath.IsAbs(target) {
				i, tn, ok := r.locate(filepath.Clean(target))
				if !ok {
					return nil, errLinkOut
				}
				root, names = i, append(tn, rest...)
			} else {
				names = append(append(append([]string(nil), done...), splitLink(target)...), rest...)
			}
			goto restart
		case errors.Is(err, errNotFolder) && last:
			// A file ends the path.
			pl := &place{root: root, names: append(done, name)}
			if openFiles {
				f, err := d.openFile(name)
				if errors.Is(err, errSymlink) {
					// Swapped for a link since openDir looked:
					// resolve it as a link.
					k--
					continue
				}
				if err != nil {
					d.close()
					return nil, err
				}
				pl.file = f
			}
			d.close()
			return pl, nil
		case errors.Is(err, errNotFolder):
			d.close()
			return nil, fmt.Errorf("%s is a file, not a folder", r.abs(root, append(done, name)))
		default:
			d.close()
			return nil, err
		}
	}
	return &place{root: root, names: done, dir: d}, nil
}

// splitLink splits a link's relative target into names, keeping "..".
func splitLink(target string) []string {
	return strings.FieldsFunc(target, isSep)
}

// isSep reports whether c separates names in a path: "/" everywhere, and
// the system's own separator.
func isSep(c rune) bool {
	return c == '/' || (c < utf8.RuneSelf && os.IsPathSeparator(uint8(c)))
}

// Resolve turns a caller's path into an absolute path inside a root, with
// symbolic links evaluated. An empty path means the first root. A relative
// path is tried against each root in order and resolves in the first where
// it exists (the first root when it exists nowhere). The path is looked up
// one name at a time from its root, as the tools open it; see the package
// documentation.
func (r Roots) Resolve(p string) (string, error) {
	pl, err := r.open(p, false)
	if err != nil {
		return "", err
	}
	pl.close()
	return r.abs(pl.root, pl.names), nil
}

// ReadFile reads the regular file at p, a caller's path resolved and
// opened as the tools open it (see Resolve), and returns its contents and
// modification time. A file larger than limit bytes is an error.
func (r Roots) ReadFile(p string, limit int64) ([]byte, time.Time, error) {
	pl, err := r.open(p, true)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer pl.close()
	if pl.file == nil {
		return nil, time.Time{}, fmt.Errorf("%s is a folder, not a file", r.Display(r.abs(pl.root, pl.names)))
	}
	if size := pl.file.size(); size > limit {
		return nil, time.Time{}, fmt.Errorf("%s is %d bytes, over the limit of %d", r.Display(r.abs(pl.root, pl.names)), size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(pl.file, pl.file.size()))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading %s: %w", r.Display(r.abs(pl.root, pl.names)), err)
	}
	return data, pl.file.modTime(), nil
}

// Display returns how a result path is shown: relative to its root when
// there is one root, absolute otherwise.
func (r Roots) Display(abs string) string {
	if len(r.dirs) == 1 {
		if rel, err := filepath.Rel(r.dirs[0], abs); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}
