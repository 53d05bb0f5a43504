package search

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	porter2 "github.com/toolsearch/toolsearch/internal/stem"
)

// Text analysis turns a field's text into index terms. The same analysis runs
// over documents and queries, so both sides agree on what a term is:
//
//  1. Words are runs of letters and digits. An identifier is split into its
//     parts at '_', '-', '.', '/' and case changes ("createPullRequest",
//     "create_pull_request" and "create-pull-request" all give create, pull,
//     request); the joined identifier is kept too ("createpullrequest"), so
//     a name typed as one word still matches.
//  2. Words are lower-cased and abbreviations of tool land are expanded into
//     the words they stand for (pr → pull request, k8s → kubernetes).
//  3. Stop words are dropped and the rest are stemmed (Porter2), so
//     "repositories" and "repository" meet.

// token is one analysed word: the stemmed term and whether it came from
// joining the parts of an identifier.
type token struct {
	term   string
	joined bool
}

// stemCache memoises stems; vocabularies are small and stemming dominates
// analysis time otherwise. Queries bring words of their own, so it keeps
// at most maxStems words of at most maxStemLen bytes: past that, a word is
// stemmed each time.
var (
	stemCache sync.Map // string → string
	stemCount atomic.Int64
)

// maxStems bounds stemCache: far more words than a catalog of 100k tools
// uses, a few tens of megabytes at worst.
const (
	maxStems   = 1 << 19
	maxStemLen = 64
)

func stem(w string) string {
	if v, ok := stemCache.Load(w); ok {
		return v.(string)
	}
	s := w
	switch {
	case len(w) > 3 && w[len(w)-1] == 's' && !hasVowel(w[:len(w)-1]) && isAlpha(w):
		// The plural of an acronym: "dsns", "vms".
		s = w[:len(w)-1]
	case len(w) > 2 && isAlpha(w):
		s = porter2.English(w)
	}
	if len(w) <= maxStemLen && stemCount.Load() < maxStems {
		if _, loaded := stemCache.LoadOrStore(w, s); !loaded {
			stemCount.Add(1)
		}
	}
	return s
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

func isAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// words splits text into raw words, each further split into identifier
// parts. emit is called with the parts of each word (already lower-cased);
// parts has one element for a plain word.
func words(text string, emit func(parts []string, whole string)) {
	var parts []string
	i := 0
	for i < len(text) {
		// Skip separators.
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += n
			continue
		}
		// A word runs over letters, digits and inner joiners (_ - . /) that
		// are followed by a letter or digit.
		j := i
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if isWordRune(r) {
				j += n
				continue
			}
			if isJoiner(r) && j+n < len(text) {
				r2, _ := utf8.DecodeRuneInString(text[j+n:])
				if isWordRune(r2) {
					j += n
					continue
				}
			}
			break
		}
		word := text[i:j]
		parts = splitIdentifier(word, parts[:0])
		whole := ""
		if len(parts) > 1 {
			whole = strings.Join(parts, "")
		}
		emit(parts, whole)
		i = j
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isJoiner(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '/' || r == '\'' }

// splitIdentifier splits one word at joiners and case changes, lower-casing
// each part. Digits stay with the letters before them ("v1", "k8s", "ec2").
// An apostrophe joins without splitting ("don't" → "dont").
func splitIdentifier(word string, out []string) []string {
	if isASCII(word) {
		return splitASCII(word, out)
	}
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	runes := []rune(word)
	for k, r := range runes {
		switch {
		case r == '\'':
			continue
		case isJoiner(r):
			flush()
			continue
		case unicode.IsUpper(r) && k > 0:
			prev := runes[k-1]
			nextLower := k+1 < len(runes) && unicode.IsLower(runes[k+1])
			// "DSNs": a plural s after an acronym stays with it.
			pluralS := nextLower && runes[k+1] == 's' && (k+2 == len(runes) || !unicode.IsLower(runes[k+2]))
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower && !pluralS) {
				flush()
			}
		}
		cur.WriteRune(unicode.ToLower(r))
	}
	flush()
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isUpperB(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLowerB(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigitB(c byte) bool { return c >= '0' && c <= '9' }

// splitASCII is splitIdentifier for ASCII words, without allocating runes.
func splitASCII(word string, out []string) []string {
	buf, ends := splitASCIIInto(word, make([]byte, 0, len(word)), nil)
	start := 0
	for _, e := range ends {
		out = append(out, string(buf[start:e]))
		start = e
	}
	return out
}

// splitASCIIInto appends the lower-cased parts of an ASCII word to buf, back
// to back, and the end offset of each part (in buf) to ends.
func splitASCIIInto(word string, buf []byte, ends []int) ([]byte, []int) {
	mark := func() {
		if n := len(ends); len(buf) > 0 && (n == 0 || ends[n-1] != len(buf)) {
			ends = append(ends, len(buf))
		}
	}
	first := len(buf)
	for k := 0; k < len(word); k++ {
		c := word[k]
		switch {
		case c == '\'':
			continue
		case c == '_' || c == '-' || c == '.' || c == '/':
			if len(buf) > first {
				mark()
			}
			continue
		case isUpperB(c) && k > 0:
			prev := word[k-1]
			nextLower := k+1 < len(word) && isLowerB(word[k+1])
			pluralS := nextLower && word[k+1] == 's' && (k+2 == len(word) || !isLowerB(word[k+2]))
			if (isLowerB(prev) || isDigitB(prev) || (isUpperB(prev) && nextLower && !pluralS)) && len(buf) > first {
				mark()
			}
		}
		if isUpperB(c) {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	if len(buf) > first {
		mark()
	}
	return buf, ends
}

// analyze returns the index terms of text, in order. Abbreviations are
// expanded, stop words dropped and terms stemmed. The joined form of a
// multi-part identifier is added after its parts, marked joined.
func analyze(text string, out []token) []token { return analyzeWith(nil, text, out) }

// analyzeWith is analyze with a private stem cache (nil for the shared one),
// for index builds that analyse many documents on one goroutine. With a
// cache, ASCII words are split and looked up in place, so a term already
// seen costs no allocation.
func analyzeWith(cache map[string]string, text string, out []token) []token {
	var scratch [96]byte
	for i := wordStart(text, 0); i < len(text); {
		j := wordEnd(text, i)
		word := text[i:j]
		i = wordStart(text, j)
		if cache != nil && isASCII(word) && len(word) < len(scratch)-1 {
			out = analyzeASCII(cache, word, scratch[:0], out)
			continue
		}
		parts := splitIdentifier(word, nil)
		whole := ""
		if len(parts) > 1 {
			whole = strings.Join(parts, "")
		}
		out = analyzeParts(cache, parts, whole, out)
	}
	return out
}

func isAlnumB(c byte) bool { return isLowerB(c) || isUpperB(c) || isDigitB(c) }

// wordEnd returns the end of the word starting at i: letters, digits and
// inner joiners (_ - . / ') followed by a letter or digit.
func wordEnd(text string, i int) int {
	j := i
	for j < len(text) {
		if c := text[j]; c < utf8.RuneSelf {
			if class := asciiClass[c]; class == classWord || class == classJoiner && startsWord(text[j+1:]) {
				j++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(text[j:])
		if !isWordRune(r) {
			break
		}
		j += n
	}
	return j
}

// wordStart returns the index of the first letter or digit of text at or
// after i, or len(text) when there is none.
func wordStart(text string, i int) int {
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] == classWord {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if isWordRune(r) {
			return i
		}
		i += n
	}
	return i
}

// startsWord reports whether s starts with a letter or digit.
func startsWord(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; c < utf8.RuneSelf {
		return asciiClass[c] == classWord
	}
	r, _ := utf8.DecodeRuneInString(s)
	return isWordRune(r)
}

// asciiClass classifies ASCII bytes for scanning words.
var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for b := range c {
		switch {
		case isAlnumB(byte(b)):
			c[b] = classWord
		case isJoiner(rune(b)):
			c[b] = classJoiner
		}
	}
	return c
}()

const (
	classWord   = 1 // a letter or digit
	classJoiner = 2 // joins the parts of an identifier: _ - . / '
)

// analyzeParts turns the parts of one word into terms.
func analyzeParts(cache map[string]string, parts []string, whole string, out []token) []token {
	stemOf := func(w string) string {
		if cache == nil {
			return stem(w)
		}
		s, ok := cache[w]
		if !ok {
			s = stem(w)
			cache[w] = s
		}
		return s
	}
	if whole != "" && allStopWords(parts) {
		// "to-do", "how-to": the joined word is the word.
		parts, whole = []string{whole}, ""
	}
	for _, p := range parts {
		if exp, ok := abbreviations[p]; ok {
			for _, e := range exp {
				out = append(out, token{term: stemOf(e)})
			}
			continue
		}
		if stopWords[p] {
			continue
		}
		out = append(out, token{term: stemOf(p)})
	}
	if whole != "" && len(whole) <= 64 {
		out = append(out, token{term: whole, joined: true})
	}
	return out
}

// analyzeASCII is analyzeParts for an ASCII word, splitting it into buf:
// buf[0] is '#', then the lower-cased parts back to back, so the joined
// word's cache key ("#" + joined) is a slice of buf and needs no allocation.
func analyzeASCII(cache map[string]string, word string, buf []byte, out []token) []token {
	var endsArr [24]int
	buf = append(buf, '#')
	buf, ends := splitASCIIInto(word, buf, endsArr[:0])
	n := len(ends)
	part := func(i int) []byte {
		start := 1
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	allStop := n > 1
	for i := 0; i < n && allStop; i++ {
		allStop = stopWords[string(part(i))]
	}
	if allStop {
		ends[0], n = ends[n-1], 1
	}
	for i := 0; i < n; i++ {
		p := part(i)
		if exp, ok := abbreviations[string(p)]; ok {
			for _, e := range exp {
				s, ok := cache[e]
				if !ok {
					s = stem(e)
					cache[e] = s
				}
				out = append(out, token{term: s})
			}
			continue
		}
		if stopWords[string(p)] {
			continue
		}
		s, ok := cache[string(p)]
		if !ok {
			w := string(p)
			s = stem(w)
			cache[w] = s
		}
		out = append(out, token{term: s})
	}
	if n > 1 && len(buf)-1 <= 64 {
		key := buf[:ends[n-1]]
		s, ok := cache[string(key)]
		if !ok {
			k := string(key)
			s = k[1:]
			cache[k] = s
		}
		out = append(out, token{term: s, joined: true})
	}
	return out
}

func allStopWords(parts []string) bool {
	for _, p := range parts {
		if !stopWords[p] {
			return false
		}
	}
	return true
}

// stopWords are dropped from documents and queries. Besides English function
// words, they include the filler of requests to an assistant ("please",
// "want", "me") that says nothing about which tool is meant.
var stopWords = toSet(`a about above after again also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just let lets like me
more most my myself no nor not now of off on once only or other our ours ourselves out over own please same
she should so some such than that the their theirs them themselves then there these they this those through
to too under until up very want was we were what when where which while who whom why will with would you
your yours yourself yourselves i'd i'm i've ive im id via using use need needs wanna gonna hey thanks thank
whether etc eg ie`)

func toSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
