package pyregex_test

import (
	"fmt"

	"github.com/toolsearch/toolsearch/core/pyregex"
)

// Python re syntax becomes RE2, which always matches in linear time;
// what RE2 cannot do in linear time is refused, with its position.
func ExampleTranslate() {
	for _, p := range []string{`(?P<verb>create|open)_\w+\Z`, `(?i)slack`, `(\w+)_\1`, `a(?=b)`} {
		re2, err := pyregex.Translate(p)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s → %s\n", p, re2)
	}
	// Output:
	// (?P<verb>create|open)_\w+\Z → (?P<verb>create|open)_\w+\z
	// (?i)slack → (?i)slack
	// regex "(\\w+)_\\1": at position 6: backreference is not supported (patterns run in linear time)
	// regex "a(?=b)": at position 1: lookahead is not supported (patterns run in linear time)
}

func ExampleCompile() {
	re, err := pyregex.Compile(`^create_.*(issue|ticket)$`)
	if err != nil {
		panic(err)
	}
	fmt.Println(re.MatchString("create_github_issue"), re.MatchString("close_issue"))
	// Output:
	// true false
}
