package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// shells are the shells completion writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

// runCompletion prints the completion script of one shell: the commands,
// and each command's flags as its --help lists them, so the script never
// falls behind a flag.
func runCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("completion", "bash|zsh|fish", stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: toolsearch completion bash|zsh|fish

Prints a shell completion script for toolsearch. Load it with:

  bash:  source <(toolsearch completion bash)     (or save it in bash-completion's completions dir)
  zsh:   source <(toolsearch completion zsh)      (after compinit)
  fish:  toolsearch completion fish | source      (or save it as ~/.config/fish/completions/toolsearch.fish)
`)
	}
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) != 1 || !slices.Contains(shells, pos[0]) {
		fmt.Fprintf(stderr, "toolsearch completion: name one shell of %s\n", strings.Join(shells, ", "))
		return exitUsage
	}
	specs := completionSpecs(ctx)
	switch pos[0] {
	case "bash":
		writeBash(stdout, specs)
	case "zsh":
		writeZsh(stdout, specs)
	case "fish":
		writeFish(stdout, specs)
	}
	return exitOK
}

// completionSpec is what a script completes for one command.
type completionSpec struct {
	name, summary string
	flags         []string // as typed: "-c", "--exposure"
	words         []string // fixed first arguments (help's commands, completion's shells)
}

// flagLine matches a flag's first line in flag.PrintDefaults output.
var flagLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_-]*)`)

// completionSpecs lists every command with the flags its --help prints.
func completionSpecs(ctx context.Context) []completionSpec {
	var specs []completionSpec
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	for _, c := range commands {
		s := completionSpec{name: c.name, summary: c.summary}
		switch c.name {
		case "help":
			s.words = names
		case "completion":
			s.words = shells
		}
		var out bytes.Buffer
		c.run(ctx, []string{"--help"}, &out, io.Discard)
		for _, line := range strings.Split(out.String(), "\n") {
			m := flagLine.FindStringSubmatch(line)
			if m == nil || m[1] == "h" || m[1] == "help" {
				continue
			}
			f := "--" + m[1]
			if len(m[1]) == 1 {
				f = "-" + m[1]
			}
			if !slices.Contains(s.flags, f) {
				s.flags = append(s.flags, f)
			}
		}
		s.flags = append(s.flags, "--help")
		specs = append(specs, s)
	}
	return specs
}

func commandNames(specs []completionSpec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return strings.Join(names, " ")
}

func writeBash(w io.Writer, specs []completionSpec) {
	fmt.Fprintf(w, `# bash completion for toolsearch: source <(toolsearch completion bash)
_toolsearch() {
  local cur=${COMP_WORDS[COMP_CWORD]} flags="" fixed=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))
    return
  fi
  case ${COMP_WORDS[1]} in
`, commandNames(specs))
	for _, s := range specs {
		fmt.Fprintf(w, "    %s) flags=\"%s\"; fixed=\"%s\" ;;\n", s.name, strings.Join(s.flags, " "), strings.Join(s.words, " "))
	}
	fmt.Fprint(w, `  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [ -n "$fixed" ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=($(compgen -W "$fixed" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o default -F _toolsearch toolsearch
`)
}

func writeZsh(w io.Writer, specs []completionSpec) {
	fmt.Fprintf(w, `#compdef toolsearch
# zsh completion for toolsearch: source <(toolsearch completion zsh)
_toolsearch() {
  local -a flags fixed
  if (( CURRENT == 2 )); then
    compadd -- %s --help --version
    return
  fi
  case ${words[2]} in
`, commandNames(specs))
	for _, s := range specs {
		fmt.Fprintf(w, "    %s) flags=(%s); fixed=(%s) ;;\n", s.name, strings.Join(s.flags, " "), strings.Join(s.words, " "))
	}
	fmt.Fprint(w, `  esac
  if [[ ${words[CURRENT]} == -* ]]; then
    compadd -- $flags
  elif (( CURRENT == 3 && ${#fixed} > 0 )); then
    compadd -- $fixed
  else
    _files
  fi
}
compdef _toolsearch toolsearch
`)
}

func writeFish(w io.Writer, specs []completionSpec) {
	fmt.Fprintln(w, "# fish completion for toolsearch: toolsearch completion fish | source")
	fmt.Fprintln(w, "complete -c toolsearch -n __fish_use_subcommand -l version -d 'print the version'")
	for _, s := range specs {
		fmt.Fprintf(w, "complete -c toolsearch -f -n __fish_use_subcommand -a %s -d %s\n", s.name, fishQuote(s.summary))
		cond := fishQuote("__fish_seen_subcommand_from " + s.name)
		for _, f := range s.flags {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(w, "complete -c toolsearch -n %s -l %s\n", cond, strings.TrimPrefix(f, "--"))
			} else {
				fmt.Fprintf(w, "complete -c toolsearch -n %s -o %s\n", cond, strings.TrimPrefix(f, "-"))
			}
		}
		if len(s.words) > 0 {
			fmt.Fprintf(w, "complete -c toolsearch -f -n %s -a %s\n", cond, fishQuote(strings.Join(s.words, " ")))
		}
	}
}

// fishQuote quotes s for fish: single quotes, with \ and ' escaped.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
