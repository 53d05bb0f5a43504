package files

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// This file reads and searches one file for grep. A file is read a piece
// at a time into a buffer of bounded size and searched a run of whole
// lines at a time (a region), so memory does not grow with the file: its
// first piece is checked for NUL bytes, and a binary file is read no
// further; a line too long for the buffer is searched in its first
// maxLineBytes and the rest of it skipped. In multiline mode a match may
// span any number of lines, so the file is read whole, up to
// maxMultilineBytes.

// Reading limits.
const (
	// readChunk is the size of a fresh read buffer: most files fit in
	// one.
	readChunk = 256 << 10
	// maxLineBytes bounds one line: the buffer grows to hold a line up to
	// this long, and a longer one is searched in its first maxLineBytes.
	maxLineBytes = 1 << 20
	// maxMultilineBytes: in multiline mode files are read whole, and
	// larger ones are skipped.
	maxMultilineBytes = 16 << 20
)

// readState is one worker's buffers.
type readState struct {
	buf     []byte // read buffer, at most maxLineBytes long but in multiline mode
	scratch []byte // a lowered copy of a region, for case-insensitive literals
}

// statePool holds readStates between files and calls.
var statePool = sync.Pool{New: func() any { return &readState{buf: make([]byte, readChunk)} }}

// putState returns st to the pool, unless a whole file made it large.
func putState(st *readState) {
	if len(st.buf) > maxLineBytes {
		st.buf = make([]byte, readChunk)
	}
	if cap(st.scratch) > maxLineBytes {
		st.scratch = nil
	}
	statePool.Put(st)
}

// A grepper runs one grep: the compiled pattern, what to print, and what
// was found.
type grepper struct {
	roots         Roots
	m             *matcher
	mode          string
	before, after int
	numbers       bool
	// chunk and maxLine are readChunk and maxLineBytes, smaller in tests.
	chunk, maxLine int

	mu        sync.Mutex
	files     []GrepFile
	truncated bool
	collected atomic.Int64 // content lines kept
	searched  atomic.Int64 // files read
	tooLarge  atomic.Int64 // files skipped for their size
	bytesRead atomic.Int64
}

// search reads the open file f (at abs) and records what matches.
func (g *grepper) search(f *fileFD, abs string, st *readState) {
	size := f.size()
	limit := int64(maxFileBytes)
	if g.m.multiline {
		limit = maxMultilineBytes
	}
	if size > limit {
		g.tooLarge.Add(1)
		return
	}
	r := lineReader{f: f, left: size, buf: st.buf}
	if g.chunk != readChunk {
		r.buf = make([]byte, g.chunk)
	}
	if g.m.multiline && int64(len(r.buf)) < size {
		// A match may span the whole file.
		r.buf = make([]byte, size)
	}
	defer func() {
		st.buf = r.buf[:cap(r.buf)]
		g.bytesRead.Add(r.read)
	}()

	r.fill()
	if r.err != nil && r.err != io.EOF {
		return
	}
	g.searched.Add(1)
	if bytes.IndexByte(r.buf[:min(r.n, binarySniff)], 0) >= 0 {
		return
	}
	var out GrepFile
	var w *contentWriter
	if g.mode == ModeContent {
		w = &contentWriter{path: g.roots.Display(abs), before: g.before, after: g.after, numbers: g.numbers, last: -1}
	}
	lineNo := 0       // lines before the buffer's start
	skipping := false // in a line cut at maxLine: drop the rest of it
	for {
		data := r.buf[:r.n]
		if skipping {
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 {
				if r.eof() {
					break
				}
				r.n = 0
				r.fill()
				continue
			}
			r.n = copy(r.buf, data[nl+1:])
			skipping = false
			continue
		}
		eof := r.eof()
		var region []byte
		consumed := 0
		switch nl := bytes.LastIndexByte(data, '\n'); {
		case eof:
			region, consumed = data, len(data)
		case r.n < len(r.buf):
			// Room is left: read more before deciding.
			r.fill()
			continue
		case nl >= 0:
			region, consumed = data[:nl], nl+1
		case len(r.buf) < g.maxLine:
			// One line fills the buffer: make room for more of it.
			bigger := make([]byte, min(2*len(r.buf), g.maxLine))
			copy(bigger, data)
			r.buf = bigger
			r.fill()
			continue
		default:
			region, consumed, skipping = data, len(data), true
		}
		more, cut := g.searchRegion(region, lineNo, eof, &out, w, st)
		if cut && len(w.lines) == 0 {
			// Nothing of this file could be kept.
			return
		}
		if !more || eof {
			break
		}
		lineNo += bytes.Count(region, nl) + 1
		r.n = copy(r.buf, data[consumed:])
		r.fill()
	}
	if out.Count == 0 {
		return
	}
	out.Path = g.roots.Display(abs)
	if w != nil {
		out.Lines = w.lines
	}
	g.mu.Lock()
	g.files = append(g.files, out)
	g.mu.Unlock()
}

// searchRegion searches one region of whole lines, the first of them line
// first (0-based) of the file; eof says it ends the file. more is false
// when the rest of the file need not be searched; cut is true when the
// content lines found could not be kept, as too many were.
func (g *grepper) searchRegion(region []byte, first int, eof bool, out *GrepFile, w *contentWriter, st *readState) (more, cut bool) {
	var spans [][2]int
	stop := false
	g.m.matchLines(region, &st.scratch, func(s, e int) bool {
		out.Count++
		switch g.mode {
		case ModeFiles:
			stop = true
			return false
		case ModeContent:
			spans = append(spans, [2]int{s, e})
		}
		return true
	})
	if stop {
		return false, false
	}
	if w == nil {
		return true, false
	}
	if len(spans) > 0 && g.collected.Add(int64(len(spans)*(1+g.before+g.after))) > maxCollected {
		g.mu.Lock()
		g.truncated = true
		g.mu.Unlock()
		return false, true
	}
	w.add(region, first, spans, eof)
	return true, false
}

// A lineReader reads a file into buf, never past the size the file had
// when it was opened: a file that grows while it is read is searched as it
// was.
type lineReader struct {
	f    io.Reader
	left int64  // bytes still to read
	buf  []byte // buf[:n] holds what was read and not yet searched
	n    int
	read int64 // bytes read in all
	err  error // the read error that ended the file, io.EOF at its end
}

// fill reads until buf is full or the file ends.
func (r *lineReader) fill() {
	for r.n < len(r.buf) && r.left > 0 && r.err == nil {
		want := int(min(int64(len(r.buf)-r.n), r.left))
		k, err := r.f.Read(r.buf[r.n : r.n+want])
		r.n += k
		r.left -= int64(k)
		r.read += int64(k)
		if err != nil {
			r.err = err
		}
	}
}

// eof reports whether nothing more will be read.
func (r *lineReader) eof() bool { return r.left <= 0 || r.err != nil }

// A contentWriter prints a file's matching lines with their context, one
// region after another. Lines are known by their number in the file
// (0-based) and, within a region, by their start.
type contentWriter struct {
	path          string
	before, after int
	numbers       bool

	lines     []string   // the output: "path:N:text", "path-N-text" and "--"
	last      int        // the last line printed, -1 before any
	afterLeft int        // context lines still due after the last match
	tail      []tailLine // the last lines of the regions before, for context
}

// A tailLine is a line of an earlier region, kept as context for a match
// at the start of the next.
type tailLine struct {
	n    int
	text string
}

// emit prints line n with text; sep is ":" for a match, "-" for context.
func (w *contentWriter) emit(n int, text, sep string) {
	if w.numbers {
		w.lines = append(w.lines, w.path+sep+strconv.Itoa(n+1)+sep+text)
	} else {
		w.lines = append(w.lines, w.path+sep+text)
	}
	w.last = n
}

// lineText is how a line is printed: without its "\r", cut to
// maxLineChars, with invalid UTF-8 replaced.
func lineText(t []byte) string {
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

// add prints the matches of one region: spans are the matches' bounds
// within it, in order; first is the number of its first line; eof says it
// ends the file (a region that does not leaves out the newline that ends
// its last line).
func (w *contentWriter) add(region []byte, first int, spans [][2]int, eof bool) {
	type line struct{ n, s int }
	end := func(s int) int {
		if e := bytes.IndexByte(region[s:], '\n'); e >= 0 {
			return s + e
		}
		return len(region)
	}
	next := func(l line) (line, bool) {
		e := end(l.s)
		// At the end of the file, the empty rest after the last
		// newline is no line.
		if e >= len(region) || (eof && e+1 >= len(region)) {
			return l, false
		}
		return line{l.n + 1, e + 1}, true
	}
	prev := func(l line) (line, bool) {
		if l.s == 0 {
			return l, false
		}
		return line{l.n - 1, bytes.LastIndexByte(region[:l.s-1], '\n') + 1}, true
	}
	text := func(l line) string { return lineText(region[l.s:end(l.s)]) }

	// The matching lines, in order, without repeats. Line numbers are
	// counted forward from the previous span.
	cur := line{first, 0}
	lineAtOff := func(off int) line {
		cur.n += bytes.Count(region[cur.s:off], nl)
		cur.s = bytes.LastIndexByte(region[:off], '\n') + 1
		return cur
	}
	var matches []line
	for _, sp := range spans {
		if sp[0] < cur.s && len(matches) > 0 {
			continue
		}
		l := lineAtOff(sp[0])
		if len(matches) == 0 || l.n > matches[len(matches)-1].n {
			matches = append(matches, l)
		}
		// A multiline match covers every line it spans.
		for sp[1] > 0 && end(l.s) < sp[1]-1 {
			nx, ok := next(l)
			if !ok {
				break
			}
			l = nx
			matches = append(matches, l)
			cur = l
		}
	}

	// Context still due after a match in an earlier region.
	if w.afterLeft > 0 {
		stopAt := -1
		if len(matches) > 0 {
			stopAt = matches[0].n
		}
		for l, ok := (line{first, 0}), true; ok && w.afterLeft > 0 && l.n != stopAt; l, ok = next(l) {
			w.emit(l.n, text(l), "-")
			w.afterLeft--
		}
	}
	for i, m := range matches {
		// Context before, not repeating what was printed: from this
		// region, then from the lines kept from earlier ones.
		var pre []tailLine
		l := m
		for len(pre) < w.before {
			p, ok := prev(l)
			if !ok {
				break
			}
			if p.n <= w.last {
				break
			}
			pre = append(pre, tailLine{p.n, text(p)})
			l = p
		}
		if l.s == 0 && len(pre) < w.before {
			for k := len(w.tail) - 1; k >= 0 && len(pre) < w.before; k-- {
				t := w.tail[k]
				if t.n >= l.n || t.n <= w.last {
					break
				}
				pre = append(pre, t)
			}
		}
		firstN := m.n
		if len(pre) > 0 {
			firstN = pre[len(pre)-1].n
		}
		if w.last >= 0 && firstN > w.last+1 {
			w.lines = append(w.lines, "--")
		}
		for k := len(pre) - 1; k >= 0; k-- {
			w.emit(pre[k].n, pre[k].text, "-")
		}
		w.emit(m.n, text(m), ":")
		// Context after, up to the next match or the region's end.
		w.afterLeft = w.after
		for l := m; w.afterLeft > 0; {
			nx, ok := next(l)
			if !ok || (i+1 < len(matches) && nx.n >= matches[i+1].n) {
				break
			}
			w.emit(nx.n, text(nx), "-")
			w.afterLeft--
			l = nx
		}
	}
	if eof || w.before == 0 {
		return
	}
	// Keep the region's last lines for a match at the start of the next.
	lastLine := line{first + bytes.Count(region, nl), bytes.LastIndexByte(region, '\n') + 1}
	var kept []tailLine
	for l, ok := lastLine, true; ok && len(kept) < w.before; l, ok = prev(l) {
		kept = append(kept, tailLine{l.n, text(l)})
	}
	// kept runs backwards; older lines come from the tail before.
	for k := len(w.tail) - 1; k >= 0 && len(kept) < w.before; k-- {
		if w.tail[k].n < kept[len(kept)-1].n {
			kept = append(kept, w.tail[k])
		}
	}
	w.tail = w.tail[:0]
	for k := len(kept) - 1; k >= 0; k-- {
		w.tail = append(w.tail, kept[k])
	}
}
