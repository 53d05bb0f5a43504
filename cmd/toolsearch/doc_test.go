package main

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
)

// TestPackageDocListsEveryCommand: the package doc (what go doc shows)
// lists every command the binary has, and no command it does not have.
func TestPackageDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("main.go has no package doc")
	}
	doc := f.Doc.Text()
	_, list, ok := strings.Cut(doc, "Commands:\n")
	if !ok {
		t.Fatalf("the package doc has no Commands: section:\n%s", doc)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\t([a-z]+)\s{2,}\S`).FindAllStringSubmatch(list, -1) {
		listed[m[1]] = true
	}
	have := map[string]bool{}
	for _, c := range commands {
		have[c.name] = true
		if !listed[c.name] {
			t.Errorf("the package doc does not list the %s command", c.name)
		}
	}
	for name := range listed {
		if !have[name] {
			t.Errorf("the package doc lists %s, which is not a command", name)
		}
	}
	if len(listed) == 0 {
		t.Fatal("found no command in the package doc")
	}
}
