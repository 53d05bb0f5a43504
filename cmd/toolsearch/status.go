package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newServeFlags("status", "[-c FILE] [--timeout D] [--json]", stderr)
	timeout := f.fs.Duration("timeout", 0, "how long to wait for the servers (default: the start timeout plus 5s)")
	jsonOut := f.fs.Bool("json", false, "print JSON")
	if _, code, ok := parseFlags(f.fs, args, stdout); !ok {
		return code
	}
	cfg, found, err := f.load(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch status: %v\n", err)
		return exitUsage
	}
	return checkServers(ctx, cfg, found, *timeout, *jsonOut, stdout, stderr)
}

type statusJSON struct {
	Config   string `json:"config"`
	Exposure string `json:"auto_exposure"`
	Reason   string `json:"reason"`
	Tools    int    `json:"tools"`
	Tokens   int    `json:"tokens"`
	// Skills and SkillListTokens are the servers' skills clients can see
	// and what a first skills/list of them costs under full exposure.
	Skills          int            `json:"skills,omitempty"`
	SkillListTokens int            `json:"skill_list_tokens,omitempty"`
	Servers         []serverStatus `json:"servers"`
	// Builtins says which built-in tools are on and why, for a client
	// the gateway knows nothing of; BuiltinsNote how other clients differ.
	Builtins     []builtin.Decision `json:"builtins"`
	BuiltinsNote string             `json:"builtins_note,omitempty"`
	// Enrich is background enrichment: its configuration, what the state
	// directory says of its last run and today's spend, and the tools
	// with hints.
	Enrich gateway.EnrichStatus `json:"enrich"`
	// Policy lists the policy's patterns that match nothing: a server
	// that is not configured, a name no tool can have, or none of the
	// tools the servers listed.
	Policy []policyWarning `json:"policy_warnings,omitempty"`
}

// policyWarning is a policy pattern that matches nothing, and why.
type policyWarning struct {
	// Scope is "global" or the server's key.
	Scope   string `json:"scope"`
	List    string `json:"list"`
	Pattern string `json:"pattern"`
	Problem string `json:"problem"`
	Text    string `json:"text"`
}

type serverStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Protocol is the MCP version the server's session negotiated.
	Protocol string `json:"protocol,omitempty"`
	Tools    int    `json:"tools"`
	Tokens   int    `json:"tokens"`
	// Skills is how many of the server's skills clients can see (the
	// servers that declare the skills extension only).
	Skills *int   `json:"skills,omitempty"`
	Error  string `json:"error,omitempty"`
	// RetryAt is when a server that used up its restarts is tried again.
	RetryAt *time.Time `json:"retry_at,omitempty"`
}

// checkServers starts every server, waits for each to settle (at most
// timeout, saying on stderr how each one comes up), prints the states and
// the exposure auto would pick, and stops them. It exits 1 when a server
// is not ready or a policy pattern matches nothing.
func checkServers(ctx context.Context, cfg *config.Config, found bool, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	if !found {
		fmt.Fprintf(stderr, "toolsearch: no config file (looked in %s); give one with -c FILE, or write one with toolsearch import\n",
			strings.Join(config.DefaultPaths(), ", "))
		return exitUsage
	}
	// Nothing printed shows a secret of the configuration: a server's
	// stderr in its error may echo its env or headers.
	red := redact.New(cfg.Secrets()...)
	stderr = red.Writer(stderr)
	cfg.Gateway.Lazy = false
	for _, s := range cfg.Servers {
		s.Lazy = false
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	// A check asks no model: enrichment is shown as the state directory
	// has it, never run.
	g, err := gateway.New(cfg, gateway.Options{Logger: log, Version: buildVersion(), NoEnrich: true})
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch status: %v\n", err)
		return exitUsage
	}
	if timeout <= 0 {
		timeout = cfg.Gateway.Limits.StartTimeout + 5*time.Second
	}
	rctx, cancel := context.WithCancel(ctx)
	g.Start(rctx)
	gaveUp := watchStarts(ctx, g, timeout, stderr) // progress on stderr
	sts := g.Statuses()
	mode, reason := g.Exposure()
	builtins, builtinsNote := g.Builtins()
	enr := g.EnrichStatus()
	policyWarnings := g.PolicyWarnings()
	skillStats := g.SkillStats()
	cancel()
	g.Close()

	out := statusJSON{Config: cfg.Path, Exposure: mode, Reason: reason, Builtins: builtins, BuiltinsNote: builtinsNote, Enrich: enr,
		Skills: skillStats.Skills, SkillListTokens: skillStats.ListTokens}
	skillsOf := map[string]int{}
	for _, s := range skillStats.Servers {
		skillsOf[s.Server] = s.Skills
	}
	out.Enrich.Reason, out.Enrich.LastError = red.String(enr.Reason), red.String(enr.LastError)
	code := exitOK
	for _, s := range sts {
		row := serverStatus{Name: s.Key, State: string(s.State), Protocol: s.Protocol, Tools: s.Tools, Tokens: s.Tokens, Error: red.String(s.Error)}
		if why, ok := gaveUp[s.Key]; ok {
			row.Error = red.String("gave up waiting: " + why)
		}
		if !s.RetryAt.IsZero() {
			row.RetryAt = &s.RetryAt
		}
		if n, ok := skillsOf[s.Key]; ok {
			row.Skills = &n
		}
		if s.State != gateway.StateReady {
			code = 1
		}
		out.Tools += s.Tools
		out.Tokens += s.Tokens
		out.Servers = append(out.Servers, row)
	}
	for _, s := range cfg.Servers {
		if s.Disabled {
			out.Servers = append(out.Servers, serverStatus{Name: s.Key, State: "disabled"})
		}
	}
	for _, w := range policyWarnings {
		out.Policy = append(out.Policy, policyWarning{Scope: cmp.Or(w.Scope, "global"), List: w.List, Pattern: red.String(w.Pattern),
			Problem: red.String(w.Problem), Text: red.String(w.String())})
		code = 1
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return code
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tPROTOCOL\tTOOLS\tTOKENS\tERROR")
	var cut []serverStatus // errors too long for the table, printed whole below it
	for _, s := range out.Servers {
		e := s.Error
		if short, ok := shorten(e, errorColumn); ok {
			e = short
			cut = append(cut, s)
		}
		proto := s.Protocol
		if proto == "" {
			proto = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, s.State, proto, s.Tools, s.Tokens, e)
	}
	fmt.Fprintf(tw, "TOTAL\t\t\t%d\t%d\t\n", out.Tools, out.Tokens)
	tw.Flush()
	for _, s := range cut {
		fmt.Fprintf(stdout, "\n%s: %s\n", s.Name, s.Error)
	}
	printStatusSkills(stdout, out)
	printPolicy(stdout, out.Policy)
	fmt.Fprintf(stdout, "\nexposure auto would pick: %s (%s)\n", mode, reason)
	printEnrich(stdout, out.Enrich)
	printBuiltins(stdout, out.Builtins, out.BuiltinsNote)
	return code
}

// errorColumn is the width of the table's ERROR column, in runes.
const errorColumn = 160

// shorten cuts s to at most n runes, with an ellipsis, and reports whether
// it did.
func shorten(s string, n int) (string, bool) {
	r := []rune(s)
	if len(r) <= n {
		return s, false
	}
	return string(r[:n-1]) + "…", true
}

// printStatusSkills says, when servers declare the skills extension, how many
// skills each lets clients see and what their first list costs.
func printStatusSkills(w io.Writer, out statusJSON) {
	var per []string
	for _, s := range out.Servers {
		if s.Skills != nil {
			per = append(per, fmt.Sprintf("%s %d", s.Name, *s.Skills))
		}
	}
	if len(per) == 0 {
		return
	}
	fmt.Fprintf(w, "\nskills: %d (%s); a skills/list of them all costs %d tokens (full exposure; search and dynamic exposure defer them to search)\n",
		out.Skills, strings.Join(per, ", "), out.SkillListTokens)
}

// printPolicy prints the policy's patterns that match nothing.
func printPolicy(w io.Writer, ws []policyWarning) {
	if len(ws) == 0 {
		return
	}
	fmt.Fprintf(w, "\npolicy: %d %s match nothing, so the tools they mean to name are not affected:\n", len(ws),
		map[bool]string{true: "pattern", false: "patterns"}[len(ws) == 1])
	for _, p := range ws {
		fmt.Fprintf(w, "  %s\n", p.Text)
	}
}

// printEnrich prints the tools with search hints and, when background
// enrichment is on, its state in one line, today's spend against the
// budget and its last error.
func printEnrich(w io.Writer, e gateway.EnrichStatus) {
	fmt.Fprintf(w, "\nsearch hints: %d of %d %s hints for their current definition\n", e.WithHints, e.Tools,
		map[bool]string{true: "tool has", false: "tools have"}[e.Tools == 1])
	if e.State == gateway.EnrichOff {
		fmt.Fprintln(w, "background enrichment: off (toolsearch.enrich.enabled)")
		return
	}
	model := e.Model
	if model == "" {
		model = "its default model"
	}
	fmt.Fprintf(w, "background enrichment (provider %s, %s): %s\n", e.Provider, model, e.Line())
	if e.Day != "" {
		fmt.Fprintf(w, "  today (UTC %s): %d of %d tools, %d of %d tokens; %d tools written, %d rejected, %d failed\n",
			e.Day, e.Spent.Tools, e.Budget.Tools, e.Spent.Tokens, e.Budget.Tokens, e.Today.Written, e.Today.Rejected, e.Today.Failed)
	}
	if e.NextRun != nil {
		fmt.Fprintf(w, "  next run: %s\n", e.NextRun.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if e.LastError != "" {
		at := ""
		if e.LastErrorAt != nil {
			at = " (" + e.LastErrorAt.UTC().Format("2006-01-02 15:04:05 UTC") + ")"
		}
		fmt.Fprintf(w, "  last error%s: %s\n", at, e.LastError)
	}
}

// printBuiltins prints which built-in tools are on and why, one line each.
func printBuiltins(w io.Writer, ds []builtin.Decision, note string) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(w, "\nbuilt-in tools (for a client not known to the gateway, and every MCP 2026-07-28 client):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, d := range ds {
		state := "off"
		if d.On {
			state = "on"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Tool, state, d.Reason)
	}
	tw.Flush()
	if note != "" {
		fmt.Fprintf(w, "  (%s)\n", note)
	}
}
