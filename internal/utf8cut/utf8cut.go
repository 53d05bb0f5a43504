// Package utf8cut cuts text to a number of bytes without splitting a
// character.
package utf8cut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that ends
// between two runes: s itself when it is within n, "" when n is not
// positive. Bytes that are not UTF-8 count as runes of their own, so
// what s holds before the cut is kept as it was.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
