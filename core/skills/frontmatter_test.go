package skills

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// frontmatterCases are frontmatters written the ways skills write them,
// each with what ReadFrontmatter must read, or the error it must give.
var frontmatterCases = []struct {
	name, text  string
	want        Frontmatter
	wantErr     string // a part of the error; "" when none
	yamlRefuses bool   // YAML itself refuses the text
}{
	{"plain", "name: pdf-forms\ndescription: Fill in PDF forms.\n", Frontmatter{"pdf-forms", "Fill in PDF forms."}, "", false},
	{"other keys around", "license: MIT\nname: a\nmetadata:\n  owner: x\n  tags: [a, b]\ndescription: d\nallowed-tools:\n  - Read\n", Frontmatter{"a", "d"}, "", false},
	{"comments", "# top\nname: a # the name\n  # indented comment\ndescription: b\n", Frontmatter{"a", "b"}, "", false},
	{"plain over lines", "name: a\ndescription: Reads\n  the forms\n\n  and fills them.\n", Frontmatter{"a", "Reads the forms\nand fills them."}, "", false},
	{"value on the next line", "name:\n  a\ndescription:\n  one\n  two\n", Frontmatter{"a", "one two"}, "", false},
	{"single quotes", "name: 'a'\ndescription: 'It''s: here # not a comment'\n", Frontmatter{"a", "It's: here # not a comment"}, "", false},
	{"double quotes", `name: "a"` + "\n" + `description: "Tab\there, \"quoted\", \u00e9, \x41"` + "\n", Frontmatter{"a", "Tab\there, \"quoted\", é, A"}, "", false},
	{"double over lines", "name: a\ndescription: \"one  \n   two\n\n   three \\\n   four\"\n", Frontmatter{"a", "one two\nthree four"}, "", false},
	{"literal", "name: a\ndescription: |\n  line one\n    indented\n  line two\n", Frontmatter{"a", "line one\n  indented\nline two\n"}, "", false},
	{"folded", "name: a\ndescription: >\n  one\n  two\n\n  three\n", Frontmatter{"a", "one two\nthree\n"}, "", false},
	{"folded strip", "name: a\ndescription: >-\n  one\n  two\n\n\nname2: x\n", Frontmatter{"a", "one two"}, "", false},
	{"literal keep, indent given", "name: a\ndescription: |2+\n   x\n  y\n\n", Frontmatter{"a", " x\ny\n\n"}, "", false},
	{"null", "name: ~\ndescription:\n", Frontmatter{"", ""}, "", false},
	{"absent", "name: a\n", Frontmatter{"a", ""}, "", false},
	{"a number stays text", "name: 2024\ndescription: true\n", Frontmatter{"2024", "true"}, "", false},
	{"url", "name: a\ndescription: see https://example.com/x:y for more\n", Frontmatter{"a", "see https://example.com/x:y for more"}, "", false},
	{"written twice", "name: a\nname: b\n", Frontmatter{}, "written twice", true},
	{"a list", "name: [a, b]\n", Frontmatter{}, "list", true},
	{"a nested mapping", "name:\n  first: a\n", Frontmatter{}, "mapping", true},
	{"a list below", "description:\n  - a\n", Frontmatter{}, "list", true},
	{"an alias", "name: &n a\ndescription: *n\n", Frontmatter{}, "anchor", false},
	{"a tag", "name: !!str a\n", Frontmatter{}, "tag", false},
	{"no key", "just text\n", Frontmatter{}, "not a key", true},
	{"colon in plain text", "name: a\ndescription: one: two\n", Frontmatter{}, "colon", true},
	{"unclosed quote", "name: \"a\ndescription: b\n", Frontmatter{}, "never closed", true},
	{"text after quote", "name: \"a\" b\n", Frontmatter{}, "after the closing quote", true},
	{"indented first line", "  name: a\n", Frontmatter{}, "indented", false},
	{"bad escape", "name: \"\\q\"\n", Frontmatter{}, "escape", true},
	{"bad header", "description: |x\n  a\n", Frontmatter{}, "header", true},
	{"less indented", "description: |\n    a\n  b\n", Frontmatter{}, "indented less", true},
}

func TestReadFrontmatter(t *testing.T) {
	t.Parallel()
	for _, tc := range frontmatterCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadFrontmatter(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadFrontmatter(%q) = %+v, %v; want an error with %q", tc.text, got, err, tc.wantErr)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("ReadFrontmatter(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
			}
			// What YAML itself makes of the text: the same where it is read.
			var ref yamlFrontmatter
			yerr := yaml.Unmarshal([]byte(tc.text), &ref)
			if tc.yamlRefuses != (yerr != nil) {
				t.Errorf("YAML: %v; the case says it refuses: %v", yerr, tc.yamlRefuses)
			}
			if err == nil && yerr == nil && (ref.Name != got.Name || ref.Description != got.Description) {
				t.Errorf("read %+v; YAML reads %+v", got, ref)
			}
		})
	}
}

type yamlFrontmatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// FuzzReadFrontmatter: whatever ReadFrontmatter reads, YAML reads the
// same, and it never panics. Other keys' values are skipped unread, so
// where YAML refuses the whole text it must accept the name and
// description lines alone.
func FuzzReadFrontmatter(f *testing.F) {
	for _, tc := range frontmatterCases {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ReadFrontmatter(text)
		if err != nil {
			return
		}
		var ref yamlFrontmatter
		if yerr := yaml.Unmarshal([]byte(text), &ref); yerr != nil {
			own := nameAndDescription(text)
			if yerr := yaml.Unmarshal([]byte(own), &ref); yerr != nil {
				t.Fatalf("ReadFrontmatter(%q) = %+v; YAML refuses its name and description (%q): %v", text, got, own, yerr)
			}
		}
		if ref.Name != got.Name || strings.TrimSpace(ref.Description) != strings.TrimSpace(got.Description) {
			t.Fatalf("ReadFrontmatter(%q) = %+v; YAML reads %+v", text, got, ref)
		}
	})
}

// nameAndDescription keeps the lines of the name and description keys
// (from a key at the first column to the next line at the first column
// that is not blank).
func nameAndDescription(text string) string {
	var b strings.Builder
	keep := false
	for _, l := range strings.Split(text, "\n") {
		if strings.Trim(l, " \t") != "" && l[0] != ' ' && l[0] != '\t' {
			keep = false
			for _, k := range []string{"name:", "description:"} {
				if rest, ok := strings.CutPrefix(l, k); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
					keep = true
				}
			}
		}
		if keep {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
