package policy

import (
	"sort"
	"strings"
)

// maxPatternRunes bounds the patterns and names Nearest compares: its
// table grows with the product of their lengths.
const maxPatternRunes = 256

// maxNearestCells bounds the table cells one Nearest call fills over all
// its candidates, so that a server listing many long names cannot make a
// suggestion slow: the candidates past it are not compared.
const maxNearestCells = 1 << 22

// Nearest returns the candidate a glob pattern most nearly matches, with
// the pattern corrected so that it matches that candidate ("delte_*" and
// "delete_entities" give "delete_*"), when the pattern is off by only a few
// characters: at most a third of its literal characters (one for a short pattern),
// and at most 3; a pattern of fewer than 3 literal characters gets none.
// Wildcards cost nothing, so a pattern without them is compared by plain
// edit distance. Ties go to the candidate first in sorted order. ok is
// false when no candidate is near enough, or the pattern already matches
// one.
func Nearest(pattern string, candidates []string) (name, corrected string, ok bool) {
	p := []rune(pattern)
	if len(p) == 0 || len(p) > maxPatternRunes {
		return "", "", false
	}
	literal := 0
	for _, r := range p {
		if r != '*' && r != '?' {
			literal++
		}
	}
	if literal < 3 {
		return "", "", false // too short to tell a typo from another name
	}
	limit := min(3, max(1, literal/3))
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	best := limit + 1
	star := strings.Contains(pattern, "*")
	cells := 0
	for _, c := range sorted {
		if Match(pattern, c) {
			return "", "", false
		}
		n := []rune(c)
		if len(n) > maxPatternRunes || (!star && abs(len(n)-len(p)) > limit) {
			continue // too long to compare, or too many edits apart
		}
		if cells += len(p) * len(n); cells > maxNearestCells {
			break
		}
		d, fixed := globDistance(p, n)
		if d < best {
			best, name, corrected = d, c, fixed
		}
	}
	if best > limit {
		return "", "", false
	}
	return name, corrected, true
}

// globDistance is the fewest single-character edits (insert, delete,
// substitute) of the literal characters of pattern p that make it match
// name n, and the pattern so edited. "*" matches any run and "?" any one
// character at no cost.
func globDistance(p, n []rune) (int, string) {
	rows, cols := len(p)+1, len(n)+1
	d := make([]int, rows*cols)
	at := func(i, j int) *int { return &d[i*cols+j] }
	for j := 1; j < cols; j++ {
		*at(0, j) = j
	}
	for i := 1; i < rows; i++ {
		star := p[i-1] == '*'
		if star {
			*at(i, 0) = *at(i-1, 0)
		} else {
			*at(i, 0) = *at(i-1, 0) + 1
		}
		for j := 1; j < cols; j++ {
			if star {
				*at(i, j) = min(*at(i-1, j), *at(i, j-1))
				continue
			}
			sub := 1
			if p[i-1] == '?' || p[i-1] == n[j-1] {
				sub = 0
			}
			*at(i, j) = min(*at(i-1, j-1)+sub, *at(i-1, j)+1, *at(i, j-1)+1)
		}
	}
	// Walk back to write the corrected pattern, last character first.
	var out []rune
	i, j := len(p), len(n)
	for i > 0 || j > 0 {
		switch {
		case i > 0 && p[i-1] == '*':
			if j > 0 && *at(i, j) == *at(i, j-1) {
				j-- // the star takes n[j-1]
				continue
			}
			out = append(out, '*')
			i--
		case i > 0 && j > 0 && (p[i-1] == '?' || p[i-1] == n[j-1]) && *at(i, j) == *at(i-1, j-1):
			out = append(out, p[i-1])
			i, j = i-1, j-1
		case i > 0 && j > 0 && *at(i, j) == *at(i-1, j-1)+1:
			out = append(out, n[j-1]) // substituted
			i, j = i-1, j-1
		case i > 0 && *at(i, j) == *at(i-1, j)+1:
			i-- // the pattern's character dropped
		default:
			out = append(out, n[j-1]) // the name's character inserted
			j--
		}
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return d[len(d)-1], string(out)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
