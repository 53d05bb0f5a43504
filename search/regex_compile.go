package search

import "regexp"

// compilePattern is replaced by the Python-syntax translator.
func compilePattern(p string) (*regexp.Regexp, error) { return regexp.Compile(p) }
