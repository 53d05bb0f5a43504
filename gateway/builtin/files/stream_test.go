package files

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wholeContent is how grep printed a file's matches when it read files
// whole: the matching spans of data with context, as "path:N:text" for
// matching lines, "path-N-text" for context lines and "--" between groups
// that are not adjacent. It is the reference the streamed output must
// equal.
func wholeContent(path string, data []byte, spans [][2]int, before, after int, numbers bool) []string {
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
	text := func(l line) string { return lineText(data[l.s:end(l.s)]) }
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

// grepWhole greps data read whole, as grep did before it streamed files.
func grepWhole(m *matcher, mode string, data []byte, before, after int) GrepFile {
	var f GrepFile
	var spans [][2]int
	var scratch []byte
	m.matchLines(data, &scratch, func(s, e int) bool {
		f.Count++
		if mode == ModeFiles {
			return false
		}
		spans = append(spans, [2]int{s, e})
		return true
	})
	if mode == ModeContent && f.Count > 0 {
		f.Lines = wholeContent("f.txt", data, spans, before, after, true)
	}
	return f
}

// grepStream greps the file f.txt holding data with a read buffer of
// chunk bytes that may grow to maxLine.
func grepStream(t testing.TB, m *matcher, mode string, data []byte, before, after, chunk, maxLine int) (GrepFile, *grepper) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return grepPath(t, m, mode, dir, "f.txt", before, after, chunk, maxLine)
}

// grepPath greps path under the root dir with the given buffer sizes and
// returns what it found in one file and the grepper, for its counters.
func grepPath(t testing.TB, m *matcher, mode, dir, path string, before, after, chunk, maxLine int) (GrepFile, *grepper) {
	t.Helper()
	roots := mustRoots(t, dir)
	start, err := roots.open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer start.close()
	g := &grepper{roots: roots, m: m, mode: mode, before: before, after: after, numbers: true, chunk: chunk, maxLine: maxLine}
	if err := g.run(context.Background(), roots, start, roots.abs(start.root, start.names), func(string, string) bool { return true }, true); err != nil {
		t.Fatal(err)
	}
	if len(g.files) > 1 {
		t.Fatalf("%d files found", len(g.files))
	}
	if len(g.files) == 0 {
		return GrepFile{}, g
	}
	f := g.files[0]
	f.Path = ""
	return f, g
}

// streamCase checks that grep reading data in pieces of every given size
// prints what it printed reading data whole.
func streamCase(t *testing.T, pattern string, fold, multiline bool, mode string, data []byte, before, after int) {
	t.Helper()
	m, err := newMatcher(pattern, fold, multiline)
	if err != nil {
		return
	}
	want := grepWhole(m, mode, data, before, after)
	for _, chunk := range []int{1, 2, 3, 7, 16, 61, 4096} {
		got, _ := grepStream(t, m, mode, data, before, after, chunk, max(len(data), 1))
		if got.Count != want.Count || !slices.Equal(got.Lines, want.Lines) {
			t.Fatalf("pattern %q, mode %s, context -%d+%d, read %d bytes at a time, on %q:\ngot  %d %q\nwant %d %q",
				pattern, mode, before, after, chunk, data, got.Count, got.Lines, want.Count, want.Lines)
		}
	}
}

// TestGrepStreamsAsWhole: reading a file in pieces, however small, finds
// and prints what reading it whole does: line numbers, context across
// pieces, separators, counts.
func TestGrepStreamsAsWhole(t *testing.T) {
	t.Parallel()
	text := "alpha\nbeta needle\n\ngamma\nneedle delta\nepsilon\nzeta\neta\ntheta needle\niota\r\nkappa\n"
	for _, tc := range []struct {
		pattern       string
		fold, multi   bool
		before, after int
		data          string
	}{
		{pattern: "needle", data: text},
		{pattern: "needle", before: 2, after: 1, data: text},
		{pattern: "needle", before: 20, after: 20, data: text},
		{pattern: "NEEDLE", fold: true, before: 1, after: 3, data: text},
		{pattern: `^\w{4}$`, before: 1, data: text},
		{pattern: `^$`, after: 1, data: text},
		{pattern: `^$`, data: "a\n\n\nb\n"},
		{pattern: `^$`, data: ""},
		{pattern: `a`, data: "no newline at the end a"},
		{pattern: `ta\s+[a-z]+`, multi: true, before: 1, after: 1, data: text},
		{pattern: `(?s)beta.*gamma`, multi: true, after: 2, data: text},
		{pattern: `kappa`, before: 2, data: text},
		{pattern: `[0-9]{3}`, before: 1, after: 1, data: "x\n123\ny\nz\n456\n"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []string{ModeContent, ModeCount, ModeFiles} {
				streamCase(t, tc.pattern, tc.fold, tc.multi, mode, []byte(tc.data), tc.before, tc.after)
			}
		})
	}
}

// FuzzGrepStream compares grep reading a file in pieces with grep reading
// it whole, on any text, pattern and context.
func FuzzGrepStream(f *testing.F) {
	f.Add("needle", "a\nneedle\nb\nc needle\n\nd\n", false, false, uint8(1), uint8(2))
	f.Add(`^$`, "\n\n\n", false, false, uint8(0), uint8(1))
	f.Add(`(?i)x.y`, "x\nY\nxzY\n", true, true, uint8(3), uint8(0))
	f.Add(`[a-c]+[0-9]`, "ab1\r\nzz\nc2 c3\n", false, false, uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, pattern, text string, fold, multi bool, before, after uint8) {
		// A NUL makes the file binary, checked on the first piece only.
		data := []byte(strings.ReplaceAll(text, "\x00", ""))
		streamCase(t, pattern, fold, multi, ModeContent, data, int(before%4), int(after%4))
	})
}

// TestGrepRandomStreams runs the comparison on random lines of words.
func TestGrepRandomStreams(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"needle", "hay", "", "stack", "NEEDLE", "x1", "needles", "\r"}
	for i := range 40 {
		var b strings.Builder
		for range rng.IntN(30) {
			for range rng.IntN(4) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
		if i%3 == 0 {
			b.WriteString("needle at the end")
		}
		streamCase(t, "needle", i%2 == 0, false, ModeContent, []byte(b.String()), rng.IntN(4), rng.IntN(4))
		streamCase(t, `^(hay )?x1`, false, false, ModeContent, []byte(b.String()), rng.IntN(3), rng.IntN(3))
	}
}

// TestGrepLongLine: a line longer than the buffer may grow to is searched
// in its first part, its rest skipped, and the lines after it keep their
// numbers.
func TestGrepLongLine(t *testing.T) {
	t.Parallel()
	long := "needle " + strings.Repeat("x", 500) + " late-needle"
	data := []byte("one\n" + long + "\nthree needle\n" + long)
	m, err := newMatcher("needle", false, false)
	if err != nil {
		t.Fatal(err)
	}
	got, g := grepStream(t, m, ModeContent, data, 0, 0, 16, 64)
	want := []string{"f.txt:2:needle " + strings.Repeat("x", 57), "f.txt:3:three needle", "f.txt:4:needle " + strings.Repeat("x", 57)}
	if !slices.Equal(got.Lines, want) || got.Count != 3 {
		t.Fatalf("got %d %q, want %q", got.Count, got.Lines, want)
	}
	if g.bytesRead.Load() != int64(len(data)) {
		t.Errorf("read %d bytes of %d", g.bytesRead.Load(), len(data))
	}
}

// TestGrepLargeFiles greps a 64 MiB text file with its only match on its
// last line and a 64 MiB binary file: memory stays far below the files'
// size, the match has its line number, and the binary file is read no
// further than its first piece. Not parallel: it measures the heap.
func TestGrepLargeFiles(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	line := []byte("an ordinary line of text, nothing to find here\n")
	text := bytes.Repeat(line, size/len(line))
	text = append(text, "the needle is here\n"...)
	lines := bytes.Count(text, nl)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := append([]byte("\x00\x01\x02"), text...)
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	text, bin = nil, nil
	roots := mustRoots(t, dir)
	for _, tc := range []struct {
		path, mode string
		want       string
	}{
		{"big.bin", ModeFiles, "No matches (1 files searched)."},
		{"big.txt", ModeContent, "big.txt:" + strconv.Itoa(lines) + ":the needle is here"},
		{"big.txt", ModeCount, "big.txt:1\n(1 matches in 1 files)"},
		{"", ModeFiles, "big.txt"},
	} {
		// Two collections empty the buffer pools: every case starts
		// from nothing.
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Grep(context.Background(), roots, GrepArgs{Pattern: "needle", Path: tc.path, OutputMode: tc.mode})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.String(); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.path, tc.mode, got, tc.want)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		if alloc > 8<<20 {
			t.Errorf("%s %s: %d MiB allocated to grep %d MiB", tc.path, tc.mode, alloc>>20, size>>20)
		}
		t.Logf("%s %s: %d KiB allocated", tc.path, tc.mode, alloc>>10)
	}
	m, err := newMatcher("needle", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, g := grepPath(t, m, ModeFiles, dir, "big.bin", 0, 0, readChunk, maxLineBytes); g.bytesRead.Load() > readChunk {
		t.Errorf("read %d bytes of a binary file", g.bytesRead.Load())
	}
}

// TestGrepTooLarge: files over the size limits are not searched, and the
// answer says how many there were.
func TestGrepTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Sparse files, text in the part checked for NUL bytes and zeros
	// after it.
	head := append(bytes.Repeat([]byte("hay\n"), binarySniff/4), "needle\n"...)
	for name, size := range map[string]int64{"huge.txt": maxFileBytes + 1, "mid.txt": maxMultilineBytes + 1} {
		if err := os.WriteFile(filepath.Join(dir, name), head, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
			t.Fatal(err)
		}
	}
	roots := mustRoots(t, dir)
	for _, tc := range []struct {
		args GrepArgs
		want string
	}{
		{GrepArgs{Pattern: "needle", Path: "huge.txt"}, "No matches (0 files searched). (1 files not searched: larger than 128 MiB, or 16 MiB in multiline mode)"},
		{GrepArgs{Pattern: "needle", Multiline: true}, "No matches (0 files searched). (2 files not searched: larger than 128 MiB, or 16 MiB in multiline mode)"},
		{GrepArgs{Pattern: "needle", OutputMode: ModeCount}, "mid.txt:1\n(1 matches in 1 files)\n(1 files not searched: larger than 128 MiB, or 16 MiB in multiline mode)"},
	} {
		res, err := Grep(context.Background(), roots, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.String(); got != tc.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

// BenchmarkGrepLargeFile greps a 64 MiB file with its match at the end;
// run with -benchmem to see that memory per call does not follow the
// file's size.
func BenchmarkGrepLargeFile(b *testing.B) {
	dir := b.TempDir()
	line := []byte("an ordinary line of text, nothing to find here\n")
	text := append(bytes.Repeat(line, (64<<20)/len(line)), "the needle is here\n"...)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), text, 0o644); err != nil {
		b.Fatal(err)
	}
	roots := mustRoots(b, dir)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Grep(context.Background(), roots, GrepArgs{Pattern: "needle", OutputMode: ModeContent})
		if err != nil || len(res.Files) != 1 {
			b.Fatalf("%v, %v", res, err)
		}
	}
}
