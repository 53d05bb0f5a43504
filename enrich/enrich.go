// Package enrich asks a model to write search hints for tool definitions,
// once per definition, and keeps them in a hints file (package hints) that
// the search index reads.
//
// For each tool it asks for HintsPerTool short phrasings: keywords, a plain
// task, a casual or jargon phrasing in other words than the description,
// and a goal that implies the tool. Only the tool's name, description and
// input schema are sent (catalog.Tool.Definition); never its server's
// configuration, its annotations or anything else.
//
// Tools go in batches (Options.BatchSize, never mixing two servers in one
// request, so that what one server's descriptions say cannot steer the
// hints of another server's tools), with a bounded number of requests in
// flight (Options.Concurrency). A 429, a 5xx or a network error is retried
// a bounded number of times, after the wait the provider asks for in
// Retry-After (a 429 pauses every request, not only the one that got it),
// or else after a growing back-off; every wait ends when the context does.
// A provider that refuses the credentials or the model (401, 403, 404), or
// fails or answers nothing usable three times in a row, ends the run.
//
// The run is resumable: a tool whose hints are already in the cache for
// its current definition (same digest) is never sent again, and each
// batch is written to the cache as soon as it is checked, atomically, so
// an interrupted run keeps every batch it finished.
//
// The model's reply is untrusted text. It is parsed as the JSON asked for
// (a code fence around it is stripped) and nothing in it is followed or
// executed. Each tool's hints are checked on their own: a tool the reply
// leaves out, names twice, or gives hints that are not strings, empty, too
// long or not exactly HintsPerTool, is rejected with a message naming the
// tool and the problem, and nothing is cached for it; a name that was not
// in the request is rejected and never cached under any tool. The valid
// tools of the same reply are kept, since each tool's hints stand alone;
// a reply that is not JSON at all rejects its whole batch. Rejected tools
// are asked for again by the next run.
package enrich

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// HintsPerTool is how many hints enrich asks for per tool, and how many a
// reply must give.
const HintsPerTool = 4

// Provider sends one prompt to a model and returns its answer.
// Implementations return a *StatusError for an HTTP error status, so that
// enrich can tell what to retry and how long to wait.
type Provider interface {
	Complete(ctx context.Context, req Request) (Reply, error)
}

// Request is one prompt.
type Request struct {
	// System is the system prompt.
	System string
	// Prompt is the user message.
	Prompt string
	// MaxTokens bounds the reply.
	MaxTokens int
}

// Reply is a model's answer.
type Reply struct {
	// Text is the answer's text.
	Text string
	// InputTokens and OutputTokens are what the provider counted; zero
	// when it does not say.
	InputTokens, OutputTokens int
}

// Defaults and bounds of Options.
const (
	DefaultBatchSize      = 10
	MaxBatchSize          = 50
	DefaultConcurrency    = 2
	MaxConcurrency        = 16
	DefaultMaxBatchTokens = 20_000
	DefaultRetries        = 4
	DefaultMaxRetryWait   = 2 * time.Minute
	DefaultBackoff        = time.Second
	maxBackoff            = 30 * time.Second
	DefaultRequestTimeout = 3 * time.Minute
)

// Options tune a run. Zero values mean the defaults.
type Options struct {
	// BatchSize is the most tools per request (1 to MaxBatchSize).
	BatchSize int
	// Concurrency is the most requests in flight (1 to MaxConcurrency).
	Concurrency int
	// MaxBatchTokens closes a batch early when its prompt would exceed
	// this many o200k tokens (a tool larger than that goes alone).
	MaxBatchTokens int
	// Retries is how many times a failed request is tried again.
	Retries int
	// MaxRetryWait is the longest Retry-After honoured: a provider that
	// asks for a longer wait fails the batch instead.
	MaxRetryWait time.Duration
	// Backoff is the first wait before a retry when the provider names
	// none; it doubles at each retry, up to 30s.
	Backoff time.Duration
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration
	// Progress, when set, is called after each batch and before each
	// wait for a retry (never concurrently).
	Progress func(Progress)
	// Redact rewrites each request's prompt before it is sent, so that a
	// secret a definition holds (a server may echo its key into a
	// description) never reaches the provider: the gateway and the CLI
	// pass their configuration's redactor. Nil replaces the values
	// shaped like a credential (provider keys, bearer tokens, URL
	// passwords); a redactor of this module does that too.
	Redact func(string) string
}

func (o Options) withDefaults() (Options, error) {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.BatchSize < 1 || o.BatchSize > MaxBatchSize {
		return o, fmt.Errorf("batch size %d is out of range 1..%d", o.BatchSize, MaxBatchSize)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > MaxConcurrency {
		return o, fmt.Errorf("concurrency %d is out of range 1..%d", o.Concurrency, MaxConcurrency)
	}
	if o.MaxBatchTokens <= 0 {
		o.MaxBatchTokens = DefaultMaxBatchTokens
	}
	if o.Retries < 0 {
		return o, fmt.Errorf("retries %d is negative", o.Retries)
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return o, nil
}

// Progress is where a run stands.
type Progress struct {
	// ToolsDone counts the tools whose batch is finished (hints written
	// or rejected); ToolsTotal is every tool the run sends.
	ToolsDone, ToolsTotal int
	// Written counts the tools whose hints were written.
	Written int
	// Rejected counts tools whose hints the checks refused; Failed those
	// whose request failed after its retries.
	Rejected, Failed int
	// Requests counts the requests sent, retries included.
	Requests int
	// InputTokens and OutputTokens add up what the provider counted.
	InputTokens, OutputTokens int
	// Wait, when not zero, is a wait about to start before a retry, and
	// WaitReason says why.
	Wait       time.Duration
	WaitReason string
}

// Batch is one request's tools.
type Batch struct {
	// Server is the key of the server all the tools belong to.
	Server string
	// Tools are the batch's tools.
	Tools []*catalog.Tool
	// Request is what is sent.
	Request Request
	// InputTokens is the o200k size of the request's prompts.
	InputTokens int
}

// Plan is what a run will send, and what it should cost.
type Plan struct {
	// Tools counts the tools considered; Current those whose hints are
	// already in the cache for their definition (not sent).
	Tools, Current int
	// Batches are the requests to send, one per batch.
	Batches []Batch
	// Send counts the tools in Batches.
	Send int
	// InputTokens estimates the input of every request, in o200k tokens
	// (Claude models count about 20% more: catalog.ClaudeTokens);
	// OutputTokens estimates the replies.
	InputTokens, OutputTokens int

	digests map[*catalog.Tool]string
}

// outputTokensPerTool estimates one tool's share of a reply: four short
// hints and the JSON around them.
const outputTokensPerTool = 80

// NewPlan batches the tools that need hints: those the cache (nil for
// none) does not hold current hints for. Tools are grouped by server in
// the order given.
func NewPlan(tools []*catalog.Tool, cache *hints.Cache, opts Options) (Plan, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Tools: len(tools), digests: map[*catalog.Tool]string{}}
	var order []string
	byServer := map[string][]*catalog.Tool{}
	for _, t := range tools {
		if cache != nil && cache.Current(t) {
			p.Current++
			continue
		}
		if _, ok := byServer[t.Server]; !ok {
			order = append(order, t.Server)
		}
		byServer[t.Server] = append(byServer[t.Server], t)
		p.digests[t] = hints.Digest(t)
	}
	red := opts.Redact
	if red == nil {
		red = redact.New().String
	}
	base := catalog.CountTokens(systemPrompt) + promptOverheadTokens
	for _, server := range order {
		var cur []*catalog.Tool
		curTokens := base
		flush := func() {
			if len(cur) == 0 {
				return
			}
			b := Batch{Server: server, Tools: cur, Request: newRequest(cur)}
			b.Request.Prompt = red(b.Request.Prompt)
			b.InputTokens = catalog.CountTokens(b.Request.System) + catalog.CountTokens(b.Request.Prompt)
			p.Batches = append(p.Batches, b)
			p.Send += len(cur)
			p.InputTokens += b.InputTokens
			p.OutputTokens += outputTokensPerTool * len(cur)
			cur, curTokens = nil, base
		}
		for _, t := range byServer[server] {
			n := t.Tokens() + 1
			if len(cur) > 0 && (len(cur) == opts.BatchSize || curTokens+n > opts.MaxBatchTokens) {
				flush()
			}
			cur = append(cur, t)
			curTokens += n
		}
		flush()
	}
	return p, nil
}

// Rejection is a tool whose hints were not cached, and why.
type Rejection struct {
	// Tool is the tool's ID; for a name the reply made up, the server and
	// that name.
	Tool string
	// Problem says what was wrong.
	Problem string
}

func (r Rejection) String() string { return r.Tool + ": " + r.Problem }

// Result is what a run did.
type Result struct {
	Progress
	// Rejections lists the tools whose hints the checks refused, and the
	// names the model made up; Failures the tools whose request failed.
	Rejections, Failures []Rejection
	// LastFailure is the error of the last request that failed after its
	// retries (nil when none did), for errors.As and errors.Is.
	LastFailure error
}

// ErrFatal marks an error after which no request can succeed (the
// provider refused the credentials or does not know the model, or
// maxFailStreak batches in a row failed): the run stops.
var ErrFatal = errors.New("enrich: the provider refuses every request")

// Run sends the plan's batches to the provider, checks each reply and
// writes the hints that pass to the cache. It returns when every batch is
// done, when ctx ends (with ctx's error; what was finished is kept), or
// at the first fatal error (the provider refused the credentials, the
// model is unknown, or the cache cannot be written).
func Run(ctx context.Context, p Provider, plan Plan, cache *hints.Cache, opts Options) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if cache == nil {
		return Result{}, errors.New("enrich: no cache to write to")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &runner{p: p, opts: opts, cache: cache, plan: plan, cancel: cancel}
	r.res.ToolsTotal = plan.Send
	jobs := make(chan Batch)
	var wg sync.WaitGroup
	for range min(opts.Concurrency, max(1, len(plan.Batches))) {
		wg.Go(func() {
			for b := range jobs {
				r.batch(ctx, b)
			}
		})
	}
feed:
	for _, b := range plan.Batches {
		select {
		case jobs <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	sort.SliceStable(res.Rejections, func(i, j int) bool { return res.Rejections[i].Tool < res.Rejections[j].Tool })
	sort.SliceStable(res.Failures, func(i, j int) bool { return res.Failures[i].Tool < res.Failures[j].Tool })
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// maxFailStreak is how many batches in a row may fail, or give no usable
// hints, before the run gives up: the provider is down, unreachable, not
// the API asked for, or its model does not follow the instructions.
const maxFailStreak = 3

// runner is one run's shared state.
type runner struct {
	p      Provider
	opts   Options
	cache  *hints.Cache
	plan   Plan
	cancel context.CancelCauseFunc
	pace   pacer

	mu     sync.Mutex // guards res and streak, and serialises Progress calls
	res    Result
	streak int // batches failed in a row
}

// batch sends one batch and records what came of it.
func (r *runner) batch(ctx context.Context, b Batch) {
	reply, err := r.send(ctx, b)
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: the batch is neither done nor failed
		}
		if errors.Is(err, ErrFatal) {
			r.cancel(err)
			return
		}
		r.mu.Lock()
		for _, t := range b.Tools {
			r.res.Failures = append(r.res.Failures, Rejection{Tool: t.ID(), Problem: err.Error()})
		}
		r.res.Failed += len(b.Tools)
		r.res.ToolsDone += len(b.Tools)
		r.res.LastFailure = err
		r.progressLocked()
		r.failedLocked(err)
		r.mu.Unlock()
		return
	}
	good, rejected := parseReply(reply.Text, b.Server, b.Tools)
	var entries []hints.Entry
	for _, t := range b.Tools {
		if h, ok := good[t.Name]; ok {
			entries = append(entries, hints.Entry{ID: t.ID(), Hints: h, Digest: r.plan.digests[t]})
		}
	}
	if err := r.cache.Put(entries...); err != nil {
		r.cancel(fmt.Errorf("enrich: %w", err))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(entries) > 0 {
		r.streak = 0
	} else {
		r.failedLocked(fmt.Errorf("no usable hints in the reply: %s", rejected[0].Problem))
	}
	r.res.Written += len(entries)
	r.res.Rejections = append(r.res.Rejections, rejected...)
	r.res.Rejected += len(b.Tools) - len(entries)
	r.res.ToolsDone += len(b.Tools)
	r.res.InputTokens += reply.InputTokens
	r.res.OutputTokens += reply.OutputTokens
	r.progressLocked()
}

// failedLocked counts a batch that failed or gave nothing usable, and
// gives the run up after maxFailStreak of them in a row; r.mu is held.
func (r *runner) failedLocked(err error) {
	r.streak++
	if r.streak >= maxFailStreak {
		r.cancel(fmt.Errorf("%w: %d requests in a row failed or gave no usable hints, the last: %w", ErrFatal, r.streak, err))
	}
}

// progressLocked reports progress; r.mu is held.
func (r *runner) progressLocked() {
	if r.opts.Progress != nil {
		r.opts.Progress(r.res.Progress)
	}
}

// noteWait reports a wait before a retry.
func (r *runner) noteWait(d time.Duration, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Progress != nil {
		p := r.res.Progress
		p.Wait, p.WaitReason = d, why
		r.opts.Progress(p)
	}
}

func (r *runner) countRequest() {
	r.mu.Lock()
	r.res.Requests++
	r.mu.Unlock()
}
