package catalog

import (
	"fmt"
	"io/fs"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// ClaudeTokenFactor converts an o200k token count into an estimate of what
// Claude models count for the same text. Claude's tokenizer is not
// published; on tool definitions (English prose inside JSON Schema) it yields
// more tokens than o200k, and 1.2 is the estimate toolsearch uses. It is an
// estimate for budgeting, not an exact count: deferral thresholds are
// compared against ClaudeTokens when the target model is a Claude model.
const ClaudeTokenFactor = 1.2

// o200kFile is the vocabulary's file in the assets package.
const o200kFile = "o200k_base.tiktoken"

var (
	vocabOnce sync.Once
	vocab     *o200kVocab
	vocabErr  error
)

// loadO200k reads the vocabulary, the first time it is called.
func loadO200k() (*o200kVocab, error) {
	vocabOnce.Do(func() {
		f, err := vocabFile()
		if err != nil {
			vocabErr = err
			return
		}
		defer f.Close()
		var size int64
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		if vocab, err = parseO200kVocab(f, size); err != nil {
			vocabErr = fmt.Errorf("%s: %w", o200kFile, err)
		}
	})
	return vocab, vocabErr
}

// vocabFile opens the embedded vocabulary.
func vocabFile() (fs.File, error) {
	f, err := assets.Assets.Open(o200kFile)
	if err != nil {
		return nil, fmt.Errorf("opening the o200k_base vocabulary: %w", err)
	}
	return f, nil
}

// CountTokens returns the number of o200k_base tokens in s, as OpenAI's
// tiktoken counts them. The vocabulary is embedded in the binary, so
// counting works offline; it is read the first time a count is asked for.
// If it could not be read, CountTokens falls back to an estimate of one
// token per four bytes.
//
// The text is cut into the tokenizer's pieces (o200kSplit); a piece that
// is a token counts one, and any other is merged byte pair by byte pair
// (o200kVocab.merge), its count remembered if it is short (pieceTokens).
//
// Text that is not valid UTF-8 is counted with each byte that is not part
// of a valid UTF-8 sequence read as U+FFFD, the replacement character: as
// Go reads such a string into runes, and as the tokenizer library
// github.com/tiktoken-go/tokenizer counts it.
func CountTokens(s string) int {
	v, err := loadO200k()
	if err != nil {
		return (len(s) + 3) / 4
	}
	if !utf8.ValidString(s) {
		s = replaceInvalidUTF8(s)
	}
	n := 0
	o200kSplit(s, func(p string) { n += pieceTokens(v, p) })
	return n
}

// replaceInvalidUTF8 returns s with each byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD.
func replaceInvalidUTF8(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for _, r := range s {
		b.WriteRune(r) // ranging over s yields utf8.RuneError for each invalid byte
	}
	return b.String()
}

// Pieces up to maxMemoPiece bytes that are not tokens have their counts
// remembered, up to maxMemoPieces of them: the words and marks of tool
// definitions repeat, and a bound keeps text never seen before from
// growing the table.
const (
	maxMemoPiece  = 24
	maxMemoPieces = 1 << 15
)

var (
	memoMu sync.RWMutex
	memo   = map[string]int32{}
)

// pieceTokens is the number of tokens of one piece of o200kSplit.
func pieceTokens(v *o200kVocab, p string) int {
	if v.rank(p) != noRank {
		return 1
	}
	if len(p) > maxMemoPiece {
		return v.merge(p)
	}
	memoMu.RLock()
	n, ok := memo[p]
	memoMu.RUnlock()
	if ok {
		return int(n)
	}
	c := v.merge(p)
	memoMu.Lock()
	if len(memo) < maxMemoPieces {
		memo[strings.Clone(p)] = int32(c)
	}
	memoMu.Unlock()
	return c
}

// ClaudeTokens converts an o200k count into the Claude estimate.
func ClaudeTokens(o200k int) int {
	return int(math.Ceil(float64(o200k) * ClaudeTokenFactor))
}

// Tokens returns the total size of the server's tool definitions in o200k
// tokens.
func (s *Server) Tokens() int {
	n := 0
	for _, t := range s.Tools {
		n += t.Tokens()
	}
	return n
}
