package gateway

// Background enrichment (toolsearch.enrich, off by default; docs/enrich.md,
// "In the gateway"): the gateway asks a model for the search hints of the
// tools that have none for their current definition (package enrich),
// writes them to the state directory's hints file and re-indexes the
// servers they change (hints.go). It runs once the servers have all had
// their first start, and again a little after the catalog changes or a
// client connects: only the tools without current hints are sent, so a
// server whose tools change gets only its changed tools enriched. It
// never holds up a listing, a search or a call. Only tools that policy
// lets clients see are sent, and of each only its name, description and
// input schema.
//
// A run sends at most maxToolsPerRun tools, in rounds of a few batches:
// before each round it takes the cluster's leases on the tools
// (enrich_cluster.go) and reserves the round's cost from the daily budget
// (enrich_budget.go); after it, it writes and shares the hints and
// settles the budget. Failures never stop the gateway: the provider's
// 429s, 5xx and network errors are retried within a round by package
// enrich; a run that fails (the key refused, the provider unreachable or
// answering nothing usable) is reported (EnrichStatus: /healthz,
// toolsearch status, /metrics, the dashboard, the log) and tried again
// after a back-off that doubles, long after a refused key; a tool whose
// hints the checks refused, or whose request failed, waits before it is
// sent again. A spent budget waits for the next UTC day.
//
// The model is a provider's API (Anthropic, or an OpenAI-compatible
// server) or, with provider "sampling", the client: the newest connected
// client session that declared the sampling capability is asked through
// sampling/createMessage, as a server would ask it. With no such client,
// a run waits for one.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// enrichTiming holds the waits of background enrichment
// (Gateway.enrichTiming; tests shorten them).
type enrichTiming struct {
	// quiet is how long the catalog must stay unchanged before a run.
	quiet time.Duration
	// again is the wait before the next run when tools are left: past
	// maxToolsPerRun, or held by another replica's lease.
	again time.Duration
	// retry is the first wait after a failed run, doubling up to
	// retryMax; refused is the first after the provider refused the key
	// or the model (401, 403, 404), doubling up to refusedMax.
	retry, retryMax     time.Duration
	refused, refusedMax time.Duration
	// skip is how long a tool whose hints were refused waits before it
	// is sent again (doubling each time, up to a day); one whose request
	// failed waits retry (doubling too).
	skip time.Duration
	// lease is how long a replica's lease on a tool lasts; a round ends
	// (what it finished kept) before its leases would.
	lease time.Duration
	// backoff and requestTimeout are package enrich's Options.Backoff and
	// RequestTimeout (zero: its defaults).
	backoff, requestTimeout time.Duration
}

// defaultEnrichTiming are the waits of a gateway.
var defaultEnrichTiming = enrichTiming{
	quiet: 5 * time.Second, again: 30 * time.Second,
	retry: time.Minute, retryMax: time.Hour,
	refused: 30 * time.Minute, refusedMax: 6 * time.Hour,
	skip: time.Hour, lease: 30 * time.Minute,
}

// maxSkip bounds the wait of a tool refused again and again.
const maxSkip = 24 * time.Hour

// roundBatches is how many batches per request in flight a round holds.
const roundBatches = 4

// enricher runs background enrichment and keeps what /healthz, status,
// /metrics and the dashboard show of it (enrich_status.go).
type enricher struct {
	g      *Gateway
	cfg    config.Enrich
	timing enrichTiming
	rec    *recordFile   // nil without a state directory
	budget *enrichBudget // nil without a state directory
	// check is set when the gateway only checks (Options.NoEnrich): it
	// shows what the state directory says and never runs.
	check bool

	// Counts since the gateway started (EnrichStatus.SinceStart).
	written, rejected, failed, requests, inTokens, outTokens atomic.Int64

	mu        sync.Mutex
	state     string
	reason    string
	progress  *EnrichProgress
	lastRun   time.Time
	nextRun   time.Time
	lastErr   string
	lastErrAt time.Time
	failures  int                  // runs failed in a row
	locked    bool                 // a run holds the state directory's lock (enrich_lock.go)
	refusals  int                  // runs the provider refused, in a row
	skip      map[string]skipEntry // by leaseName: tools that wait before they are sent again
	counted   hintCount            // the last count of tools with hints
}

// skipEntry is a tool that waits before it is sent again.
type skipEntry struct {
	until time.Time
	tries int
}

// newEnricher makes the gateway's enricher, in the state its
// configuration gives; startEnrich runs it.
func (g *Gateway) newEnricher(noEnrich bool) *enricher {
	e := &enricher{g: g, cfg: g.cfg.Gateway.Enrich, timing: defaultEnrichTiming, check: noEnrich, skip: map[string]skipEntry{},
		state: EnrichOff}
	if dir := g.cfg.Gateway.StateDir; dir != "" {
		e.rec = &recordFile{path: enrichRecordPath(dir)}
		e.budget = &enrichBudget{limit: e.cfg.DailyBudget, rec: e.rec, coord: g.enrichCoordinator(), now: time.Now}
	}
	switch {
	case !e.cfg.Enabled || g.static:
	case e.rec == nil:
		e.state, e.reason = EnrichUnavailable, "there is no state directory to keep hints in (toolsearch.stateDir)"
	case e.cfg.KeyMissing():
		e.state, e.reason = EnrichUnavailable, fmt.Sprintf("the %s key is missing: $%s is not set (toolsearch.enrich.apiKeyEnv names the variable)",
			e.cfg.Provider, e.cfg.APIKeyEnv)
	default:
		e.state, e.reason = EnrichWaiting, "waiting for the servers' first start"
		if noEnrich {
			e.fromRecord()
		}
	}
	return e
}

// on reports whether enrichment is configured to run (false for a
// gateway not made by New, which has no enricher).
func (e *enricher) on() bool { return e != nil && e.cfg.Enabled && !e.g.static }

// kickEnrich wakes the background enrichment, if it runs.
func (g *Gateway) kickEnrich() {
	select {
	case g.enrichKick <- struct{}{}:
	default:
	}
}

// startEnrich starts the background enrichment when it is configured and
// can run. It is called by Start.
func (g *Gateway) startEnrich(ctx context.Context) {
	e := g.enr
	e.timing = g.enrichTiming
	if !e.on() {
		return
	}
	g.metrics.enrichOn() // metrics.go
	if e.check {
		return
	}
	if e.state == EnrichUnavailable {
		g.log.Warn("background enrichment is unavailable: " + e.reason)
		return
	}
	p, err := g.enrichProvider(e.cfg)
	if err != nil {
		e.set(EnrichUnavailable, err.Error(), time.Time{})
		return
	}
	g.wg.Go(func() { e.loop(ctx, p) })
}

// enrichProvider makes the configured provider, with the key read from
// the variable toolsearch.enrich.apiKeyEnv names.
func (g *Gateway) enrichProvider(e config.Enrich) (enrich.Provider, error) {
	switch e.Provider {
	case config.EnrichAnthropic:
		return enrich.NewAnthropic(enrich.Config{Model: e.Model, BaseURL: e.BaseURL, APIKey: e.APIKey}), nil
	case config.EnrichOpenAI:
		key := e.APIKey
		if key == "" {
			key = "none" // a local server at baseURL takes any key (config.Enrich.KeyMissing)
		}
		return enrich.NewOpenAI(enrich.Config{Model: e.Model, BaseURL: e.BaseURL, APIKey: key}), nil
	case config.EnrichSampling, "":
		return &samplingProvider{g: g, model: e.Model}, nil
	}
	return nil, fmt.Errorf("unknown provider %q", e.Provider)
}

// loop runs enrichment whenever there may be something to do, until ctx
// ends.
func (e *enricher) loop(ctx context.Context, p enrich.Provider) {
	if err := e.g.WaitSettled(ctx); err != nil {
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
func (e *enricher) wait(ctx context.Context, next time.Time) bool {
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
		case <-e.g.enrichKick:
			if e.holding() {
				continue
			}
			for quiet := false; !quiet; {
				select {
				case <-ctx.Done():
					return false
				case <-e.g.enrichKick:
				case <-time.After(e.timing.quiet):
					quiet = true
				}
			}
			return true
		}
	}
}

// holding reports whether enrichment waits for a time rather than for a
// change: after a failure, or for the next day's budget.
func (e *enricher) holding() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == EnrichBackoff || e.state == EnrichBudgetExhausted
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
func (e *enricher) run(ctx context.Context, p enrich.Provider) time.Time {
	if sp, ok := p.(*samplingProvider); ok && sp.client() == nil {
		e.set(EnrichWaiting, "waiting for a client that offers MCP sampling", time.Time{})
		return time.Time{}
	}
	unlock, held, err := lockEnrichRun(e.g.cfg.Gateway.StateDir)
	if err != nil {
		return e.runFailed(err, false)
	}
	if held {
		// Another gateway on this state directory runs: take what it
		// wrote, and look again later.
		if cache, err := hints.OpenCache(e.g.stateHintsPath()); err == nil {
			e.g.rehint(cache.Set())
		}
		next := time.Now().Add(e.timing.again)
		e.set(EnrichWaiting, "another gateway sharing the state directory is writing hints", next)
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
	cache, err := hints.OpenCache(e.g.stateHintsPath())
	if err != nil {
		return e.runFailed(fmt.Errorf("cannot read the hints file it would add to: %w", err), false)
	}
	e.g.rehint(cache.Set()) // what another gateway or a toolsearch enrich wrote meanwhile
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
func (e *enricher) candidates(cache *hints.Cache, passed map[string]bool) []*catalog.Tool {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*catalog.Tool
	for _, t := range e.g.Snapshot().Tools() {
		if !e.g.Visible(t) || cache.Current(t) {
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
func (e *enricher) round(ctx context.Context, p enrich.Provider, cache *hints.Cache, tally *runTally, passed map[string]bool, total int) bool {
	opts := enrich.Options{BatchSize: e.cfg.BatchSize, Concurrency: e.cfg.Concurrency,
		Backoff: e.timing.backoff, RequestTimeout: e.timing.requestTimeout}
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
		e.g.rehint(cache.Set())
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
	rctx, cancel := context.WithTimeout(ctx, e.timing.lease-e.timing.lease/6)
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
		e.g.rehint(cache.Set())
		// Once shared, the others may know the leases done; a lease of
		// hints not shared expires, and another replica asks again.
		if e.g.shareHints(cache.Set()) {
			e.endLeases(written, true)
		}
	}
	e.endLeases(unsent, false)
	e.skipTools(rejected, e.timing.skip)
	e.skipTools(failed, e.timing.retry)
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
		tally.err = fmt.Errorf("a round took longer than %v: %w", e.timing.lease-e.timing.lease/6, err)
	case err != nil:
		tally.err = err
	}
	return true
}

// costs are the estimated tokens of each tool of plan, in order, and
// the tools: each batch's input split evenly over its tools, plus the
// reply's share (o200k; Claude models count about 20% more).
func (e *enricher) costs(plan enrich.Plan) ([]int64, []*catalog.Tool) {
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
func (e *enricher) skipTools(tools []*catalog.Tool, base time.Duration) {
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
func (e *enricher) nextSkip(cache *hints.Cache) time.Time {
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
	for _, t := range e.g.Snapshot().Tools() {
		if until, ok := waits[leaseName(t)]; ok && e.g.Visible(t) && !cache.Current(t) && (next.IsZero() || until.Before(next)) {
			next = until
		}
	}
	return next
}

// ran decides, once a run is over, the state it leaves and when the next
// one is due.
func (e *enricher) ran(ctx context.Context, cache *hints.Cache, tally *runTally) time.Time {
	if ctx.Err() != nil {
		e.g.log.Info("background enrichment stopped: the gateway is stopping", "written", tally.written)
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
		e.set(EnrichBudgetExhausted, fmt.Sprintf("today's budget (UTC %s) is spent: %s; enrichment resumes at 00:00 UTC",
			day, enrichBudgetLine(spent, e.cfg.DailyBudget)), next)
		return next
	}
	left := len(e.candidates(cache, nil))
	switch {
	case tally.held > 0:
		next := now.Add(e.timing.again)
		e.set(EnrichWaiting, fmt.Sprintf("another replica is writing the hints of %d tools", tally.held), next)
		return next
	case left > 0 && tally.sent >= e.cfg.MaxToolsPerRun:
		next := now.Add(e.timing.again)
		e.set(EnrichWaiting, fmt.Sprintf("%d tools are left for the next run (maxToolsPerRun %d)", left, e.cfg.MaxToolsPerRun), next)
		return next
	}
	next := e.nextSkip(cache)
	e.set(EnrichIdle, "", next)
	return next
}

// logRun logs what a run did, when it sent anything.
func (e *enricher) logRun(tally *runTally) {
	if tally.sent == 0 && len(tally.rejected) == 0 {
		return
	}
	attrs := []any{"written", tally.written, "rejected", len(tally.rejected), "failed", len(tally.failures)}
	for i, r := range append(slices.Clone(tally.rejected), tally.failures...) {
		if i == 5 {
			break
		}
		attrs = append(attrs, fmt.Sprintf("not_written_%d", i+1), e.g.Redact(r.String()))
	}
	e.g.log.Info("background enrichment done", attrs...)
}

// runFailed records a run that failed: it is tried again after a back-off
// that doubles with each failure in a row, and starts long after the
// provider refused the key or the model. It returns when.
func (e *enricher) runFailed(err error, counted bool) time.Time {
	reason, refused := describeEnrichError(err)
	if errors.Is(err, errNoSampler) {
		e.set(EnrichWaiting, "waiting for a client that offers MCP sampling", time.Time{})
		return time.Time{}
	}
	e.mu.Lock()
	base, ceiling, n := e.timing.retry, e.timing.retryMax, 0
	if refused {
		e.refusals++
		base, ceiling, n = e.timing.refused, e.timing.refusedMax, e.refusals
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
	reason = e.g.Redact(reason)
	e.noteError(reason)
	e.set(EnrichBackoff, reason+"; next try at "+next.UTC().Format("15:04:05 UTC"), next)
	return next
}

// describeEnrichError says in one line what went wrong, and whether the
// provider refused the key or the model.
func describeEnrichError(err error) (string, bool) {
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

// samplingProvider asks a connected client's model through MCP sampling.
type samplingProvider struct {
	g     *Gateway
	model string
}

// errNoSampler is returned when no connected client offers sampling.
var errNoSampler = errors.New("no connected client offers sampling")

// client returns the newest client session that declared sampling.
func (p *samplingProvider) client() *mcp.ServerSession {
	var best *session
	for _, s := range p.g.sessionList() {
		ss := s.serverSession()
		if ss == nil || !canSample(clientCaps(ss)) {
			continue
		}
		if best == nil || s.seq > best.seq {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	return best.serverSession()
}

// Complete sends the prompt as sampling/createMessage and reads the text
// of the answer.
func (p *samplingProvider) Complete(ctx context.Context, req enrich.Request) (enrich.Reply, error) {
	ss := p.client()
	if ss == nil {
		return enrich.Reply{}, fmt.Errorf("%w: %w", enrich.ErrFatal, errNoSampler)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	params := &mcp.CreateMessageParams{
		SystemPrompt: req.System,
		MaxTokens:    int64(req.MaxTokens),
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Prompt}}},
		// Short structured text: a small, fast model does.
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		ModelPreferences: &mcp.ModelPreferences{CostPriority: 0.8, SpeedPriority: 0.8, IntelligencePriority: 0.3},
	}
	if p.model != "" {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		params.ModelPreferences.Hints = []*mcp.ModelHint{{Name: p.model}}
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	res, err := ss.CreateMessage(ctx, params)
	if err != nil {
		return enrich.Reply{}, fmt.Errorf("sampling: %w", err)
	}
	text, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return enrich.Reply{}, fmt.Errorf("sampling: the client answered with %T, not text", res.Content)
	}
	return enrich.Reply{Text: text.Text, InputTokens: catalog.CountTokens(req.System) + catalog.CountTokens(req.Prompt),
		OutputTokens: catalog.CountTokens(text.Text)}, nil
}
