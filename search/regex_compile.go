package search

import (
	"regexp"

	"github.com/toolsearch/toolsearch/pyregex"
)

// compilePattern compiles a Python-syntax pattern into a linear-time RE2
// expression. Errors name the position of the problem.
func compilePattern(p string) (*regexp.Regexp, error) { return pyregex.Compile(p) }
