package catalog

import (
	"unicode"
	"unicode/utf8"
)

// The o200k_base tokenizer first cuts text into pieces with a pattern,
// then encodes each piece with byte-pair merges. The tokenizer library
// cuts with a general regular-expression engine, which allocates a match
// for every piece and is most of the time a count takes. o200kSplit cuts
// the same pieces by hand, so that CountTokens can look up each piece's
// count and ask the library only for pieces it has not seen.
//
// The pattern has seven alternatives, tried in order at each position; the
// first that matches gives the piece, and the next piece starts where it
// ends:
//
//	0: P? U* W+ C?     a word, lower case last (with one mark of punctuation or space before it)
//	1: P? U+ W* C?     a word, upper case first
//	2: N{1,3}          up to three digits
//	3: ' '? X+ [\r\n/]* punctuation and symbols (a space before them)
//	4: \s* [\r\n]+     white space up to line breaks
//	5: \s+(?!\S)       white space, less its last character when a
//	                   non-space follows
//	6: \s+             white space
//
// where U is a letter (Lu, Lt, Lm, Lo) or mark (M), W a lower-case letter
// (Ll, Lm, Lo) or mark, P any character but a letter, a number, CR and LF,
// X any character but white space, a letter and a number, N a number, and
// C an English contraction ('s, 't, 're, 've, 'm, 'll, 'd, in either case,
// with ſ for s). Every quantifier is greedy and gives back what it took one
// character at a time when what follows fails, except for the ones the
// library's matcher takes whole: C, N{1,3}, ' '?, X+, [\r\n/]*, [\r\n]+
// and alternative 6. Two things are as the library does them rather than
// as the pattern reads: alternative 4 gives its white space back to the
// first line break of the run, not the last, and DEL (U+007F) is in
// neither P nor X, so that no alternative matches it and it is skipped.

// Classes of ASCII characters, as the library's matcher has them.
const (
	o200kU = 1 << iota // letter (not lower case) or mark
	o200kW             // lower-case letter or mark
	o200kP             // neither letter, number, CR nor LF
	o200kN             // number
	o200kS             // white space
	o200kX             // neither white space, letter nor number
)

// o200kASCII are the classes of each ASCII character.
var o200kASCII = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		r := rune(c)
		switch {
		case 'A' <= r && r <= 'Z':
			t[c] = o200kU
		case 'a' <= r && r <= 'z':
			t[c] = o200kW
		case '0' <= r && r <= '9':
			t[c] = o200kN
		case r == 0x7f:
			// The library's matcher has DEL in neither P nor X.
		case unicode.IsSpace(r):
			t[c] = o200kS
			if r != '\r' && r != '\n' {
				t[c] |= o200kP
			}
		default:
			t[c] = o200kP | o200kX
		}
	}
	return t
}()

// o200kClass returns the classes of r.
func o200kClass(r rune) uint8 {
	if r < utf8.RuneSelf {
		return o200kASCII[r]
	}
	var c uint8
	letterOrNumber := unicode.In(r, unicode.L, unicode.N)
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= o200kU
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= o200kW
	}
	if unicode.Is(unicode.N, r) {
		c |= o200kN
	}
	space := unicode.IsSpace(r)
	if space {
		c |= o200kS
	}
	if !letterOrNumber {
		c |= o200kP
		if !space {
			c |= o200kX
		}
	}
	return c
}

// o200kSplit calls piece with each piece of s, in order. s must be valid
// UTF-8 (the library reads each invalid byte as U+FFFD: its pieces are not
// substrings of s).
func o200kSplit(s string, piece func(string)) {
	for i := 0; i < len(s); {
		if end := o200kMatch(s, i); end > i {
			piece(s[i:end])
			i = end
		} else {
			// Nothing matches here (DEL): the library skips it.
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
}

// at returns the rune at byte i of s, its size and its classes; size 0 at
// the end of s.
func at(s string, i int) (rune, int, uint8) {
	if i >= len(s) {
		return 0, 0, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, o200kASCII[c]
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r, n, o200kClass(r)
}

// o200kMatch returns where the piece that starts at byte i of s ends, or i
// when no alternative matches there.
func o200kMatch(s string, i int) int {
	_, n0, c0 := at(s, i)
	// Alternatives 0 and 1 begin alike: P? greedily, given back when the
	// rest fails.
	starts := []int{i}
	if c0&o200kP != 0 {
		starts = []int{i + n0, i}
	}
	for _, j := range starts {
		if end := o200kLowerWord(s, j); end >= 0 {
			return end
		}
	}
	for _, j := range starts {
		if end := o200kUpperWord(s, j); end >= 0 {
			return end
		}
	}
	// 2: N{1,3}.
	if c0&o200kN != 0 {
		end := i
		for k := 0; k < 3; k++ {
			_, n, c := at(s, end)
			if c&o200kN == 0 {
				break
			}
			end += n
		}
		return end
	}
	// 3: ' '? X+ [\r\n/]*, the space taken whole.
	j := i
	if s[i] == ' ' {
		j++
	}
	if _, _, c := at(s, j); c&o200kX != 0 {
		for {
			_, n, c := at(s, j)
			if c&o200kX == 0 {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}
	// The white space run from i, and its first line break.
	run, lines, last := i, -1, i
	for {
		_, n, c := at(s, run)
		if c&o200kS == 0 {
			break
		}
		if lines < 0 && (s[run] == '\r' || s[run] == '\n') {
			lines = run
		}
		last = run
		run += n
	}
	if run == i {
		return i
	}
	// 4: \s* [\r\n]+, back to the first line break of the run, then
	// every line break that follows it.
	if lines >= 0 {
		end := lines
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end
	}
	// 5: \s+(?!\S): the whole run at the end of s, else all but its last
	// character, when that leaves one.
	if run == len(s) {
		return run
	}
	if last > i {
		return last
	}
	// 6: \s+.
	return run
}

// o200kLowerWord matches U* W+ C? at byte j of s: the run of U taken
// greedily and given back a character at a time until a W follows, then
// the run of W, then a contraction. It returns the end, or -1.
func o200kLowerWord(s string, j int) int {
	// The run of U, with where each character starts, for giving back.
	var buf [32]int
	starts := buf[:0]
	a := j
	for {
		_, n, c := at(s, a)
		if c&o200kU == 0 {
			break
		}
		starts = append(starts, a)
		a += n
	}
	// W+ first after the whole run, then after each shorter one.
	q := a
	for k := len(starts); ; k-- {
		if _, _, c := at(s, q); c&o200kW != 0 {
			return o200kContraction(s, o200kRunW(s, q))
		}
		if k == 0 {
			return -1
		}
		q = starts[k-1]
	}
}

// o200kUpperWord matches U+ W* C? at byte j of s (the run of U whole: what
// follows always matches), or returns -1.
func o200kUpperWord(s string, j int) int {
	a := j
	for {
		_, n, c := at(s, a)
		if c&o200kU == 0 {
			break
		}
		a += n
	}
	if a == j {
		return -1
	}
	return o200kContraction(s, o200kRunW(s, a))
}

// o200kRunW returns the end of the run of W at byte q of s.
func o200kRunW(s string, q int) int {
	for {
		_, n, c := at(s, q)
		if c&o200kW == 0 {
			return q
		}
		q += n
	}
}

// o200kContraction returns the end of the contraction at byte e of s ('s,
// 't, 're, 've, 'm, 'll, 'd in either case, or 'ſ), or e when there is
// none.
func o200kContraction(s string, e int) int {
	if e >= len(s) || s[e] != '\'' {
		return e
	}
	r1, n1, _ := at(s, e+1)
	r2, _, _ := at(s, e+1+n1)
	switch r1 {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D', 'ſ':
		return e + 1 + n1
	case 'r', 'R', 'v', 'V':
		if r2 == 'e' || r2 == 'E' {
			return e + 3
		}
	case 'l', 'L':
		if r2 == 'l' || r2 == 'L' {
			return e + 3
		}
	}
	return e
}
