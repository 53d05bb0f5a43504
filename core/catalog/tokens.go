package catalog

import (
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// ClaudeTokenFactor converts an o200k token count into an estimate of what
// Claude models count for the same text. Claude's tokenizer is not
// published; on tool definitions (English prose inside JSON Schema) it yields
// more tokens than o200k, and 1.2 is the estimate toolsearch uses. It is an
// estimate for budgeting, not an exact count: deferral thresholds are
// compared against ClaudeTokens when the target model is a Claude model.
const ClaudeTokenFactor = 1.2

var (
	encOnce sync.Once
	enc     tokenizer.Codec
	encErr  error
)

// CountTokens returns the number of o200k_base tokens in s. The vocabulary
// is embedded in the binary, so counting works offline. If the tokenizer
// could not be loaded, it falls back to an estimate of one token per four
// bytes.
//
// Valid UTF-8 is cut into the tokenizer's pieces here (o200kSplit) and the
// count of each short piece is remembered (pieceTokens): the tokenizer is
// asked only for pieces not seen before, which makes counting a catalog
// several times faster than asking it for the whole text. The count is the
// tokenizer's, to the token.
func CountTokens(s string) int {
	encOnce.Do(func() { enc, encErr = tokenizer.Get(tokenizer.O200kBase) })
	if encErr != nil {
		return (len(s) + 3) / 4
	}
	if !utf8.ValidString(s) {
		return codecCount(s)
	}
	n := 0
	o200kSplit(s, func(p string) { n += pieceTokens(p) })
	return n
}

// codecCount is the tokenizer's count of s.
func codecCount(s string) int {
	n, err := enc.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}

// Pieces up to maxMemoPiece bytes have their counts remembered, up to
// maxMemoPieces of them: the words and marks of tool definitions repeat,
// and a bound keeps text never seen before from growing the table.
const (
	maxMemoPiece  = 24
	maxMemoPieces = 1 << 15
)

var (
	memoMu sync.RWMutex
	memo   = map[string]int32{}
)

// pieceTokens is the number of tokens of one piece of o200kSplit.
func pieceTokens(p string) int {
	if len(p) > maxMemoPiece {
		return codecCount(p)
	}
	memoMu.RLock()
	n, ok := memo[p]
	memoMu.RUnlock()
	if ok {
		return int(n)
	}
	c := codecCount(p)
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
