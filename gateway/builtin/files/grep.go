package files

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Grep output modes.
const (
	ModeContent = "content"
	ModeFiles   = "files_with_matches"
	ModeCount   = "count"
)

// Grep limits.
const (
	DefaultHeadLimit = 200
	MaxHeadLimit     = 5000
	MaxContext       = 20
	// maxLineChars bounds one printed line.
	maxLineChars = 400
	// maxFileBytes: larger files are skipped (see maxMultilineBytes).
	maxFileBytes = 128 << 20
	// maxCollected bounds the content lines kept in memory.
	maxCollected = 50_000
	// binarySniff is how much of a file is checked for NUL bytes.
	binarySniff = 8 << 10
)

// GrepArgs are the arguments of the grep tool.
type GrepArgs struct {
	// Pattern is an RE2 regular expression.
	Pattern string `json:"pattern"`
	// Path is a file or folder to search; empty means the roots.
	Path string `json:"path,omitempty"`
	// Glob keeps files whose base name (or, when it has a "/", path
	// relative to Path) matches this doublestar pattern, within the
	// limits of GlobArgs.Pattern.
	Glob string `json:"glob,omitempty"`
	// Type keeps files of one type ("go", "py", "ts", ...).
	Type string `json:"type,omitempty"`
	// OutputMode is ModeFiles (default), ModeContent or ModeCount.
	OutputMode string `json:"output_mode,omitempty"`
	// CaseInsensitive ignores case.
	CaseInsensitive bool `json:"case_insensitive,omitempty"`
	// Multiline lets matches span lines, with "." matching newlines.
	// Files are then read whole, and those over 16 MiB skipped.
	Multiline bool `json:"multiline,omitempty"`
	// Context, Before and After are lines of context in content mode.
	Context int `json:"context,omitempty"`
	Before  int `json:"before,omitempty"`
	After   int `json:"after,omitempty"`
	// LineNumbers prints line numbers in content mode (default true).
	LineNumbers *bool `json:"line_numbers,omitempty"`
	// HeadLimit caps output lines (content) or entries (default 200).
	HeadLimit int `json:"head_limit,omitempty"`
	// IncludeIgnored also searches what .gitignore files exclude.
	IncludeIgnored bool `json:"include_ignored,omitempty"`
}

// GrepFile is what matched in one file.
type GrepFile struct {
	Path  string   // as displayed
	Count int      // matching lines (matches, in multiline mode)
	Lines []string // content mode: formatted output lines, "--" between groups
}

// GrepResult is what Grep found, files sorted by path.
type GrepResult struct {
	Mode      string
	Files     []GrepFile
	HeadLimit int
	Searched  int64 // files searched
	TooLarge  int64 // files skipped for their size
	Truncated bool  // content was dropped to bound memory
}

// String renders the result for a model.
func (r GrepResult) String() string {
	var b strings.Builder
	if len(r.Files) == 0 {
		fmt.Fprintf(&b, "No matches (%d files searched).", r.Searched)
		if r.TooLarge > 0 {
			fmt.Fprintf(&b, " (%d files not searched: larger than %d MiB, or %d MiB in multiline mode)", r.TooLarge, maxFileBytes>>20, maxMultilineBytes>>20)
		}
		return b.String()
	}
	limit := r.HeadLimit
	shown, more := 0, 0
	sep := false // a "--" is due before the next shown line
	emit := func(s string) {
		if s == "--" {
			sep = shown > 0
			return
		}
		if shown < limit {
			if sep {
				b.WriteString("--\n")
				sep = false
			}
			b.WriteString(s)
			b.WriteByte('\n')
			shown++
		} else {
			more++
		}
	}
	total := 0
	for _, f := range r.Files {
		total += f.Count
		switch r.Mode {
		case ModeCount:
			emit(f.Path + ":" + strconv.Itoa(f.Count))
		case ModeContent:
			emit("--")
			for _, l := range f.Lines {
				emit(l)
			}
		default:
			emit(f.Path)
		}
	}
	unit := "entries"
	if r.Mode == ModeContent {
		unit = "lines"
	}
	if more > 0 {
		fmt.Fprintf(&b, "(%d more %s not shown; raise head_limit or narrow the search)\n", more, unit)
	}
	if r.Mode == ModeCount {
		fmt.Fprintf(&b, "(%d matches in %d files)\n", total, len(r.Files))
	}
	if r.Truncated {
		b.WriteString("(too many matching lines: output was cut; narrow the search)\n")
	}
	if r.TooLarge > 0 {
		fmt.Fprintf(&b, "(%d files not searched: larger than %d MiB, or %d MiB in multiline mode)\n", r.TooLarge, maxFileBytes>>20, maxMultilineBytes>>20)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// matcher finds matching lines in a file's bytes.
type matcher struct {
	re        *regexp.Regexp // matches one line (or the whole file in multiline mode)
	fileRe    *regexp.Regexp // (?m) form: a quick test of a whole file; nil with lit or scan
	scan      *classScan     // finds byte-class sequences every match contains; nil with lit
	lit       []byte         // a literal every match contains
	fold      bool           // lit is lower-case ASCII, searched in a lowered copy
	pure      bool           // the pattern is exactly lit: no regexp needed per line
	rareAt    int            // the index of lit's rarest byte, or -1 (see indexLit)
	multiline bool
	// narrow, when set, is a sharper scan than scan or lit, for files
	// without the runes whose UTF-8 forms absent lists (the K and ſ that
	// (?i)[a-z] also matches).
	narrow *classScan
	absent [][]byte
	// chunk is the largest input on which Go's regexp package uses its
	// backtracker, much faster than its NFA: files are tested in
	// line-aligned pieces of at most this size.
	chunk int
}

// newMatcher compiles pattern.
func newMatcher(pattern string, fold, multiline bool) (*matcher, error) {
	flags := ""
	if fold {
		flags += "i"
	}
	if multiline {
		flags += "ms"
	}
	full := pattern
	if flags != "" {
		full = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(full)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid RE2 regular expression: %w", pattern, err)
	}
	m := &matcher{re: re, multiline: multiline}
	parsed, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	parsed = parsed.Simplify()
	if lit, f, ok := requiredLiteral(parsed); ok && len(lit) > 0 {
		m.lit, m.fold = []byte(lit), f
		m.pure = parsed.Op == syntax.OpLiteral && len(lit) == len(string(parsed.Rune)) && !multiline && !bytes.ContainsRune(m.lit, '\n')
	}
	if !m.pure || m.fold {
		// A short, common literal nominates many lines that the regexp
		// then rejects; classes may do much better ("a[0-9]{4}"). best is
		// the chance of a candidate per byte with what is chosen so far.
		best, litP := math.Inf(1), math.Inf(1)
		if m.lit != nil {
			litP = litProb(m.lit, m.fold)
			best = litP
			if best <= 1e-3 {
				best = 0 // rare enough: keep it
			}
		}
		sc, _ := newClassScan(parsed, !multiline, false)
		switch {
		case sc == nil || sc.prob >= maxScanProb:
		case sc.prob*64 < best,
			// A rare-byte search needs no lowered copy of the file.
			m.fold && sc.rare != nil && sc.prob <= litP*4:
			m.scan, m.lit, m.pure, best = sc, nil, false, sc.prob
		}
		if sc, absent := newClassScan(parsed, !multiline, true); len(absent) > 0 && sc != nil && sc.prob < maxScanProb && sc.prob*2 < best {
			m.narrow = sc
			for _, r := range absent {
				m.absent = append(m.absent, []byte(string(r)))
			}
		}
	}
	if m.lit != nil {
		m.rareAt = rareLitByte(m.lit, m.fold)
	}
	if m.lit == nil && m.scan == nil && !multiline && !strings.Contains(pattern, `\A`) && !strings.Contains(pattern, `\z`) {
		if fre, err := regexp.Compile("(?m" + flags + ")" + pattern); err == nil {
			m.fileRe = fre
			m.chunk = 4096
			if p, err := syntax.Parse("(?m"+flags+")"+pattern, syntax.Perl); err == nil {
				if prog, err := syntax.Compile(p.Simplify()); err == nil && len(prog.Inst) <= 500 {
					// regexp's limit is 256K bits of visited state.
					m.chunk = max(256, 256*1024/len(prog.Inst)-1)
				}
			}
		}
	}
	return m, nil
}

// maxScanProb is the largest chance of a candidate per byte for which a
// class scan is used: above it, nearly every line would be a candidate.
const maxScanProb = 0.05

// litProb is the chance that lit starts at a given byte of typical text.
func litProb(lit []byte, fold bool) float64 {
	logp := 0.0
	for _, c := range lit {
		p := byteFreq(c)
		if fold && 'a' <= c && c <= 'z' {
			p += byteFreq(c - 'a' + 'A')
		}
		logp += math.Log(p)
	}
	return math.Exp(logp)
}

// requiredLiteral returns a literal that every match of re contains, the
// longest it can find, lower-cased when it is matched without case (then
// only ASCII).
func requiredLiteral(re *syntax.Regexp) (string, bool, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		// Keep the longest run of runes that match only themselves, as
		// bytes: not U+FFFD, which also matches an invalid byte, and with
		// fold only runes whose case variants are all ASCII, as only
		// ASCII is lowered in the copy searched (not k or s, which fold
		// to U+212A and U+017F).
		fold := re.Flags&syntax.FoldCase != 0
		best, start := "", 0
		for i := 0; i <= len(re.Rune); i++ {
			if i < len(re.Rune) && re.Rune[i] != utf8.RuneError && (!fold || asciiFold(re.Rune[i])) {
				continue
			}
			if run := string(re.Rune[start:i]); len(run) > len(best) {
				best = run
			}
			start = i + 1
		}
		if best == "" {
			return "", false, false
		}
		if fold {
			return strings.ToLower(best), true, true
		}
		return best, false, true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best, bestFold, found := "", false, false
		for _, s := range re.Sub {
			l, f, ok := requiredLiteral(s)
			if !ok {
				continue
			}
			// Prefer exact literals, then longer ones.
			if !found || (bestFold && !f && len(l) >= 2) || (f == bestFold && len(l) > len(best)) {
				best, bestFold, found = l, f, true
			}
		}
		return best, bestFold, found
	}
	return "", false, false
}

// asciiFold reports whether r and all its case variants are ASCII.
func asciiFold(r rune) bool {
	for f := r; ; {
		if f >= utf8.RuneSelf {
			return false
		}
		if f = unicode.SimpleFold(f); f == r {
			return true
		}
	}
}

// lowerASCII writes the ASCII-lower-cased src into dst (same length),
// eight bytes at a time.
func lowerASCII(dst, src []byte) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		h := x &^ high
		ge := h + (0x80-'A')*ones      // bit 7 set where the byte is >= 'A'
		gt := h + (0x80-'Z'-1)*ones    // bit 7 set where the byte is > 'Z'
		mask := (ge &^ gt) &^ x & high // upper-case ASCII letters
		binary.LittleEndian.PutUint64(dst[i:], x|mask>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// lineAt returns the bounds of the line around i, without its newline.
func lineAt(buf []byte, i int) (int, int) {
	s := bytes.LastIndexByte(buf[:i], '\n') + 1
	e := bytes.IndexByte(buf[i:], '\n')
	if e < 0 {
		e = len(buf)
	} else {
		e += i
	}
	return s, e
}

// matchLines calls found with the start and end of each matching line (or,
// in multiline mode, of each match), in order, until it returns false.
// scratch is a buffer for the lowered copy.
func (m *matcher) matchLines(buf []byte, scratch *[]byte, found func(s, e int) bool) {
	scan := m.scan
	if m.narrow != nil && !containsAny(buf, m.absent) {
		scan = m.narrow
	}
	if m.multiline {
		if st := newScanState(); scan != nil && scan.find(buf, 0, &st) < 0 {
			return
		}
		if m.lit != nil && !m.containsLit(buf, scratch) {
			return
		}
		for _, loc := range m.re.FindAllIndex(buf, -1) {
			if !found(loc[0], loc[1]) {
				return
			}
		}
		return
	}
	if m.lit != nil {
		hay := buf
		if m.fold {
			if cap(*scratch) < len(buf) {
				*scratch = make([]byte, len(buf), len(buf)+len(buf)/4)
			}
			hay = (*scratch)[:len(buf)]
			lowerASCII(hay, buf)
		}
		pos := 0
		for pos <= len(buf) {
			i := m.indexLit(hay, pos)
			if i < 0 {
				return
			}
			s, e := lineAt(buf, i)
			if m.pure || m.re.Match(buf[s:e]) {
				if !found(s, e) {
					return
				}
			}
			pos = e + 1
		}
		return
	}
	if scan != nil {
		// The scan's classes hold no newline: what it finds lies within
		// one line, and every matching line holds what it finds.
		pos, st := 0, newScanState()
		for pos < len(buf) {
			i := scan.find(buf, pos, &st)
			if i < 0 {
				return
			}
			s, e := lineAt(buf, i)
			if m.re.Match(buf[s:e]) && !found(s, e) {
				return
			}
			pos = e + 1
		}
		return
	}
	pos := 0
	for pos <= len(buf) {
		if m.fileRe != nil {
			// Find the next piece of whole lines that has a match.
			end := len(buf)
			if end-pos > m.chunk {
				end = pos + m.chunk
				if nl := bytes.LastIndexByte(buf[pos:end], '\n'); nl >= 0 {
					end = pos + nl
				} else if nl := bytes.IndexByte(buf[end:], '\n'); nl >= 0 {
					end += nl
				} else {
					end = len(buf)
				}
			}
			loc := m.fileRe.FindIndex(buf[pos:end])
			if loc == nil {
				pos = end + 1
				continue
			}
			s, e := lineAt(buf, pos+loc[0])
			if m.re.Match(buf[s:e]) && !found(s, e) {
				return
			}
			pos = e + 1
			continue
		}
		e := bytes.IndexByte(buf[pos:], '\n')
		if e < 0 {
			e = len(buf)
		} else {
			e += pos
		}
		if m.re.Match(buf[pos:e]) && !found(pos, e) {
			return
		}
		pos = e + 1
	}
}

// containsAny reports whether buf contains one of subs.
func containsAny(buf []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(buf, s) {
			return true
		}
	}
	return false
}

func (m *matcher) containsLit(buf []byte, scratch *[]byte) bool {
	if !m.fold {
		return m.indexLit(buf, 0) >= 0
	}
	if cap(*scratch) < len(buf) {
		*scratch = make([]byte, len(buf))
	}
	hay := (*scratch)[:len(buf)]
	lowerASCII(hay, buf)
	return m.indexLit(hay, 0) >= 0
}

// maxRareLitProb is the largest share of text the rarest byte of a literal
// may have for indexLit to look for it rather than use bytes.Index, which
// looks for the first byte and, when that stops too often, compares the
// whole literal at every position with vector instructions.
const maxRareLitProb = 0.01

// rareLitByte returns the index of the rarest byte of lit (lower-case
// ASCII, matched without case, with fold), or -1 when bytes.Index does as
// well: even the rarest byte is common, or the first byte is nearly as
// rare.
func rareLitByte(lit []byte, fold bool) int {
	freq := func(c byte) float64 {
		p := byteFreq(c)
		if fold && 'a' <= c && c <= 'z' {
			p += byteFreq(c - 'a' + 'A')
		}
		return p
	}
	best, bestP := -1, maxRareLitProb
	for i, c := range lit {
		if p := freq(c); p < bestP {
			best, bestP = i, p
		}
	}
	if best < 0 || freq(lit[0]) < 4*bestP {
		return -1
	}
	return best
}

// indexLit returns the index of the first m.lit in hay[from:], or -1. It
// looks for the literal's rarest byte with bytes.IndexByte and compares
// the rest there: bytes.Index looks for the first byte, often a common
// one ("e" of "errors.New").
func (m *matcher) indexLit(hay []byte, from int) int {
	lit, k := m.lit, m.rareAt
	if k < 0 {
		if i := bytes.Index(hay[from:], lit); i >= 0 {
			return from + i
		}
		return -1
	}
	c := lit[k]
	for pos := from + k; pos < len(hay); {
		j := bytes.IndexByte(hay[pos:], c)
		if j < 0 {
			return -1
		}
		s := pos + j - k
		if s+len(lit) > len(hay) {
			return -1
		}
		if bytes.Equal(hay[s:s+len(lit)], lit) {
			return s
		}
		pos += j + 1
	}
	return -1
}

// Grep searches file contents under args.Path for args.Pattern. Files are
// read a piece at a time, in memory that does not grow with their size
// (see scan.go): binary files (a NUL byte in the first 8 KiB) are read no
// further than their first piece, lines longer than 1 MiB are searched in
// their first 1 MiB, and files over 128 MiB are skipped and counted in
// GrepResult.TooLarge.
func Grep(ctx context.Context, roots Roots, args GrepArgs) (GrepResult, error) {
	if args.Pattern == "" {
		return GrepResult{}, fmt.Errorf("grep: pattern is empty")
	}
	mode := strings.TrimSpace(args.OutputMode)
	switch mode {
	case "":
		mode = ModeFiles
	case ModeContent, ModeFiles, ModeCount:
	case "files":
		mode = ModeFiles
	default:
		return GrepResult{}, fmt.Errorf("grep: output_mode %q is not content, files_with_matches or count", args.OutputMode)
	}
	m, err := newMatcher(args.Pattern, args.CaseInsensitive, args.Multiline)
	if err != nil {
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	before, after := args.Before, args.After
	if args.Context > 0 {
		before, after = max(before, args.Context), max(after, args.Context)
	}
	if before < 0 || after < 0 {
		return GrepResult{}, fmt.Errorf("grep: context lines cannot be negative")
	}
	before, after = min(before, MaxContext), min(after, MaxContext)
	lineNumbers := args.LineNumbers == nil || *args.LineNumbers
	limit := args.HeadLimit
	if limit <= 0 {
		limit = DefaultHeadLimit
	}
	limit = min(limit, MaxHeadLimit)
	keep := func(rel, name string) bool { return true }
	if g := strings.TrimSpace(args.Glob); g != "" {
		g = strings.TrimPrefix(g, "./")
		if err := checkGlob(g); err != nil {
			return GrepResult{}, fmt.Errorf("grep: glob: %w", err)
		}
		if !doublestar.ValidatePattern(g) {
			return GrepResult{}, fmt.Errorf("grep: glob %q is not a valid pattern", args.Glob)
		}
		if strings.Contains(g, "/") {
			keep = func(rel, _ string) bool { return doublestar.MatchUnvalidated(g, rel) }
		} else {
			keep = func(_, name string) bool { return doublestar.MatchUnvalidated(g, name) }
		}
	}
	if t := strings.TrimSpace(args.Type); t != "" {
		tm, err := typeMatcher(t)
		if err != nil {
			return GrepResult{}, fmt.Errorf("grep: %w", err)
		}
		prev := keep
		keep = func(rel, name string) bool { return tm(name) && prev(rel, name) }
	}
	start, err := roots.open(args.Path, true)
	if err != nil {
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	defer start.close()
	startAbs := roots.abs(start.root, start.names)
	g := &grepper{roots: roots, m: m, mode: mode, before: before, after: after, numbers: lineNumbers, chunk: readChunk, maxLine: maxLineBytes}
	if err := g.run(ctx, roots, start, startAbs, keep, args.IncludeIgnored); err != nil {
		return GrepResult{}, fmt.Errorf("grep: %w", err)
	}
	res := GrepResult{Mode: mode, HeadLimit: limit, Files: g.files, Truncated: g.truncated, Searched: g.searched.Load(), TooLarge: g.tooLarge.Load()}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return res, nil
}

// run searches the file or folder start (at startAbs), keeping the files
// of a folder for which keep is true.
func (g *grepper) run(ctx context.Context, roots Roots, start *place, startAbs string, keep func(rel, name string) bool, noIgnore bool) error {
	if start.file != nil {
		st := statePool.Get().(*readState)
		g.search(start.file, startAbs, st)
		putState(st)
		return nil
	}
	return walk(ctx, walkOptions{roots: roots, start: start, absDir: startAbs, noIgnore: noIgnore}, func(e entry) bool {
		if !e.typ.IsRegular() || !keep(e.rel, e.name) {
			return true
		}
		file, err := e.open()
		if err != nil {
			return true
		}
		st := statePool.Get().(*readState)
		g.search(file, e.abs, st)
		putState(st)
		file.close()
		return true
	})
}

var nl = []byte{'\n'}
