// Package stem reduces English words to their stems with the Porter2
// algorithm (the Snowball "english" stemmer), so that the inflected and
// derived forms of a word ("connect", "connected", "connection") meet on
// one term.
package stem

import (
	"strings"
	"unicode/utf8"
)

// English returns the Porter2 stem of word, lower-cased.
//
// The word is trimmed of surrounding white space and lower-cased first.
// Words of at most two bytes and English stop words ("having", "further")
// are returned as they are; a few irregular words have fixed stems
// ("skies" → "sky", "dying" → "die"). Letters other than a, e, i, o, u
// and y count as consonants, whatever their script, and digits likewise.
//
// Its stems are those of github.com/kljensen/snowball/english.Stem(word,
// false), which stemmed the search index before, so terms stay as they
// were; the package's tests compare the two.
func English(word string) string {
	word = strings.ToLower(strings.TrimSpace(word))
	if len(word) <= 2 || isStopWord(word) {
		return word
	}
	if s, ok := irregular(word); ok {
		return s
	}
	// Most words fit the array, so stemming them allocates at most the
	// result.
	var buf [48]rune
	w, start := prepare(buf[:0], word)
	w.step0()
	w.step1a()
	w.step1b()
	w.step1c()
	w.step2()
	w.step3()
	w.step4()
	w.step5()
	return w.result(word[start:])
}

// word is a word being stemmed: its letters, with 'Y' for a y that acts as
// a consonant, and where its regions R1 and R2 start. R1 is what follows
// the first consonant that comes after a vowel; R2 is the same region
// taken again inside R1. Most suffixes are removed only when they lie
// within one of them, which keeps short words whole.
type word struct {
	s      []rune
	r1, r2 int
}

// prepare turns text into a word ready for the steps, in buf, and says at
// which byte of text its letters start:
//   - the typographic apostrophes ’ ‘ ‛ become ', and apostrophes at the
//     start are dropped (all of them, though a word of nothing else keeps
//     its last one, which step 0 then removes);
//   - a y at the start or after a vowel acts as a consonant and becomes Y;
//   - the regions R1 and R2 are marked.
func prepare(buf []rune, text string) (w word, start int) {
	leading := true
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch r {
		case '\u2019', '\u2018', '\u201b':
			r = '\''
		}
		if leading && r == '\'' && i < len(text) {
			continue
		}
		if leading {
			leading, start = false, i-size
		}
		if r == 'y' && (len(buf) == 0 || isVowel(buf[len(buf)-1])) {
			r = 'Y'
		}
		buf = append(buf, r)
	}
	w.s = buf
	w.markRegions()
	return w, start
}

// markRegions sets where R1 and R2 start. Words starting with gener,
// commun or arsen have R1 after that prefix, so that "generate" and
// "general", or "communism" and "community", keep apart.
func (w *word) markRegions() {
	w.r1 = -1
	for _, prefix := range [...]string{"gener", "commun", "arsen"} {
		if w.hasPrefix(prefix) {
			w.r1 = len(prefix)
			break
		}
	}
	if w.r1 < 0 {
		w.r1 = w.regionAfter(0)
	}
	w.r2 = w.regionAfter(w.r1)
}

// regionAfter returns the index after the first consonant that follows a
// vowel at or after i, or the word's length when there is none.
func (w *word) regionAfter(i int) int {
	for ; i+1 < len(w.s); i++ {
		if isVowel(w.s[i]) && !isVowel(w.s[i+1]) {
			return i + 2
		}
	}
	return len(w.s)
}

// step0 removes a possessive ending: 's', 's or '.
func (w *word) step0() {
	for _, suffix := range [...]string{"'s'", "'s", "'"} {
		if w.has(suffix) {
			w.cut(len(suffix))
			return
		}
	}
}

// step1a takes off plural endings:
//   - sses → ss ("classes" → "class");
//   - ied, ies → i after two letters or more ("cries" → "cri"), else ie
//     ("ties" → "tie");
//   - us and ss stay ("bus", "class");
//   - s goes when a vowel comes before the letter before it ("gaps" →
//     "gap", "kiwis" → "kiwi", but "gas" and "this" stay).
func (w *word) step1a() {
	n := len(w.s)
	switch {
	case w.has("sses"):
		w.cut(2)
	case w.has("ied"), w.has("ies"):
		if n > 4 {
			w.cut(2)
		} else {
			w.cut(1)
		}
	case w.has("us"), w.has("ss"):
	case w.has("s"):
		if n >= 2 && hasVowel(w.s[:n-2]) {
			w.cut(1)
		}
	}
}

// step1b takes off the endings of past and continuous forms, the longest
// one first:
//   - eed, eedly → ee when the ending is in R1 ("agreed" → "agree");
//   - ed, edly, ing, ingly go when a vowel comes before them ("hoped" →
//     "hop", but "bed" stays); then an e comes back after at, bl and iz
//     ("luxuriated" → "luxuriate"), a doubled consonant loses one letter
//     ("hopping" → "hop"), and a short word gains an e ("hoped" → "hope").
func (w *word) step1b() {
	var suffix string
	for _, s := range [...]string{"eedly", "ingly", "edly", "eed", "ing", "ed"} {
		if w.has(s) {
			suffix = s
			break
		}
	}
	switch suffix {
	case "":
		return
	case "eed", "eedly":
		if w.inR1(len(suffix)) {
			w.replace(len(suffix), "ee")
		}
		return
	}
	stem := len(w.s) - len(suffix)
	if !hasVowel(w.s[:stem]) {
		return
	}
	w.cut(len(suffix))
	switch {
	case w.has("at"), w.has("bl"), w.has("iz"):
		w.replace(0, "e")
	case w.endsDouble():
		w.cut(1)
	case w.isShort():
		w.replace(0, "e")
	}
}

// step1c turns a final y (or Y) into i after a consonant that is not the
// first letter: "cry" → "cri", but "by" and "say" stay.
func (w *word) step1c() {
	n := len(w.s)
	if n >= 3 && (w.s[n-1] == 'y' || w.s[n-1] == 'Y') && !isVowel(w.s[n-2]) {
		w.s[n-1] = 'i'
	}
}

// rule replaces a suffix.
type rule struct{ suffix, by string }

// step2Rules are the suffixes of step 2, longest first so that the first
// one found is the longest that ends the word.
var step2Rules = [...]rule{
	{"ational", "ate"}, {"fulness", "ful"}, {"iveness", "ive"}, {"ization", "ize"}, {"ousness", "ous"},
	{"biliti", "ble"}, {"lessli", "less"}, {"tional", "tion"},
	{"alism", "al"}, {"aliti", "al"}, {"ation", "ate"}, {"entli", "ent"}, {"fulli", "ful"}, {"iviti", "ive"}, {"ousli", "ous"},
	{"abli", "able"}, {"alli", "al"}, {"anci", "ance"}, {"ator", "ate"}, {"enci", "ence"}, {"izer", "ize"},
	{"bli", "ble"}, {"ogi", "og"},
	{"li", ""},
}

// step2 maps derivational suffixes in R1 onto simpler ones
// ("relational" → "relate", "hopefulness" → "hopeful"). Only the longest
// suffix that ends the word counts: when it is not in R1, or its own
// condition fails, nothing changes. ogi → og needs an l before it
// ("analogi" → "analog"); li goes only after one of c d e g h k m n r t
// ("quickli" → "quick").
func (w *word) step2() {
	r, ok := w.longest(step2Rules[:])
	if !ok || !w.inR1(len(r.suffix)) {
		return
	}
	switch r.suffix {
	case "ogi":
		if !w.precededBy(len(r.suffix), "l") {
			return
		}
	case "li":
		if !w.precededBy(len(r.suffix), "cdeghkmnrt") {
			return
		}
	}
	w.replace(len(r.suffix), r.by)
}

// step3Rules are the suffixes of step 3, longest first.
var step3Rules = [...]rule{
	{"ational", "ate"}, {"tional", "tion"},
	{"alize", "al"}, {"ative", ""}, {"icate", "ic"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ness", ""},
	{"ful", ""},
}

// step3 simplifies or removes the longest of a second set of suffixes when
// it is in R1 ("formalize" → "formal", "hopeful" → "hope"); ative goes only
// when it is in R2 as well.
func (w *word) step3() {
	r, ok := w.longest(step3Rules[:])
	if !ok || !w.inR1(len(r.suffix)) {
		return
	}
	if r.suffix == "ative" && !w.inR2(len(r.suffix)) {
		return
	}
	w.replace(len(r.suffix), r.by)
}

// step4Rules are the suffixes step 4 removes, longest first.
var step4Rules = [...]rule{
	{"ement", ""},
	{"able", ""}, {"ance", ""}, {"ence", ""}, {"ible", ""}, {"ment", ""},
	{"ant", ""}, {"ate", ""}, {"ent", ""}, {"ion", ""}, {"ism", ""}, {"iti", ""}, {"ive", ""}, {"ize", ""}, {"ous", ""},
	{"al", ""}, {"er", ""}, {"ic", ""},
}

// step4 removes the longest of the remaining suffixes when it is in R2
// ("adjustable" → "adjust"); ion goes only after s or t ("adoption" →
// "adopt").
func (w *word) step4() {
	r, ok := w.longest(step4Rules[:])
	if !ok || !w.inR2(len(r.suffix)) {
		return
	}
	if r.suffix == "ion" && !w.precededBy(len(r.suffix), "st") {
		return
	}
	w.cut(len(r.suffix))
}

// step5 tidies the end of the stem:
//   - a final e goes when it is in R2, or in R1 and not after a short
//     syllable ("bake" keeps it as "bake", "conceive" becomes "conceiv");
//   - a final l goes when it is in R2 and follows another l ("controll" →
//     "control").
//
// Then each Y becomes y again.
func (w *word) step5() {
	switch {
	case w.has("e"):
		if w.inR2(1) || w.inR1(1) && !w.endsShortSyllable(len(w.s)-1) {
			w.cut(1)
		}
	case w.has("l"):
		if w.inR2(1) && w.precededBy(1, "l") {
			w.cut(1)
		}
	}
	for i, r := range w.s {
		if r == 'Y' {
			w.s[i] = 'y'
		}
	}
}

// isShort reports whether the word is short: R1 is empty and the word ends
// in a short syllable ("bed", "shed", "hop", but not "bead" or "shred").
func (w *word) isShort() bool {
	return w.r1 >= len(w.s) && w.endsShortSyllable(len(w.s))
}

// endsShortSyllable reports whether w.s[:n] ends in a short syllable: a
// vowel between two consonants, the last of which is not w, x or Y ("rap",
// "trap", "entrap"), or, for a two-letter word, a vowel and then a
// consonant ("ow", "on", "at").
func (w *word) endsShortSyllable(n int) bool {
	s := w.s
	switch {
	case n == 2:
		return isVowel(s[0]) && !isVowel(s[1])
	case n >= 3:
		last := s[n-1]
		return !isVowel(s[n-3]) && isVowel(s[n-2]) && !isVowel(last) && last != 'w' && last != 'x' && last != 'Y'
	}
	return false
}

// endsDouble reports whether the word ends in one of bb dd ff gg mm nn pp
// rr tt.
func (w *word) endsDouble() bool {
	n := len(w.s)
	return n >= 2 && w.s[n-1] == w.s[n-2] && strings.ContainsRune("bdfgmnprt", w.s[n-1])
}

// longest returns the first of rules, ordered longest first, whose suffix
// ends the word.
func (w *word) longest(rules []rule) (rule, bool) {
	for _, r := range rules {
		if w.has(r.suffix) {
			return r, true
		}
	}
	return rule{}, false
}

// has reports whether the word ends with suffix, which is ASCII.
func (w *word) has(suffix string) bool {
	k := len(w.s) - len(suffix)
	if k < 0 {
		return false
	}
	for i := 0; i < len(suffix); i++ {
		if w.s[k+i] != rune(suffix[i]) {
			return false
		}
	}
	return true
}

// hasPrefix reports whether the word starts with prefix, which is ASCII.
func (w *word) hasPrefix(prefix string) bool {
	if len(w.s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if w.s[i] != rune(prefix[i]) {
			return false
		}
	}
	return true
}

// precededBy reports whether the letter before the last n is one of
// letters.
func (w *word) precededBy(n int, letters string) bool {
	i := len(w.s) - n - 1
	return i >= 0 && strings.ContainsRune(letters, w.s[i])
}

// inR1 and inR2 report whether the last n letters lie in R1 or R2.
func (w *word) inR1(n int) bool { return len(w.s)-n >= w.r1 }
func (w *word) inR2(n int) bool { return len(w.s)-n >= w.r2 }

// cut removes the last n letters.
func (w *word) cut(n int) { w.s = w.s[:len(w.s)-n] }

// replace puts by, which is ASCII, in place of the last n letters. No step
// makes the word longer than it was prepared (step 1b adds an e only after
// cutting two letters or more), so the letters stay in the array they were
// prepared in, and a word stemmed in a local array does not escape.
func (w *word) replace(n int, by string) {
	k := len(w.s) - n
	w.s = w.s[:k+len(by)]
	for i := 0; i < len(by); i++ {
		w.s[k+i] = rune(by[i])
	}
}

// result returns the stem as a string. A stem is most often the start of
// the text it came from ("connect" of "connected"), and is then returned
// as a slice of it, with no allocation.
func (w *word) result(text string) string {
	i := 0
	for _, r := range w.s {
		c, size := utf8.DecodeRuneInString(text[i:])
		if c != r || c == utf8.RuneError {
			return string(w.s)
		}
		i += size
	}
	return text[:i]
}

func isVowel(r rune) bool {
	switch r {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

func hasVowel(s []rune) bool {
	for _, r := range s {
		if isVowel(r) {
			return true
		}
	}
	return false
}

// irregular returns the fixed stem of a word the steps would get wrong:
// irregular forms ("skies" → "sky"), words that look inflected but are not
// ("news", "atlas", "herring"), and the forms of proceed, exceed and
// succeed, which keep their double e.
func irregular(word string) (string, bool) {
	switch word {
	case "skis":
		return "ski", true
	case "skies":
		return "sky", true
	case "dying":
		return "die", true
	case "lying":
		return "lie", true
	case "tying":
		return "tie", true
	case "idly":
		return "idl", true
	case "gently":
		return "gentl", true
	case "ugly":
		return "ugli", true
	case "early":
		return "earli", true
	case "only":
		return "onli", true
	case "singly":
		return "singl", true
	case "sky", "news", "howe", "atlas", "cosmos", "bias", "andes",
		"inning", "outing", "canning", "herring", "earring",
		"proceed", "exceed", "succeed":
		return word, true
	case "innings", "outings", "cannings", "herrings", "earrings":
		return word[:len(word)-1], true
	case "proceeds", "proceeded", "proceeding":
		return "proceed", true
	case "exceeds", "exceeded", "exceeding":
		return "exceed", true
	case "succeeds", "succeeded", "succeeding":
		return "succeed", true
	}
	return "", false
}

// isStopWord reports whether word is one of the English function words
// that English leaves unstemmed.
func isStopWord(word string) bool {
	switch word {
	case "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
		"can", "did", "do", "does", "doing", "don", "down", "during",
		"each", "few", "for", "from", "further",
		"had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
		"i", "if", "in", "into", "is", "it", "its", "itself", "just",
		"me", "more", "most", "my", "myself", "no", "nor", "not", "now",
		"of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own",
		"s", "same", "she", "should", "so", "some", "such",
		"t", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they",
		"this", "those", "through", "to", "too",
		"under", "until", "up", "very",
		"was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
		"you", "your", "yours", "yourself", "yourselves":
		return true
	}
	return false
}
