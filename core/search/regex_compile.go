package search

import (
	"regexp"
	"regexp/syntax"

	"github.com/toolsearch/toolsearch/core/pyregex"
)

// compilePattern compiles a Python-syntax pattern into a linear-time RE2
// expression. Errors name the position of the problem. It also returns the
// number of instructions of the compiled program: matching takes at most
// about that many steps per byte of text.
func compilePattern(p string) (*regexp.Regexp, int, error) {
	re, err := pyregex.Compile(p)
	if err != nil {
		return nil, 0, err
	}
	return re, progInsts(re.String()), nil
}

// progInsts counts the instructions of expr's compiled program, as
// regexp.Compile builds it. pyregex has already compiled expr, so errors do
// not happen; they count as one instruction.
func progInsts(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return max(1, len(prog.Inst))
}
