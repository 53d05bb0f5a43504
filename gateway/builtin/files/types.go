package files

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// fileTypes maps a type name (as ripgrep names them) to the globs of its
// files' base names.
var fileTypes = map[string][]string{
	"c":          {"*.c", "*.h"},
	"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss", "*.sass", "*.less"},
	"dart":       {"*.dart"},
	"docker":     {"Dockerfile", "Dockerfile.*", "*.dockerfile"},
	"elixir":     {"*.ex", "*.exs"},
	"erlang":     {"*.erl", "*.hrl"},
	"go":         {"*.go"},
	"haskell":    {"*.hs", "*.lhs"},
	"html":       {"*.html", "*.htm", "*.xhtml"},
	"java":       {"*.java"},
	"js":         {"*.js", "*.mjs", "*.cjs", "*.jsx"},
	"json":       {"*.json", "*.jsonl", "*.json5"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"md":         {"*.md", "*.markdown", "*.mdx"},
	"php":        {"*.php"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi", "*.pyw"},
	"r":          {"*.r", "*.R", "*.Rmd"},
	"rb":         {"*.rb", "*.rake", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sc"},
	"sh":         {"*.sh", "*.bash", "*.zsh", "*.fish"},
	"sql":        {"*.sql"},
	"swift":      {"*.swift"},
	"tex":        {"*.tex", "*.sty", "*.bib"},
	"toml":       {"*.toml"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":        {"*.txt"},
	"vue":        {"*.vue"},
	"xml":        {"*.xml", "*.xsd", "*.xsl", "*.svg"},
	"yaml":       {"*.yaml", "*.yml"},
	"zig":        {"*.zig"},
	"terraform":  {"*.tf", "*.tfvars"},
	"svelte":     {"*.svelte"},
	"ocaml":      {"*.ml", "*.mli"},
	"clojure":    {"*.clj", "*.cljs", "*.cljc", "*.edn"},
	"perl":       {"*.pl", "*.pm"},
	"powershell": {"*.ps1", "*.psm1"},
	"graphql":    {"*.graphql", "*.gql"},
}

// typeAliases are other names models use for the same types.
var typeAliases = map[string]string{
	"golang": "go", "python": "py", "javascript": "js", "typescript": "ts", "rs": "rust",
	"ruby": "rb", "markdown": "md", "shell": "sh", "bash": "sh", "yml": "yaml", "c++": "cpp",
	"csharp": "cs", "kt": "kotlin", "text": "txt", "jsx": "js", "tsx": "ts", "dockerfile": "docker",
	"makefile": "make", "tf": "terraform", "hcl": "terraform",
}

// typeMatcher returns a test of base names for the type name t.
func typeMatcher(t string) (func(name string) bool, error) {
	key := strings.ToLower(strings.TrimSpace(t))
	if a, ok := typeAliases[key]; ok {
		key = a
	}
	globs, ok := fileTypes[key]
	if !ok {
		names := make([]string, 0, len(fileTypes))
		for k := range fileTypes {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown file type %q (known: %s)", t, strings.Join(names, ", "))
	}
	var exts, exact []string
	var other []string
	for _, g := range globs {
		switch {
		case strings.HasPrefix(g, "*.") && !strings.ContainsAny(g[1:], "*?["):
			exts = append(exts, g[1:])
		case !strings.ContainsAny(g, "*?["):
			exact = append(exact, g)
		default:
			other = append(other, g)
		}
	}
	return func(name string) bool {
		for _, e := range exts {
			if strings.HasSuffix(name, e) {
				return true
			}
		}
		for _, e := range exact {
			if name == e {
				return true
			}
		}
		for _, g := range other {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
		return false
	}, nil
}
