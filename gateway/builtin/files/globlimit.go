package files

import (
	"errors"
	"fmt"
)

// Glob pattern limits. doublestar matches braces by trying each
// alternative against each path, and nested braces by backtracking, so a
// pattern's cost grows with the alternatives its braces expand to: a few
// hundred bytes of braces can make one match take seconds.
const (
	// MaxGlobPatternBytes bounds a pattern's length.
	MaxGlobPatternBytes = 1024
	// MaxGlobBraceDepth bounds how deep braces nest: "{a,{b,c}}" is 2.
	MaxGlobBraceDepth = 4
	// MaxGlobAlternatives bounds the patterns a pattern's braces expand
	// to: "{a,b}/{c,d,e}" is 6.
	MaxGlobAlternatives = 64
)

// ErrGlobTooComplex is wrapped by the error for a pattern over a limit.
var ErrGlobTooComplex = errors.New("glob pattern too complex")

// checkGlob returns an error naming the limit pattern goes over, if any.
func checkGlob(pattern string) error {
	if len(pattern) > MaxGlobPatternBytes {
		return fmt.Errorf("%w: it is %d bytes long, and the limit is %d", ErrGlobTooComplex, len(pattern), MaxGlobPatternBytes)
	}
	n, depth := braceAlternatives(pattern)
	switch {
	case depth > MaxGlobBraceDepth:
		return fmt.Errorf("%w: its braces nest %d deep, and the limit is %d", ErrGlobTooComplex, depth, MaxGlobBraceDepth)
	case n > MaxGlobAlternatives:
		return fmt.Errorf("%w: its braces expand to more than %d alternatives, the limit", ErrGlobTooComplex, MaxGlobAlternatives)
	}
	return nil
}

// braceAlternatives counts the patterns pattern's braces expand to (up to
// a bit over MaxGlobAlternatives) and how deep they nest, reading braces as
// doublestar does: "\" escapes the next character, and braces and commas
// inside "[...]" or outside any braces are plain characters. An unclosed
// brace is counted as if closed at the end; the pattern is invalid anyway.
func braceAlternatives(pattern string) (n, depth int) {
	b := braceReader{p: pattern}
	n = b.sequence()
	return n, b.maxDepth
}

// saturate keeps counts from overflowing: anything over the limit is as
// bad as anything else.
func saturate(n int) int { return min(n, MaxGlobAlternatives+1) }

type braceReader struct {
	p               string
	i               int
	depth, maxDepth int
}

// sequence reads up to a ',' or '}' that ends the alternative it is in
// (or to the end) and returns how many patterns it expands to: the
// product of its brace groups' counts.
func (b *braceReader) sequence() int {
	n := 1
	for b.i < len(b.p) {
		switch b.p[b.i] {
		case '\\':
			b.i += 2
		case '[':
			b.skipClass()
		case '{':
			b.i++
			b.depth++
			b.maxDepth = max(b.maxDepth, b.depth)
			n = saturate(n * b.group())
		case ',', '}':
			if b.depth > 0 {
				return n
			}
			b.i++
		default:
			b.i++
		}
	}
	return n
}

// group reads the alternatives of a brace group, after its '{', and
// returns how many patterns it expands to: the sum of its alternatives'.
func (b *braceReader) group() int {
	total := 0
	for {
		total = saturate(total + b.sequence())
		if b.i >= len(b.p) {
			b.depth--
			return total
		}
		c := b.p[b.i]
		b.i++
		if c == '}' {
			b.depth--
			return total
		}
	}
}

// skipClass moves past a character class "[...]" to its first unescaped
// ']', as doublestar does when it looks for a group's closing brace.
func (b *braceReader) skipClass() {
	j := b.i + 1
	for j < len(b.p) && b.p[j] != ']' {
		if b.p[j] == '\\' {
			j++
		}
		j++
	}
	b.i = j + 1
}
