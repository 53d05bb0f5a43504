// Package enrichment is the gateway's background enrichment
// (toolsearch.enrich, off by default; docs/enrich.md, "In the gateway"):
// it asks a model for the search hints of the tools that have none for
// their current definition (package enrich), writes them to the state
// directory's hints file and has the gateway re-index the servers they
// change (Owner.Rehint). It runs once the servers have all had their
// first start, and again a little after the catalog changes or a client
// connects (Kick): only the tools without current hints are sent, so a
// server whose tools change gets only its changed tools enriched. It
// never holds up a listing, a search or a call. Only tools that policy
// lets clients see are sent, and of each only its name, description and
// input schema.
//
// A run sends at most maxToolsPerRun tools, in rounds of a few batches:
// before each round it takes the cluster's leases on the tools
// (cluster.go) and reserves the round's cost from the daily budget
// (budget.go); after it, it writes and shares the hints and settles the
// budget. Failures never stop the gateway: the provider's 429s, 5xx and
// network errors are retried within a round by package enrich; a run
// that fails (the key refused, the provider unreachable or answering
// nothing usable) is reported (Status: /healthz, toolsearch status,
// /metrics, the dashboard, the log) and tried again after a back-off that
// doubles, long after a refused key; a tool whose hints the checks
// refused, or whose request failed, waits before it is sent again. A
// spent budget waits for the next UTC day.
//
// The model is a provider's API (Anthropic, or an OpenAI-compatible
// server) or, with provider "sampling", the client: the gateway's Sampler
// asks the newest connected client session that declared the sampling
// capability, as a server would ask it. With no such client, a run waits
// for one.
//
// The gateway is the Enricher's Owner: its catalog, its policy, what it
// does with hints and how it hides secrets. Nothing here knows the
// gateway's sessions, servers or wire.
package enrichment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Owner is the gateway an Enricher works for.
type Owner interface {
	// Snapshot is the current catalog; Visible reports whether policy
	// lets clients see a tool (only those are sent).
	Snapshot() *catalog.Snapshot
	Visible(t *catalog.Tool) bool
	// WaitSettled returns once every server has had its first start.
	WaitSettled(ctx context.Context) error
	// Rehint takes hints written while the gateway runs (the state
	// directory's) and re-indexes the servers whose tools they change.
	Rehint(set *hints.Set)
	// ShareHints adds set to the hints shared with the other replicas
	// and reports whether the shared value holds them; SharedHints
	// returns the hints the replicas shared, nil when none.
	ShareHints(set *hints.Set) bool
	SharedHints() *hints.Set
	// Redact removes secrets from s.
	Redact(s string) string
}

// Sampler is the provider of provider "sampling": it asks a connected
// client's model through MCP sampling. Ready reports whether a client
// that offers sampling is connected; without one a run waits, and
// Complete fails with ErrNoSampler.
type Sampler interface {
	enrich.Provider
	Ready() bool
}

// ErrNoSampler is returned by a Sampler when no connected client offers
// sampling.
var ErrNoSampler = errors.New("no connected client offers sampling")

// Options are what an Enricher is made with.
type Options struct {
	// Config is toolsearch.enrich: nothing runs unless it is enabled.
	Config config.Enrich
	// StateDir is the state directory ("" for none: enrichment is then
	// unavailable); HintsPath is its hints file.
	StateDir, HintsPath string
	// Check makes an Enricher that never runs: it shows what the state
	// directory's record says (toolsearch status, serve --check).
	Check bool
	// Coordinator is the cluster's, nil without one (cluster.go).
	Coordinator Coordinator
	// Sampler asks the clients' models, for provider "sampling".
	Sampler Sampler
	// Logger is told what enrichment does; nil logs nothing.
	Logger *slog.Logger
	// Feed, when set, is told the status whenever the state, a run's
	// progress or the tools with hints change (the dashboard). It must
	// return at once.
	Feed func(Status)
	// Counted, when set, is told what each round did (the metrics).
	Counted func(enrich.Result)
}

// Timing holds the waits of background enrichment (tests shorten them).
type Timing struct {
	// Quiet is how long the catalog must stay unchanged before a run.
	Quiet time.Duration
	// Again is the wait before the next run when tools are left: past
	// maxToolsPerRun, or held by another replica's lease.
	Again time.Duration
	// Retry is the first wait after a failed run, doubling up to
	// RetryMax; Refused is the first after the provider refused the key
	// or the model (401, 403, 404), doubling up to RefusedMax.
	Retry, RetryMax     time.Duration
	Refused, RefusedMax time.Duration
	// Skip is how long a tool whose hints were refused waits before it
	// is sent again (doubling each time, up to a day); one whose request
	// failed waits Retry (doubling too).
	Skip time.Duration
	// Lease is how long a replica's lease on a tool lasts; a round ends
	// (what it finished kept) before its leases would.
	Lease time.Duration
	// Backoff and RequestTimeout are package enrich's Options.Backoff and
	// RequestTimeout (zero: its defaults).
	Backoff, RequestTimeout time.Duration
}

// DefaultTiming are the waits of a gateway.
var DefaultTiming = Timing{
	Quiet: 5 * time.Second, Again: 30 * time.Second,
	Retry: time.Minute, RetryMax: time.Hour,
	Refused: 30 * time.Minute, RefusedMax: 6 * time.Hour,
	Skip: time.Hour, Lease: 30 * time.Minute,
}

// maxSkip bounds the wait of a tool refused again and again.
const maxSkip = 24 * time.Hour

// roundBatches is how many batches per request in flight a round holds.
const roundBatches = 4

// Enricher runs background enrichment and keeps what /healthz, status,
// /metrics and the dashboard show of it (status.go).
type Enricher struct {
	owner     Owner
	cfg       config.Enrich
	dir       string // the state directory
	hintsPath string // its hints file
	coord     Coordinator
	sampler   Sampler
	log       *slog.Logger
	tell      func(Status)        // Options.Feed
	counted   func(enrich.Result) // Options.Counted
	timing    Timing
	kick      chan struct{}
	rec       *recordFile // nil without a state directory
	budget    *budget     // nil without a state directory
	// check is set when the gateway only checks (Options.Check): it
	// shows what the state directory says and never runs.
	check bool

	// Counts since the gateway started (Status.SinceStart).
	written, rejected, failed, requests, inTokens, outTokens atomic.Int64

	mu        sync.Mutex
	state     string
	reason    string
	progress  *Progress
	lastRun   time.Time
	nextRun   time.Time
	lastErr   string
	lastErrAt time.Time
	failures  int                  // runs failed in a row
	locked    bool                 // a run holds the state directory's lock (lock.go)
	refusals  int                  // runs the provider refused, in a row
	skip      map[string]skipEntry // by leaseName: tools that wait before they are sent again
	hinted    hintCount            // the last count of tools with hints
}

// skipEntry is a tool that waits before it is sent again.
type skipEntry struct {
	until time.Time
	tries int
}

// New makes the enricher of owner, in the state its options give; Start
// runs it.
func New(owner Owner, opts Options) *Enricher {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Enricher{owner: owner, cfg: opts.Config, dir: opts.StateDir, hintsPath: opts.HintsPath, coord: opts.Coordinator,
		sampler: opts.Sampler, log: log, tell: opts.Feed, counted: opts.Counted, timing: DefaultTiming,
		kick: make(chan struct{}, 1), check: opts.Check, skip: map[string]skipEntry{}, state: Off}
	if dir := opts.StateDir; dir != "" {
		e.rec = &recordFile{path: recordPath(dir)}
		e.budget = &budget{limit: e.cfg.DailyBudget, rec: e.rec, coord: e.coord, now: time.Now}
	}
	switch {
	case !e.cfg.Enabled:
	case e.rec == nil:
		e.state, e.reason = Unavailable, "there is no state directory to keep hints in (toolsearch.stateDir)"
	case e.cfg.KeyMissing():
		e.state, e.reason = Unavailable, fmt.Sprintf("the %s key is missing: $%s is not set (toolsearch.enrich.apiKeyEnv names the variable)",
			e.cfg.Provider, e.cfg.APIKeyEnv)
	default:
		e.state, e.reason = Waiting, "waiting for the servers' first start"
		if opts.Check {
			e.fromRecord()
		}
	}
	return e
}

// On reports whether enrichment is configured to run (false for a nil
// Enricher: a gateway not made by New has none).
func (e *Enricher) On() bool { return e != nil && e.cfg.Enabled }

// Kick wakes the background enrichment, if it runs: the catalog changed,
// or a client (one that offers sampling, maybe) connected.
func (e *Enricher) Kick() {
	if e == nil {
		return
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Start readies the background enrichment with the waits of timing and
// returns its loop, to be run until ctx ends; nil when it does not run
// (off, only checking, or unavailable).
func (e *Enricher) Start(timing Timing) func(ctx context.Context) {
	e.timing = timing
	if !e.On() || e.check {
		return nil
	}
	if e.state == Unavailable {
		e.log.Warn("background enrichment is unavailable: " + e.reason)
		return nil
	}
	p, err := e.provider()
	if err != nil {
		e.set(Unavailable, err.Error(), time.Time{})
		return nil
	}
	return func(ctx context.Context) { e.loop(ctx, p) }
}

// provider makes the configured provider, with the key read from the
// variable toolsearch.enrich.apiKeyEnv names.
func (e *Enricher) provider() (enrich.Provider, error) {
	c := e.cfg
	switch c.Provider {
	case config.EnrichAnthropic:
		return enrich.NewAnthropic(enrich.Config{Model: c.Model, BaseURL: c.BaseURL, APIKey: c.APIKey}), nil
	case config.EnrichOpenAI:
		key := c.APIKey
		if key == "" {
			key = "none" // a local server at baseURL takes any key (config.Enrich.KeyMissing)
		}
		return enrich.NewOpenAI(enrich.Config{Model: c.Model, BaseURL: c.BaseURL, APIKey: key}), nil
	case config.EnrichSampling, "":
		if e.sampler == nil {
			return nil, errors.New("provider sampling has no clients to ask here")
		}
		return e.sampler, nil
	}
	return nil, fmt.Errorf("unknown provider %q", c.Provider)
}

// loop runs enrichment whenever there may be something to do, until ctx
// ends.
func (e *Enricher) loop(ctx context.Context, p enrich.Provider) {
	if err := e.owner.WaitSettled(ctx); err != nil {
		return
	}
	for {
		next := e.run(ctx, p)
		if ctx.Err() != nil || !e.wait(ctx, next) {
			return
		}
	}
}

// wait returns at next (zero: never by itself) or, after a change of the
// catalog or a client, once the catalog has been quiet; a change does not
// cut short the wait of a back-off or of a spent budget. It returns false
// when ctx ends.
func (e *Enricher) wait(ctx context.Context, next time.Time) bool {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer:
			return true
		case <-e.kick:
			if e.holding() {
				continue
			}
			for quiet := false; !quiet; {
				select {
				case <-ctx.Done():
					return false
				case <-e.kick:
				case <-time.After(e.timing.Quiet):
					quiet = true
				}
			}
			return true
		}
	}
}

// holding reports whether enrichment waits for a time rather than for a
// change: after a failure, or for the next day's budget.
func (e *Enricher) holding() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == Backoff || e.state == BudgetExhausted
}

// runTally adds up a run's rounds.
type runTally struct {
	sent     int // tools answered or failed
	written  int
	held     int   // tools another replica holds
	spent    bool  // the budget ran out
	err      error // what ended the run early
	rejected []enrich.Rejection
	failures []enrich.Rejection
	lastFail error // the last request that failed
}

// run sends the visible tools that have no current hints, at most
// maxToolsPerRun of them, and returns when to run again without a change
// (zero: at the next change).
func (e *Enricher) run(ctx context.Context, p enrich.Provider) time.Time {
	if sp, ok := p.(Sampler); ok && !sp.Ready() {
		e.set(Waiting, "waiting for a client that offers MCP sampling", time.Time{})
		return time.Time{}
	}
	unlock, held, err := lockRun(e.dir)
	if err != nil {
		return e.runFailed(err, false)
	}
	if held {
		// Another gateway on this state directory runs: take what it
		// wrote, and look again later.
		if cache, err := hints.OpenCache(e.hintsPath); err == nil {
			e.owner.Rehint(cache.Set())
		}
		next := time.Now().Add(e.timing.Again)
		e.set(Waiting, "another gateway sharing the state directory is writing hints", next)
		return next
	}
	e.mu.Lock()
	e.locked = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.locked = false
		e.mu.Unlock()
		unlock()
	}()
	cache, err := hints.OpenCache(e.hintsPath)
	if err != nil {
		return e.runFailed(fmt.Errorf("cannot read the hints file it would add to: %w", err), false)
	}
	e.owner.Rehint(cache.Set()) // what another gateway or a toolsearch enrich wrote meanwhile
	total := min(len(e.candidates(cache, nil)), e.cfg.MaxToolsPerRun)
	if total > 0 {
		e.setRunning(0, total)
	}
	var tally runTally
	passed := map[string]bool{} // tools held or done elsewhere, looked at this run
	for tally.sent < e.cfg.MaxToolsPerRun && ctx.Err() == nil {
		if !e.round(ctx, p, cache, &tally, passed, total) || tally.err != nil || tally.spent {
			break
		}
	}
	return e.ran(ctx, cache, &tally)
}

// candidates are the visible tools without current hints that do not
// wait, in catalog order, less those in passed.
func (e *Enricher) candidates(cache *hints.Cache, passed map[string]bool) []*catalog.Tool {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*catalog.Tool
	for _, t := range e.owner.Snapshot().Tools() {
		if !e.owner.Visible(t) || cache.Current(t) {
			continue
		}
		name := leaseName(t)
		if s, ok := e.skip[name]; ok && now.Before(s.until) || passed[name] {
			continue
		}
		out = append(out, t)
	}
	return out
}

// round sends one round of tools; it reports whether there was anything
// to look at.
func (e *Enricher) round(ctx context.Context, p enrich.Provider, cache *hints.Cache, tally *runTally, passed map[string]bool, total int) bool {
	opts := enrich.Options{BatchSize: e.cfg.BatchSize, Concurrency: e.cfg.Concurrency,
		Backoff: e.timing.Backoff, RequestTimeout: e.timing.RequestTimeout, Redact: e.owner.Redact}
	size := min(e.cfg.BatchSize*e.cfg.Concurrency*roundBatches, e.cfg.MaxToolsPerRun-tally.sent)
	cands := e.candidates(cache, passed)
	if len(cands) == 0 {
		return false
	}
	if len(cands) > size {
		cands = cands[:size]
	}
	taken, done, held := e.leaseTools(ctx, cands)
	isTaken := make(map[*catalog.Tool]bool, len(taken))
	for _, t := range taken {
		isTaken[t] = true
	}
	for _, t := range cands {
		if !isTaken[t] {
			passed[leaseName(t)] = true
		}
	}
	tally.held += held
	if len(done) > 0 && e.adoptShared(cache, done) > 0 {
		e.owner.Rehint(cache.Set())
	}
	plan, err := enrich.NewPlan(taken, cache, opts)
	if err != nil {
		e.endLeases(taken, false)
		tally.err = err
		return true
	}
	if plan.Send == 0 {
		e.endLeases(taken, false)
		return true
	}
	// Reserve the round's cost; send only what the day's budget holds.
	costs, order := e.costs(plan)
	granted, day, _ := e.budget.reserve(ctx, costs)
	if granted < len(order) {
		e.endLeases(order[granted:], false)
		tally.spent = true
		if granted == 0 {
			return true
		}
		if plan, err = enrich.NewPlan(order[:granted], nil, opts); err != nil {
			e.endLeases(order[:granted], false)
			tally.err = err
			return true
		}
	}
	var reserved int64
	for _, c := range costs[:granted] {
		reserved += c
	}
	base := tally.sent
	opts.Progress = func(pr enrich.Progress) { e.setRunning(base+pr.ToolsDone, total) }
	rctx, cancel := context.WithTimeout(ctx, e.timing.Lease-e.timing.Lease/6)
	res, err := enrich.Run(rctx, p, plan, cache, opts)
	cancel()
	e.count(day, res)

	// Settle the budget: tools not answered and tokens not used go back.
	answered := int64(res.Written + res.Rejected)
	used := int64(res.InputTokens + res.OutputTokens)
	if used == 0 && answered > 0 {
		used = reserved * answered / int64(granted) // the provider counted nothing: the estimate stands
	}
	e.budget.settle(context.WithoutCancel(ctx), day, config.EnrichBudget{Tools: answered - int64(granted), Tokens: used - reserved})

	// Hints into the index and to the other replicas; then the leases.
	written, rejected, failed, unsent := sortTools(plan, res, cache)
	if len(written) > 0 {
		e.owner.Rehint(cache.Set())
		// Once shared, the others may know the leases done; a lease of
		// hints not shared expires, and another replica asks again.
		if e.owner.ShareHints(cache.Set()) {
			e.endLeases(written, true)
		}
	}
	e.endLeases(unsent, false)
	e.skipTools(rejected, e.timing.Skip)
	e.skipTools(failed, e.timing.Retry)
	tally.sent += int(answered) + res.Failed
	tally.written += res.Written
	tally.rejected = append(tally.rejected, res.Rejections...)
	tally.failures = append(tally.failures, res.Failures...)
	if res.LastFailure != nil {
		tally.lastFail = res.LastFailure
	}
	switch {
	case err != nil && ctx.Err() != nil:
		tally.err = ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		tally.err = fmt.Errorf("a round took longer than %v: %w", e.timing.Lease-e.timing.Lease/6, err)
	case err != nil:
		tally.err = err
	}
	return true
}

// costs are the estimated tokens of each tool of plan, in order, and
// the tools: each batch's input split evenly over its tools, plus the
// reply's share (o200k; Claude models count about 20% more).
func (e *Enricher) costs(plan enrich.Plan) ([]int64, []*catalog.Tool) {
	var costs []int64
	var order []*catalog.Tool
	out := 0
	if plan.Send > 0 {
		out = plan.OutputTokens / plan.Send
	}
	for _, b := range plan.Batches {
		in := b.InputTokens
		if e.cfg.Provider == config.EnrichAnthropic {
			in = catalog.ClaudeTokens(in)
		}
		for _, t := range b.Tools {
			costs = append(costs, int64((in+len(b.Tools)-1)/len(b.Tools)+out))
			order = append(order, t)
		}
	}
	return costs, order
}

// sortTools splits the tools of plan by what came of them: hints
// written (in cache); refused by the checks; failed (the request); not
// sent (the run stopped first).
func sortTools(plan enrich.Plan, res enrich.Result, cache *hints.Cache) (written, rejected, failed, unsent []*catalog.Tool) {
	why := map[string]*[]*catalog.Tool{}
	for _, r := range res.Rejections {
		why[r.Tool] = &rejected
	}
	for _, r := range res.Failures {
		why[r.Tool] = &failed
	}
	for _, b := range plan.Batches {
		for _, t := range b.Tools {
			switch list := why[t.ID()]; {
			case cache.Current(t):
				written = append(written, t)
			case list != nil:
				*list = append(*list, t)
			default:
				unsent = append(unsent, t)
			}
		}
	}
	return written, rejected, failed, unsent
}

// skipTools makes tools wait before they are sent again: base the first
// time, twice as long each time after, up to a day.
func (e *Enricher) skipTools(tools []*catalog.Tool, base time.Duration) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, s := range e.skip { // forget the waits that are over long ago
		if now.Sub(s.until) > maxSkip {
			delete(e.skip, name)
		}
	}
	for _, t := range tools {
		name := leaseName(t)
		s := e.skip[name]
		s.tries++
		s.until = now.Add(min(base<<min(s.tries-1, 16), maxSkip))
		e.skip[name] = s
	}
}

// nextSkip is when the first waiting tool may be sent again, zero when
// none waits.
func (e *Enricher) nextSkip(cache *hints.Cache) time.Time {
	now := time.Now()
	var next time.Time
	e.mu.Lock()
	waits := make(map[string]time.Time, len(e.skip))
	for name, s := range e.skip {
		if s.until.After(now) {
			waits[name] = s.until
		}
	}
	e.mu.Unlock()
	if len(waits) == 0 {
		return next
	}
	for _, t := range e.owner.Snapshot().Tools() {
		if until, ok := waits[leaseName(t)]; ok && e.owner.Visible(t) && !cache.Current(t) && (next.IsZero() || until.Before(next)) {
			next = until
		}
	}
	return next
}

// ran decides, once a run is over, the state it leaves and when the next
// one is due.
func (e *Enricher) ran(ctx context.Context, cache *hints.Cache, tally *runTally) time.Time {
	if ctx.Err() != nil {
		e.log.Info("background enrichment stopped: the gateway is stopping", "written", tally.written)
		return time.Time{}
	}
	e.logRun(tally)
	now := time.Now()
	e.mu.Lock()
	e.lastRun = now
	e.mu.Unlock()
	switch {
	case tally.err != nil:
		return e.runFailed(tally.err, true)
	case tally.written == 0 && len(tally.failures) > 0:
		err := tally.lastFail
		if err == nil {
			err = errors.New(tally.failures[0].Problem)
		}
		return e.runFailed(fmt.Errorf("%w (%d tools failed)", err, len(tally.failures)), true)
	}
	e.mu.Lock()
	e.failures, e.refusals = 0, 0
	e.mu.Unlock()
	if len(tally.rejected) > 0 {
		e.noteError(fmt.Sprintf("the model's answer was refused for %d tools, asked again later: %s", len(tally.rejected), tally.rejected[0]))
	}
	if tally.spent {
		day, spent := e.budget.spent(ctx, false)
		next := nextUTCDay(now)
		e.set(BudgetExhausted, fmt.Sprintf("today's budget (UTC %s) is spent: %s; enrichment resumes at 00:00 UTC",
			day, budgetLine(spent, e.cfg.DailyBudget)), next)
		return next
	}
	left := len(e.candidates(cache, nil))
	switch {
	case tally.held > 0:
		next := now.Add(e.timing.Again)
		e.set(Waiting, fmt.Sprintf("another replica is writing the hints of %d tools", tally.held), next)
		return next
	case left > 0 && tally.sent >= e.cfg.MaxToolsPerRun:
		next := now.Add(e.timing.Again)
		e.set(Waiting, fmt.Sprintf("%d tools are left for the next run (maxToolsPerRun %d)", left, e.cfg.MaxToolsPerRun), next)
		return next
	}
	next := e.nextSkip(cache)
	e.set(Idle, "", next)
	return next
}

// logRun logs what a run did, when it sent anything.
func (e *Enricher) logRun(tally *runTally) {
	if tally.sent == 0 && len(tally.rejected) == 0 {
		return
	}
	attrs := []any{"written", tally.written, "rejected", len(tally.rejected), "failed", len(tally.failures)}
	for i, r := range append(slices.Clone(tally.rejected), tally.failures...) {
		if i == 5 {
			break
		}
		attrs = append(attrs, fmt.Sprintf("not_written_%d", i+1), e.owner.Redact(r.String()))
	}
	e.log.Info("background enrichment done", attrs...)
}

// runFailed records a run that failed: it is tried again after a back-off
// that doubles with each failure in a row, and starts long after the
// provider refused the key or the model. It returns when.
func (e *Enricher) runFailed(err error, counted bool) time.Time {
	reason, refused := describeError(err)
	if errors.Is(err, ErrNoSampler) {
		e.set(Waiting, "waiting for a client that offers MCP sampling", time.Time{})
		return time.Time{}
	}
	e.mu.Lock()
	base, ceiling, n := e.timing.Retry, e.timing.RetryMax, 0
	if refused {
		e.refusals++
		base, ceiling, n = e.timing.Refused, e.timing.RefusedMax, e.refusals
	} else if counted {
		e.failures++
		n = e.failures
	} else {
		n = 1
	}
	e.lastRun = time.Now()
	e.mu.Unlock()
	wait := min(base<<min(max(n-1, 0), 16), ceiling)
	wait += rand.N(wait/10 + 1) // replicas that failed together do not retry together
	next := time.Now().Add(wait)
	reason = e.owner.Redact(reason)
	e.noteError(reason)
	e.set(Backoff, reason+"; next try at "+next.UTC().Format("15:04:05 UTC"), next)
	return next
}

// describeError says in one line what went wrong, and whether the
// provider refused the key or the model.
func describeError(err error) (string, bool) {
	var se *enrich.StatusError
	var ne net.Error
	msg := oneLine(err.Error())
	if errors.As(err, &se) {
		msg = oneLine(se.Error())
	}
	switch {
	case se != nil && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden):
		return "the provider refused the key: " + msg, true
	case se != nil && se.StatusCode == http.StatusNotFound:
		return "the provider knows no such model or endpoint: " + msg, true
	case se != nil:
		return "the provider failed: " + msg, false
	case errors.Is(err, context.DeadlineExceeded):
		return "the provider did not answer in time: " + msg, false
	case errors.As(err, &ne), errors.Is(err, syscall.ECONNREFUSED):
		return "the provider cannot be reached: " + msg, false
	}
	return "enrichment failed: " + msg, false
}

// nextUTCDay is the start of the UTC day after now, plus up to a minute,
// so that replicas do not all start at once.
func nextUTCDay(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Add(rand.N(time.Minute))
}
