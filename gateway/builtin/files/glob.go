package files

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Glob limits.
const (
	DefaultGlobLimit = 100
	MaxGlobLimit     = 1000
)

// GlobArgs are the arguments of the glob tool.
type GlobArgs struct {
	// Pattern is a doublestar pattern matched against paths relative to
	// Path: "*" and "?" stay within one folder, "**" crosses folders,
	// "{a,b}" are alternatives, "[a-z]" classes. It is refused when over
	// MaxGlobPatternBytes, MaxGlobBraceDepth or MaxGlobAlternatives.
	Pattern string `json:"pattern"`
	// Path is the folder to search from; empty means the first root.
	Path string `json:"path,omitempty"`
	// Limit caps the paths returned (default 100, at most 1000).
	Limit int `json:"limit,omitempty"`
	// IncludeIgnored also lists what .gitignore files exclude.
	IncludeIgnored bool `json:"include_ignored,omitempty"`
}

// GlobMatch is one path found.
type GlobMatch struct {
	Path    string // as displayed (see Roots.Display)
	ModTime time.Time
}

// GlobResult is what Glob found: the newest Limit matches, and how many
// more there were.
type GlobResult struct {
	Matches []GlobMatch
	More    int
	Start   string // the folder searched, as displayed
}

// String renders the result for a model: one path a line, then how many
// more matched.
func (r GlobResult) String() string {
	var b strings.Builder
	if len(r.Matches) == 0 {
		fmt.Fprintf(&b, "No files match under %s.", r.Start)
		return b.String()
	}
	for _, m := range r.Matches {
		b.WriteString(m.Path)
		b.WriteByte('\n')
	}
	if r.More > 0 {
		fmt.Fprintf(&b, "(%d more not shown, newest first; narrow the pattern or raise limit)\n", r.More)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Glob finds the files under args.Path whose path relative to it matches
// args.Pattern, newest first (ties by path).
func Glob(ctx context.Context, roots Roots, args GlobArgs) (GlobResult, error) {
	pattern := strings.TrimSpace(args.Pattern)
	if pattern == "" {
		return GlobResult{}, fmt.Errorf("glob: pattern is empty")
	}
	if err := checkGlob(pattern); err != nil {
		return GlobResult{}, fmt.Errorf("glob: %w", err)
	}
	pattern = filepath.ToSlash(pattern)
	start, err := roots.open(args.Path, false)
	if err != nil {
		return GlobResult{}, fmt.Errorf("glob: %w", err)
	}
	defer start.close()
	startAbs := roots.abs(start.root, start.names)
	if start.dir == nil {
		return GlobResult{}, fmt.Errorf("glob: %s is a file, not a folder", roots.Display(startAbs))
	}
	// An absolute pattern inside the start folder is made relative to it.
	if filepath.IsAbs(filepath.FromSlash(pattern)) {
		abs := filepath.Clean(filepath.FromSlash(pattern))
		rel, ok := "", false
		for _, dir := range []string{startAbs, filepath.Join(append([]string{roots.given[start.root]}, start.names...)...)} {
			if within(dir, abs) {
				rel, ok = strings.TrimPrefix(strings.TrimPrefix(abs, dir), string(filepath.Separator)), true
				break
			}
		}
		if !ok {
			return GlobResult{}, fmt.Errorf("glob: the pattern %q is absolute and not inside %s; give a relative pattern and a path", args.Pattern, roots.Display(startAbs))
		}
		pattern = filepath.ToSlash(rel)
		if pattern == "" {
			pattern = "."
		}
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return GlobResult{}, fmt.Errorf("glob: %q is not a valid pattern (check brackets and braces)", args.Pattern)
	}
	limit := args.Limit
	if limit <= 0 {
		limit = DefaultGlobLimit
	}
	limit = min(limit, MaxGlobLimit)
	// The pattern's fixed leading folders narrow the walk.
	base, _ := doublestar.SplitPattern(pattern)
	skip := func(rel string) bool { return false }
	if base != "." && base != "" {
		skip = func(rel string) bool {
			return !strings.HasPrefix(base+"/", rel+"/") && !strings.HasPrefix(rel+"/", base+"/")
		}
	}
	var mu sync.Mutex
	var found []GlobMatch
	err = walk(ctx, walkOptions{roots: roots, start: start, absDir: startAbs, noIgnore: args.IncludeIgnored, skipDir: skip}, func(e entry) bool {
		if !doublestar.MatchUnvalidated(pattern, e.rel) {
			return true
		}
		var mt time.Time
		if st, err := e.stat(); err == nil {
			mt = st.modTime
		}
		mu.Lock()
		found = append(found, GlobMatch{Path: e.abs, ModTime: mt})
		mu.Unlock()
		return true
	})
	if err != nil {
		return GlobResult{}, fmt.Errorf("glob: %w", err)
	}
	sort.Slice(found, func(i, j int) bool {
		if !found[i].ModTime.Equal(found[j].ModTime) {
			return found[i].ModTime.After(found[j].ModTime)
		}
		return found[i].Path < found[j].Path
	})
	res := GlobResult{Start: roots.Display(startAbs)}
	if len(found) > limit {
		res.More = len(found) - limit
		found = found[:limit]
	}
	for i := range found {
		found[i].Path = roots.Display(found[i].Path)
	}
	res.Matches = found
	return res, nil
}
