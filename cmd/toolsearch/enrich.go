package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/builtin"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// Providers enrich can ask.
const (
	providerAnthropic = "anthropic"
	providerOpenAI    = "openai"
)

// enrichSourceHelp explains, in enrich's help, which tools are sent and
// where their hints go.
const enrichSourceHelp = `

The tools are those of your config's servers (-c FILE, else the first
default path that exists), as serve would show them (policy applies: only
tools clients could see are sent), read as search reads them: a server
whose cached manifest is younger than --max-age answers from it, the others
are started and stopped again, with a line per server on stderr. Or those
of --catalog FILE; --catalog demo is the embedded demo catalog, used only
when named. With neither a config nor --catalog, enrich stops.

Hints go to --out, by default the file serve reads: hints.jsonl in the
config's state directory (toolsearch.stateDir), else in the default one.
Tools whose hints there are current for their definition are not sent.`

func runEnrich(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("enrich", "[-c CONFIG | --catalog FILE|demo] [--server KEY]... [--provider anthropic|openai] [--model M] [--base-url URL] [-o|--out FILE] [--dry-run [--json]]"+enrichSourceHelp, stderr)
	src := newSourceFlags(fs, "catalog `file` (collected or plain format) instead of the config's servers; "+demoCatalog+": the embedded demo catalog")
	src.demoByName = true
	provider := fs.String("provider", providerAnthropic, "anthropic (Messages API, $ANTHROPIC_API_KEY) or openai (any OpenAI-compatible chat completions endpoint, $OPENAI_API_KEY)")
	model := fs.String("model", "", fmt.Sprintf("model to ask (default %s for anthropic, %s for openai)", enrich.DefaultAnthropicModel, enrich.DefaultOpenAIModel))
	baseURL := fs.String("base-url", "", "API base `url` (default $ANTHROPIC_BASE_URL or $OPENAI_BASE_URL, else the vendor's API); e.g. http://127.0.0.1:11434/v1 for Ollama")
	outHelp := "hints `file` to write and resume from (default: the one serve reads, hints.jsonl in the config's state directory"
	if p := defaultHintsPath(); p != "" {
		outHelp += "; " + p + " with --catalog or a config without stateDir"
	}
	out := outFlag(fs, outHelp+")") // import.go
	batch := fs.Int("batch", enrich.DefaultBatchSize, fmt.Sprintf("tools per request (1 to %d; one server's tools only)", enrich.MaxBatchSize))
	concurrency := fs.Int("concurrency", enrich.DefaultConcurrency, fmt.Sprintf("requests in flight at once (1 to %d)", enrich.MaxConcurrency))
	limit := fs.Int("limit", 0, "send at most `n` tools this run (0: all that need hints)")
	dryRun := fs.Bool("dry-run", false, "print the tools, the requests, the tokens and the estimated price, and send nothing (no key needed)")
	asJSON := fs.Bool("json", false, "with --dry-run: print the plan as one JSON object")
	var servers stringList
	fs.Var(&servers, "server", "only enrich this server `key` (repeatable)")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolsearch enrich: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case len(pos) > 0:
		return fail("unexpected argument %q", pos[0])
	case *provider != providerAnthropic && *provider != providerOpenAI:
		return fail("unknown --provider %q (want anthropic or openai)", *provider)
	case *batch < 1 || *batch > enrich.MaxBatchSize:
		return fail("--batch %d is out of range 1..%d", *batch, enrich.MaxBatchSize)
	case *concurrency < 1 || *concurrency > enrich.MaxConcurrency:
		return fail("--concurrency %d is out of range 1..%d", *concurrency, enrich.MaxConcurrency)
	case *limit < 0:
		return fail("--limit %d is negative", *limit)
	case *asJSON && !*dryRun:
		return fail("--json goes with --dry-run (a run prints its progress as text)")
	}
	from, err := src.resolve("enrich", stderr)
	if err != nil {
		return fail("%v", err)
	}
	// Everything that can be refused is, before a server is started: a
	// catalog is read at once, a config's servers are started last.
	var snap *catalog.Snapshot
	if from.cfg == nil {
		if snap, _, err = src.snapshot(ctx, "enrich", from, stderr); err != nil {
			return fail("%v", err)
		}
		for _, s := range servers {
			if _, ok := snap.Server(s); !ok {
				return fail("--server %q: the catalog has no such server", s)
			}
		}
	} else if err := onlyServers(from, servers); err != nil {
		return fail("%v", err)
	}
	if *out == "" {
		if *out = from.hintsPath(); *out == "" {
			return fail("there is no user cache directory for the default hints file; name one with --out")
		}
	}
	cache, err := hints.OpenCache(*out)
	if err != nil {
		return fail("%v (enrich does not write over a hints file it cannot read)", err)
	}
	var p enrich.Provider
	if !*dryRun {
		if p, err = newProvider(*provider, *model, *baseURL); err != nil {
			return fail("%v", err)
		}
	}
	if snap == nil {
		if snap, _, err = src.snapshot(ctx, "enrich", from, stderr); err != nil {
			fmt.Fprintf(stderr, "toolsearch enrich: %v\n", err)
			if ctx.Err() != nil {
				return exitNoResult
			}
			return exitUsage
		}
		for _, s := range servers {
			if _, ok := snap.Server(s); !ok {
				fmt.Fprintf(stderr, "toolsearch enrich: --server %q: no tools to enrich (the server did not start, or policy hides every tool)\n", s)
			}
		}
	}
	var tools []*catalog.Tool
	for _, t := range snap.Tools() {
		if len(servers) == 0 || slices.Contains(servers, t.Server) {
			tools = append(tools, t)
		}
	}
	opts := enrich.Options{BatchSize: *batch, Concurrency: *concurrency}
	if from.cfg != nil {
		opts.Redact = redact.New(from.cfg.Secrets()...).String
	}
	todo := needHints(tools, cache)
	held := 0
	if *limit > 0 && len(todo) > *limit {
		held, todo = len(todo)-*limit, todo[:*limit]
	}
	plan, err := enrich.NewPlan(todo, nil, opts)
	if err != nil {
		return fail("%v", err)
	}
	plan.Tools, plan.Current = len(tools), len(tools)-len(todo)-held
	est := estimate{plan: plan, held: held, from: from, provider: *provider, model: modelName(*provider, *model), out: *out}
	switch {
	case *dryRun && *asJSON:
		writeJSON(stdout, est.json())
		return exitOK
	case *dryRun:
		est.print(stdout, true)
		return exitOK
	}
	est.print(stderr, false)
	if plan.Send == 0 {
		return exitOK
	}
	start := time.Now()
	line := progressWriter(stderr)
	opts.Progress = func(pr enrich.Progress) { line.show(progressText(pr)) }
	res, err := enrich.Run(ctx, p, plan, cache, opts)
	line.done()
	for i, r := range append(res.Rejections, res.Failures...) {
		if i == 20 {
			fmt.Fprintf(stderr, "  … and %d more\n", len(res.Rejections)+len(res.Failures)-20)
			break
		}
		fmt.Fprintf(stderr, "  not written: %s\n", r)
	}
	fmt.Fprintf(stdout, "enrich: %d tools written to %s, %d rejected, %d failed; %d requests, %d input and %d output tokens, in %v\n",
		res.Written, *out, res.Rejected, res.Failed, res.Requests, res.InputTokens, res.OutputTokens, time.Since(start).Round(time.Second))
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "toolsearch enrich: interrupted; what was finished is kept, and running again sends only the rest")
		return exitNoResult
	case err != nil:
		fmt.Fprintf(stderr, "toolsearch enrich: %v\n", err)
		return exitNoResult
	case res.Rejected+res.Failed > 0:
		fmt.Fprintln(stderr, "toolsearch enrich: running again asks again for the tools not written")
		return exitNoResult
	}
	return exitOK
}

// hintsPath is the hints file serve reads for src: the config's state
// directory's; for a catalog, the default state directory's. It is ""
// when there is no state directory.
func (s source) hintsPath() string {
	if s.cfg == nil {
		return defaultHintsPath()
	}
	if s.cfg.Gateway.StateDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.Gateway.StateDir, hintsFileName)
}

// onlyServers checks that src's config has every server named (or that
// the name is the built-in tools'), and keeps only those (all when none is
// named), so that no other server is started.
func onlyServers(src source, names []string) error {
	if len(names) == 0 {
		return nil
	}
	cfg := src.cfg
	var kept []*config.Server
	for _, name := range names {
		if name == builtin.Key {
			continue
		}
		i := slices.IndexFunc(cfg.Servers, func(s *config.Server) bool { return s.Key == name })
		if i < 0 {
			keys := make([]string, 0, len(cfg.Servers))
			for _, s := range cfg.Servers {
				keys = append(keys, s.Key)
			}
			have := "it has none"
			switch {
			case len(keys) > 10:
				have = fmt.Sprintf("it has %s and %d more", strings.Join(keys[:10], ", "), len(keys)-10)
			case len(keys) > 0:
				have = "it has " + strings.Join(keys, ", ")
			}
			return fmt.Errorf("--server %q: %s has no such server (%s)", name, src.configPath, have)
		}
		if !slices.Contains(kept, cfg.Servers[i]) {
			kept = append(kept, cfg.Servers[i])
		}
	}
	cfg.Servers = kept
	return nil
}

// needHints returns the tools the cache has no current hints for.
func needHints(tools []*catalog.Tool, cache *hints.Cache) []*catalog.Tool {
	var out []*catalog.Tool
	for _, t := range tools {
		if !cache.Current(t) {
			out = append(out, t)
		}
	}
	return out
}

func modelName(provider, model string) string {
	switch {
	case model != "":
		return model
	case provider == providerOpenAI:
		return enrich.DefaultOpenAIModel
	}
	return enrich.DefaultAnthropicModel
}

// newProvider makes the provider named. The key comes from the
// environment only: a flag would show it in ps.
func newProvider(name, model, baseURL string) (enrich.Provider, error) {
	switch name {
	case providerOpenAI:
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" && baseURL == "" && os.Getenv("OPENAI_BASE_URL") == "" {
			return nil, errors.New("set OPENAI_API_KEY (or give --base-url for a server that needs no key)")
		}
		if key == "" {
			key = "none" // local servers (Ollama, vLLM, LM Studio) take any key
		}
		return enrich.NewOpenAI(enrich.Config{APIKey: key, BaseURL: baseURL, Model: model}), nil
	default:
		if os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("ANTHROPIC_AUTH_TOKEN") == "" {
			return nil, errors.New("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")
		}
		return enrich.NewAnthropic(enrich.Config{BaseURL: baseURL, Model: model}), nil
	}
}

// estimate is what a run will send, and what it should cost.
type estimate struct {
	plan enrich.Plan
	// held counts the tools that need hints and are left for a later run
	// (--limit).
	held            int
	from            source
	provider, model string
	out             string
}

// headline is the line printed before anything is sent: where the tools
// come from, how many are sent and how many are not.
func (e estimate) headline() string {
	return fmt.Sprintf("enrich: %s: %s; %d already have hints for their current definition (not sent); %d to send in %s",
		e.from, plural(e.plan.Tools, "tool"), e.plan.Current, e.plan.Send, plural(len(e.plan.Batches), "request"))
}

// print writes the estimate; a dry run's lists every tool, the requests
// and the price at every model's published price, a run's only the price
// at the model asked for.
func (e estimate) print(w io.Writer, dry bool) {
	p := e.plan
	fmt.Fprintln(w, e.headline())
	if e.held > 0 {
		fmt.Fprintf(w, "%d more need hints and are left for a later run (--limit)\n", e.held)
	}
	if p.Send == 0 {
		fmt.Fprintf(w, "nothing to send: %s is up to date\n", e.out)
		return
	}
	if dry {
		width := 0
		for _, b := range p.Batches {
			for _, t := range b.Tools {
				width = max(width, min(len(t.ID()), 60))
			}
		}
		fmt.Fprintln(w, "tools to send, with the o200k tokens of each definition:")
		for _, b := range p.Batches {
			for _, t := range b.Tools {
				fmt.Fprintf(w, "  %-*s %7d\n", width, t.ID(), t.Tokens())
			}
		}
		least, most := requestSizes(p)
		if least == most {
			fmt.Fprintf(w, "requests: %d, of %s each (a request holds one server's tools)\n", len(p.Batches), plural(most, "tool"))
		} else {
			fmt.Fprintf(w, "requests: %d, of %d to %d tools (%.1f on average; a request holds one server's tools)\n",
				len(p.Batches), least, most, float64(p.Send)/float64(len(p.Batches)))
		}
	}
	fmt.Fprintf(w, "estimated tokens: %d input (o200k) and about %d output; Claude models count about %.0f%% more: %d and %d\n",
		p.InputTokens, p.OutputTokens, 100*(catalog.ClaudeTokenFactor-1), catalog.ClaudeTokens(p.InputTokens), catalog.ClaudeTokens(p.OutputTokens))
	if dry {
		e.printPrices(w)
		fmt.Fprintf(w, "would send: each tool's name, description and input schema, to %s model %s; hints would go to %s\n", e.provider, e.model, e.out)
		return
	}
	if price, ok := enrich.PriceOf(e.model); ok {
		fmt.Fprintf(w, "estimated price: %s at %s's published $%.2f/$%.2f per million input/output tokens (as of %s)\n",
			usd(price.Cost(p.InputTokens, p.OutputTokens)), e.model, price.Input, price.Output, enrich.PricesAsOf)
	} else {
		fmt.Fprintf(w, "estimated price: unknown for %s (not in the table of published prices of %s)\n", e.model, enrich.PricesAsOf)
	}
	fmt.Fprintf(w, "sent: each tool's name, description and input schema, to %s model %s; hints go to %s\n", e.provider, e.model, e.out)
}

// printPrices writes the estimated price at every model's published price,
// and says so when the model asked for has none.
func (e estimate) printPrices(w io.Writer) {
	prices := enrich.Prices()
	_, known := enrich.PriceOf(e.model)
	width := len("MODEL")
	for _, pr := range prices {
		width = max(width, len(pr.Model))
	}
	if !known {
		width = max(width, len(e.model))
	}
	fmt.Fprintf(w, "estimated price at the published prices of %s (standard rates, no batch or cache discount; prices change):\n", enrich.PricesAsOf)
	fmt.Fprintf(w, "  %-*s %8s %8s %9s\n", width, "MODEL", "$/M IN", "$/M OUT", "ESTIMATE")
	if !known {
		fmt.Fprintf(w, "  %-*s %27s  the model asked for\n", width, e.model, "price unknown")
	}
	for _, pr := range prices {
		notes := pr.Note
		if got, _ := enrich.PriceOf(e.model); got.Model == pr.Model {
			notes = strings.TrimSuffix("the model asked for; "+notes, "; ")
		}
		row := fmt.Sprintf("  %-*s %8.2f %8.2f %9s  %s", width, pr.Model, pr.Input, pr.Output,
			usd(pr.Cost(e.plan.InputTokens, e.plan.OutputTokens)), notes)
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

// requestSizes returns the fewest and the most tools a request of p holds.
func requestSizes(p enrich.Plan) (least, most int) {
	for i, b := range p.Batches {
		if i == 0 || len(b.Tools) < least {
			least = len(b.Tools)
		}
		most = max(most, len(b.Tools))
	}
	return least, most
}

// usd formats an estimated price in dollars.
func usd(v float64) string {
	if v > 0 && v < 0.005 {
		return "<$0.01"
	}
	return fmt.Sprintf("$%.2f", v)
}

// enrichPlanJSON is enrich --dry-run --json.
type enrichPlanJSON struct {
	// Source is "config", "catalog" or "demo"; Path the config or catalog
	// file.
	Source string `json:"source"`
	Path   string `json:"path,omitempty"`
	// Out is the hints file the run would write.
	Out      string `json:"out"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Tools counts the tools considered, Current those whose hints are
	// current (not sent), Held those left for a later run by --limit.
	Tools   int `json:"tools"`
	Current int `json:"current"`
	Held    int `json:"held"`
	Send    int `json:"send"`
	// ToSend are the tools to send, with the o200k tokens of each
	// definition.
	ToSend   []toolTokensJSON  `json:"to_send"`
	Requests []enrichBatchJSON `json:"requests"`
	// InputTokens and OutputTokens are o200k estimates; ClaudeInputTokens
	// and ClaudeOutputTokens the same for Claude models.
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	ClaudeInputTokens  int `json:"claude_input_tokens"`
	ClaudeOutputTokens int `json:"claude_output_tokens"`
	// PricesAsOf dates the prices; Prices has the model asked for first.
	PricesAsOf string           `json:"prices_as_of"`
	Prices     []modelPriceJSON `json:"prices"`
}

type toolTokensJSON struct {
	ID     string `json:"id"`
	Tokens int    `json:"tokens"`
}

type enrichBatchJSON struct {
	Server      string `json:"server"`
	Tools       int    `json:"tools"`
	InputTokens int    `json:"input_tokens"`
}

// modelPriceJSON is one model's published price and the estimate at it;
// the numbers are absent when the price is unknown.
type modelPriceJSON struct {
	Model string `json:"model"`
	// Asked marks the model the run would ask.
	Asked  bool     `json:"asked,omitempty"`
	Known  bool     `json:"known"`
	Vendor string   `json:"vendor,omitempty"`
	Input  *float64 `json:"input_per_mtok,omitempty"`
	Output *float64 `json:"output_per_mtok,omitempty"`
	USD    *float64 `json:"usd,omitempty"`
	Note   string   `json:"note,omitempty"`
}

func (e estimate) json() enrichPlanJSON {
	p := e.plan
	j := enrichPlanJSON{Out: e.out, Provider: e.provider, Model: e.model,
		Tools: p.Tools, Current: p.Current, Held: e.held, Send: p.Send,
		ToSend: []toolTokensJSON{}, Requests: []enrichBatchJSON{},
		InputTokens: p.InputTokens, OutputTokens: p.OutputTokens,
		ClaudeInputTokens: catalog.ClaudeTokens(p.InputTokens), ClaudeOutputTokens: catalog.ClaudeTokens(p.OutputTokens),
		PricesAsOf: enrich.PricesAsOf}
	switch {
	case e.from.cfg != nil:
		j.Source, j.Path = "config", e.from.configPath
	case e.from.catalog == demoCatalog:
		j.Source = "demo"
	default:
		j.Source, j.Path = "catalog", e.from.catalog
	}
	for _, b := range p.Batches {
		j.Requests = append(j.Requests, enrichBatchJSON{Server: b.Server, Tools: len(b.Tools), InputTokens: b.InputTokens})
		for _, t := range b.Tools {
			j.ToSend = append(j.ToSend, toolTokensJSON{ID: t.ID(), Tokens: t.Tokens()})
		}
	}
	asked, known := enrich.PriceOf(e.model)
	if !known {
		j.Prices = append(j.Prices, modelPriceJSON{Model: e.model, Asked: true})
	}
	for _, pr := range enrich.Prices() {
		in, outp, cost := pr.Input, pr.Output, math.Round(pr.Cost(p.InputTokens, p.OutputTokens)*1e6)/1e6
		m := modelPriceJSON{Model: pr.Model, Asked: known && pr.Model == asked.Model, Known: true, Vendor: pr.Vendor,
			Input: &in, Output: &outp, USD: &cost, Note: pr.Note}
		if m.Asked {
			j.Prices = slices.Insert(j.Prices, 0, m)
		} else {
			j.Prices = append(j.Prices, m)
		}
	}
	return j
}

func progressText(p enrich.Progress) string {
	s := fmt.Sprintf("enrich: %d/%d tools (%d written, %d rejected, %d failed), %d requests, %d input + %d output tokens",
		p.ToolsDone, p.ToolsTotal, p.Written, p.Rejected, p.Failed, p.Requests, p.InputTokens, p.OutputTokens)
	if p.Wait > 0 {
		s += fmt.Sprintf("; waiting %v (%s)", p.Wait.Round(100*time.Millisecond), p.WaitReason)
	}
	return s
}

// statusLine shows progress on one line that rewrites itself on a
// terminal, or a line per update elsewhere.
type statusLine struct {
	w     io.Writer
	tty   bool
	width int
}

func progressWriter(w io.Writer) *statusLine {
	l := &statusLine{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			l.tty = true
		}
	}
	return l
}

func (l *statusLine) show(s string) {
	if !l.tty {
		fmt.Fprintln(l.w, s)
		return
	}
	pad := ""
	if n := l.width - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	l.width = len(s)
	fmt.Fprintf(l.w, "\r%s%s", s, pad)
}

func (l *statusLine) done() {
	if l.tty && l.width > 0 {
		fmt.Fprintln(l.w)
	}
}
