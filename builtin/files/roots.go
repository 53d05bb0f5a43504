// Package files implements the gateway's built-in file tools, glob and grep,
// confined to a set of root folders.
//
// Every path a caller gives is resolved against the roots: relative paths
// against the first root in which they exist, absolute paths as they are.
// The resolved path, with every symbolic link evaluated, must lie inside a
// root; anything else (".." segments, a symlink that leads out) is refused
// with an error that names the roots. Walks never follow symbolic links.
package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideRoots is wrapped by the error for a path outside every root.
var ErrOutsideRoots = errors.New("outside the allowed roots")

// ErrNoRoots is returned when there is no root to work in.
var ErrNoRoots = errors.New("no root folders: the client declared no MCP roots and the configuration names none (toolsearch.builtins.roots)")

// Roots is a set of absolute root folders with their symbolic links
// evaluated. The zero value has no roots and refuses every path.
type Roots struct {
	dirs []string
}

// NewRoots checks and resolves dirs: each must be an existing folder.
// Folders that do not exist are an error naming them; duplicates and
// folders inside another root are dropped.
func NewRoots(dirs []string) (Roots, error) {
	var out []string
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
	}
	// Drop duplicates and nested roots, keeping the order of the rest.
	var kept []string
	for i, d := range out {
		inner := false
		for j, o := range out {
			if i != j && within(o, d) && (o != d || j < i) {
				inner = true
				break
			}
		}
		if !inner {
			kept = append(kept, d)
		}
	}
	return Roots{dirs: kept}, nil
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

// Resolve turns a caller's path into an absolute path inside a root, with
// symbolic links evaluated. An empty path means the first root. A relative
// path is tried against each root in order and resolves in the first where
// it exists (the first root when it exists nowhere).
func (r Roots) Resolve(p string) (string, error) {
	if r.Empty() {
		return "", ErrNoRoots
	}
	p = strings.TrimSpace(p)
	if p == "" || p == "." {
		return r.dirs[0], nil
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	var cands []string
	if filepath.IsAbs(p) {
		cands = []string{filepath.Clean(p)}
	} else {
		for _, d := range r.dirs {
			cands = append(cands, filepath.Join(d, p))
		}
	}
	var firstErr error
	for _, c := range cands {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if _, ok := r.Root(real); !ok {
			return "", fmt.Errorf("path %q resolves to %s, which is %w (%s)", p, real, ErrOutsideRoots, strings.Join(r.dirs, ", "))
		}
		return real, nil
	}
	// It exists nowhere: say whether it would be outside anyway.
	if _, ok := r.Root(cands[0]); !ok {
		return "", fmt.Errorf("path %q is %w (%s)", p, ErrOutsideRoots, strings.Join(r.dirs, ", "))
	}
	if errors.Is(firstErr, os.ErrNotExist) {
		return "", fmt.Errorf("path %q does not exist", p)
	}
	return "", fmt.Errorf("path %q: %w", p, firstErr)
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
