package files

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// maxFileBytes: larger files are skipped.
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
	// relative to Path) matches this doublestar pattern.
	Glob string `json:"glob,omitempty"`
	// Type keeps files of one type ("go", "py", "ts", ...).
	Type string `json:"type,omitempty"`
	// OutputMode is ModeFiles (default), ModeContent or ModeCount.
	OutputMode string `json:"output_mode,omitempty"`
	// CaseInsensitive ignores case.
	CaseInsensitive bool `json:"case_insensitive,omitempty"`
	// Multiline lets matches span lines, with "." matching newlines.
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
	Truncated bool  // content was dropped to bound memory
}

// String renders the result for a model.
func (r GrepResult) String() string {
	var b strings.Builder
	if len(r.Files) == 0 {
		fmt.Fprintf(&b, "No matches (%d files searched).", r.Searched)
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

// readFile reads the open file f into buf (grown as needed) and returns
// its bytes, or nil for a file that is too large or cannot be read. It
// reads what fstat announced when the file was opened: a file that grows
// while it is read is searched as it was.
func readFile(f *fileFD, buf *[]byte) []byte {
	size := f.size()
	if size > maxFileBytes {
		return nil
	}
	if cap(*buf) < int(size)+1 {
		*buf = make([]byte, 0, size+size/8+512)
	}
	b := (*buf)[:size]
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil
	}
	return b[:n]
}

// bufPool holds read buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Grep searches file contents under args.Path for args.Pattern.
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
	res := GrepResult{Mode: mode, HeadLimit: limit}
	var (
		mu        sync.Mutex
		collected atomic.Int64
		searched  atomic.Int64
	)
	search := func(file *fileFD, abs string, buf, scratch *[]byte) {
		data := readFile(file, buf)
		if data == nil {
			return
		}
		searched.Add(1)
		if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
			return
		}
		var f GrepFile
		var spans [][2]int
		m.matchLines(data, scratch, func(s, e int) bool {
			f.Count++
			if mode == ModeFiles {
				return false
			}
			if mode == ModeContent {
				spans = append(spans, [2]int{s, e})
			}
			return true
		})
		if f.Count == 0 {
			return
		}
		f.Path = roots.Display(abs)
		if mode == ModeContent {
			if collected.Add(int64(len(spans)*(1+before+after))) > maxCollected {
				mu.Lock()
				res.Truncated = true
				mu.Unlock()
				return
			}
			f.Lines = formatContent(f.Path, data, spans, before, after, lineNumbers)
		}
		mu.Lock()
		res.Files = append(res.Files, f)
		mu.Unlock()
	}
	if start.file != nil {
		bp := bufPool.Get().(*[]byte)
		var scratch []byte
		search(start.file, startAbs, bp, &scratch)
		bufPool.Put(bp)
	} else {
		type state struct {
			buf     *[]byte
			scratch []byte
		}
		states := sync.Pool{New: func() any { return &state{buf: bufPool.Get().(*[]byte)} }}
		err = walk(ctx, walkOptions{roots: roots, start: start, absDir: startAbs, noIgnore: args.IncludeIgnored}, func(e entry) bool {
			if !e.typ.IsRegular() || !keep(e.rel, e.name) {
				return true
			}
			file, err := e.open()
			if err != nil {
				return true
			}
			st := states.Get().(*state)
			search(file, e.abs, st.buf, &st.scratch)
			file.close()
			states.Put(st)
			return true
		})
		if err != nil {
			return GrepResult{}, fmt.Errorf("grep: %w", err)
		}
	}
	res.Searched = searched.Load()
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return res, nil
}

// formatContent prints the matching spans of one file with context, as
// "path:N:text" for matching lines, "path-N-text" for context lines and
// "--" between groups that are not adjacent. Spans are in order.
func formatContent(path string, data []byte, spans [][2]int, before, after int, numbers bool) []string {
	// A line is known by its number (0-based) and start offset.
	type line struct{ n, s int }
	// Line numbers are counted forward from the previous span.
	cur := line{0, 0}
	lineAtOff := func(off int) line {
		cur.n += bytes.Count(data[cur.s:off], nl)
		cur.s = bytes.LastIndexByte(data[:off], '\n') + 1
		return cur
	}
	end := func(s int) int {
		if e := bytes.IndexByte(data[s:], '\n'); e >= 0 {
			return s + e
		}
		return len(data)
	}
	next := func(l line) (line, bool) {
		e := end(l.s)
		if e >= len(data) || e+1 >= len(data) {
			return l, false
		}
		return line{l.n + 1, e + 1}, true
	}
	prev := func(l line) (line, bool) {
		if l.s == 0 {
			return l, false
		}
		return line{l.n - 1, bytes.LastIndexByte(data[:l.s-1], '\n') + 1}, true
	}
	text := func(l line) string {
		t := data[l.s:end(l.s)]
		t = bytes.TrimSuffix(t, []byte("\r"))
		if len(t) > maxLineChars {
			cut := maxLineChars
			for cut > 0 && !utf8.RuneStart(t[cut]) {
				cut--
			}
			return strings.ToValidUTF8(string(t[:cut]), "\uFFFD") + fmt.Sprintf("… (%d more characters)", len(t)-cut)
		}
		return strings.ToValidUTF8(string(t), "\uFFFD")
	}
	// The matching lines, in order, without repeats.
	var matches []line
	for _, sp := range spans {
		if sp[0] < cur.s && len(matches) > 0 {
			continue
		}
		first := lineAtOff(sp[0])
		if len(matches) == 0 || first.n > matches[len(matches)-1].n {
			matches = append(matches, first)
		}
		// A multiline match covers every line it spans.
		for l := first; sp[1] > 0 && end(l.s) < sp[1]-1; {
			nl, ok := next(l)
			if !ok {
				break
			}
			l = nl
			matches = append(matches, l)
			cur = l
		}
	}
	var out []string
	emit := func(l line, sep string) {
		if numbers {
			out = append(out, path+sep+strconv.Itoa(l.n+1)+sep+text(l))
		} else {
			out = append(out, path+sep+text(l))
		}
	}
	last := -1 // the last line printed
	for i, m := range matches {
		// Context before, not repeating what was printed.
		var pre []line
		for l, k := m, 0; k < before; k++ {
			p, ok := prev(l)
			if !ok || p.n <= last {
				break
			}
			pre = append(pre, p)
			l = p
		}
		firstN := m.n
		if len(pre) > 0 {
			firstN = pre[len(pre)-1].n
		}
		if last >= 0 && firstN > last+1 {
			out = append(out, "--")
		}
		for k := len(pre) - 1; k >= 0; k-- {
			emit(pre[k], "-")
		}
		emit(m, ":")
		last = m.n
		// Context after, up to the next match.
		for l, k := m, 0; k < after; k++ {
			nx, ok := next(l)
			if !ok || (i+1 < len(matches) && nx.n >= matches[i+1].n) {
				break
			}
			emit(nx, "-")
			last = nx.n
			l = nx
		}
	}
	return out
}

var nl = []byte{'\n'}
