package catalog

import (
	"math"
	"sync"

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
func CountTokens(s string) int {
	encOnce.Do(func() { enc, encErr = tokenizer.Get(tokenizer.O200kBase) })
	if encErr != nil {
		return (len(s) + 3) / 4
	}
	n, err := enc.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
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
