package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
)

// Providers enrich can ask.
const (
	providerAnthropic = "anthropic"
	providerOpenAI    = "openai"
)

func runEnrich(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("enrich", "[--catalog FILE] [--provider anthropic|openai] [--model M] [--base-url URL] [--out FILE] [--dry-run]", stderr)
	catPath := fs.String("catalog", "", catalogHelp)
	provider := fs.String("provider", providerAnthropic, "anthropic (Messages API, $ANTHROPIC_API_KEY) or openai (any OpenAI-compatible chat completions endpoint, $OPENAI_API_KEY)")
	model := fs.String("model", "", fmt.Sprintf("model to ask (default %s for anthropic, %s for openai)", enrich.DefaultAnthropicModel, enrich.DefaultOpenAIModel))
	baseURL := fs.String("base-url", "", "API base `url` (default $ANTHROPIC_BASE_URL or $OPENAI_BASE_URL, else the vendor's API); e.g. http://127.0.0.1:11434/v1 for Ollama")
	outHelp := "hints `file` to write and resume from"
	if p := defaultHintsPath(); p != "" {
		outHelp += " (default " + p + ", which serve reads)"
	}
	out := fs.String("out", "", outHelp)
	batch := fs.Int("batch", enrich.DefaultBatchSize, fmt.Sprintf("tools per request (1 to %d; one server's tools only)", enrich.MaxBatchSize))
	concurrency := fs.Int("concurrency", enrich.DefaultConcurrency, fmt.Sprintf("requests in flight at once (1 to %d)", enrich.MaxConcurrency))
	limit := fs.Int("limit", 0, "send at most `n` tools this run (0: all that need hints)")
	dryRun := fs.Bool("dry-run", false, "print what would be sent and what it should cost, and send nothing")
	var servers stringList
	fs.Var(&servers, "server", "only enrich this server `key` (repeatable)")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch enrich: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	if *provider != providerAnthropic && *provider != providerOpenAI {
		fmt.Fprintf(stderr, "toolsearch enrich: unknown --provider %q (want anthropic or openai)\n", *provider)
		return exitUsage
	}
	if *batch < 1 || *batch > enrich.MaxBatchSize {
		fmt.Fprintf(stderr, "toolsearch enrich: --batch %d is out of range 1..%d\n", *batch, enrich.MaxBatchSize)
		return exitUsage
	}
	if *concurrency < 1 || *concurrency > enrich.MaxConcurrency {
		fmt.Fprintf(stderr, "toolsearch enrich: --concurrency %d is out of range 1..%d\n", *concurrency, enrich.MaxConcurrency)
		return exitUsage
	}
	if *limit < 0 {
		fmt.Fprintf(stderr, "toolsearch enrich: --limit %d is negative\n", *limit)
		return exitUsage
	}
	if *out == "" {
		if *out = defaultHintsPath(); *out == "" {
			fmt.Fprintln(stderr, "toolsearch enrich: there is no user cache directory for the default hints file; name one with --out")
			return exitUsage
		}
	}
	snap, err := loadSnapshot(*catPath)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch enrich: %v\n", err)
		return exitUsage
	}
	var tools []*catalog.Tool
	for _, t := range snap.Tools() {
		if len(servers) == 0 || slices.Contains(servers, t.Server) {
			tools = append(tools, t)
		}
	}
	for _, s := range servers {
		if _, ok := snap.Server(s); !ok {
			fmt.Fprintf(stderr, "toolsearch enrich: --server %q: the catalog has no such server\n", s)
			return exitUsage
		}
	}
	cache, err := hints.OpenCache(*out)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch enrich: %v (enrich does not write over a hints file it cannot read)\n", err)
		return exitUsage
	}
	opts := enrich.Options{BatchSize: *batch, Concurrency: *concurrency}
	todo := needHints(tools, cache)
	held := 0
	if *limit > 0 && len(todo) > *limit {
		held, todo = len(todo)-*limit, todo[:*limit]
	}
	plan, err := enrich.NewPlan(todo, nil, opts)
	plan.Tools, plan.Current = len(tools), len(tools)-len(todo)-held
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch enrich: %v\n", err)
		return exitUsage
	}
	estimate := stderr
	if *dryRun {
		estimate = stdout
	}
	printEstimate(estimate, plan, held, *provider, modelName(*provider, *model), *out)
	if *dryRun || plan.Send == 0 {
		return exitOK
	}
	p, err := newProvider(*provider, *model, *baseURL)
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch enrich: %v\n", err)
		return exitUsage
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
		if os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("ANTHROPIC_AUTH_TOKEN") == "" && os.Getenv("ANTHROPIC_PROFILE") == "" {
			return nil, errors.New("set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)")
		}
		return enrich.NewAnthropic(enrich.Config{BaseURL: baseURL, Model: model}), nil
	}
}

func printEstimate(w io.Writer, p enrich.Plan, held int, provider, model, out string) {
	fmt.Fprintf(w, "enrich: %d tools; %d already have hints for their current definition (not sent); %d to send in %d requests\n",
		p.Tools, p.Current, p.Send, len(p.Batches))
	if held > 0 {
		fmt.Fprintf(w, "%d more need hints and are left for a later run (--limit)\n", held)
	}
	if p.Send == 0 {
		fmt.Fprintf(w, "nothing to send: %s is up to date\n", out)
		return
	}
	in := fmt.Sprintf("%d input tokens (o200k", p.InputTokens)
	if provider == providerAnthropic {
		in += fmt.Sprintf("; about %d for Claude models", catalog.ClaudeTokens(p.InputTokens))
	}
	fmt.Fprintf(w, "estimated cost: %s) and about %d output tokens\n", in, p.OutputTokens)
	fmt.Fprintf(w, "sent: each tool's name, description and input schema, to %s model %s; hints go to %s\n", provider, model, out)
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
