// Command toolsearch turns a long list of tool definitions into an index that
// a model searches instead of reading every definition.
//
// Usage:
//
//	toolsearch <command> [flags] [args]
//
// Commands:
//
//	search      find tools by name, keywords, natural language or regex
//	tools       where the tokens of a tool list go, per server
//	eval        hit@1, hit@k, MRR, NDCG@k and recall@k of the search over a query set
//	lint        how findable each tool is, and what makes it hard to find
//	usage       show or reset what ranking learned from the tools called after searches
//	enrich      ask a model for search hints for each tool, once per definition
//	serve       the MCP gateway: one server in front of all of yours, with tool search
//	status      start every configured server and show its state, protocol version, tools and tokens
//	import      write a gateway config from a client's settings
//	proxy       a Messages API proxy that keeps tool search working through endpoints that break it
//	init        a commented starter config
//	add         add a server to the config (a command, or a URL)
//	remove      remove servers from the config
//	list        the config's servers
//	call        call one server's tool from the shell, through the gateway
//	version     the version, Go release, platform and commit of the binary
//	help        the help of a command
//	completion  a completion script for bash, zsh or fish
//
// Run "toolsearch help <command>" or "toolsearch <command> --help" for a
// command's flags; "toolsearch --version" prints the version. Exit codes: 0 for
// success, 1 when a search finds nothing (or an evaluation fails), 2 for a
// usage error or bad input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK       = 0
	exitNoResult = 1
	exitUsage    = 2
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"search", "find tools by name, keywords, natural language or regex", runSearch},
		{"tools", "show per server its tools, tokens, share of the total and what deferring saves", runTools},
		{"eval", "measure hit@1, hit@k, MRR, NDCG@k and recall@k of the search over a query set", runEval},
		{"lint", "tell tool authors how findable their tools are", runLint},
		{"usage", "show or reset what ranking learned from the tools called after searches", runUsage},
		{"enrich", "ask a model to write search hints for each tool, once per definition", runEnrich},
		{"serve", "run the MCP gateway: one server in front of all of yours, with tool search", runServe},
		{"status", "start every configured server and show its state, protocol version, tools and tokens", runStatus},
		{"import", "write a gateway config from Claude Desktop, Claude Code, Cursor, VS Code or Windsurf settings, or a FILE", runImport},
		{"proxy", "run a Messages API proxy that keeps tool search working through endpoints that break it", runProxy},
		{"init", "write a commented starter config", runInit},
		{"add", "add a server to the config: toolsearch add NAME -- COMMAND ARGS...", runAdd},
		{"remove", "remove servers from the config", runRemove},
		{"list", "list the config's servers", runList},
		{"call", "call one server's tool from the shell: toolsearch call SERVER/TOOL '{json}'", runCall},
		{"version", "print the version, Go release, platform and commit of this binary", runVersion},
		{"help", "print the help of a command: toolsearch help <command>", runHelp},
		{"completion", "print a completion script for bash, zsh or fish", runCompletion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help":
		usage(stdout)
		return exitOK
	case "-V", "--version", "-version":
		return runVersion(ctx, nil, stdout, stderr)
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "toolsearch: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: toolsearch <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "toolsearch help <command>" for a command's flags, "toolsearch --version" for the version.`)
}

// runHelp prints the general help, or with a command's name that command's
// help, on stdout.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitOK
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "toolsearch help: name one command, got %d words\n", len(args))
		return exitUsage
	}
	for _, c := range commands {
		if c.name == args[0] && c.name != "help" {
			return c.run(ctx, []string{"--help"}, stdout, stderr)
		}
	}
	if args[0] == "help" {
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "toolsearch help: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

// newFlags returns a flag set for a subcommand whose usage prints the
// synopsis and the flags.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolsearch %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags that may stand before, between or after the
// positional arguments (everything after "--" is positional). It returns the
// positional arguments, or the exit code to return at once.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, exitOK, false
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
