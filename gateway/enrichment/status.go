package enrichment

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// States of background enrichment (Status.State).
const (
	// Off: toolsearch.enrich is not enabled.
	Off = "off"
	// Unavailable: enabled, but it cannot run until serve starts
	// with other settings (the provider's key is missing, there is no
	// state directory).
	Unavailable = "unavailable"
	// Waiting: for the servers' first start, a client that offers
	// sampling, another replica or gateway, or the next run.
	Waiting = "waiting"
	// Running: a run is sending tools.
	Running = "running"
	// Idle: every visible tool has hints, or waits after its hints
	// were refused.
	Idle = "idle"
	// Backoff: the last run failed; NextRun is the next try.
	Backoff = "backoff"
	// BudgetExhausted: the day's budget is spent; NextRun is the
	// next UTC day.
	BudgetExhausted = "budget_exhausted"
)

// Amount is a number of tools and of tokens.
type Amount struct {
	Tools  int64 `json:"tools"`
	Tokens int64 `json:"tokens"`
}

// Counts counts tools by what came of them: hints written; hints
// refused by the checks (an answer that is not the JSON asked for, too
// large, or naming tools that were not asked for); requests that failed.
type Counts struct {
	Written  int64 `json:"written"`
	Rejected int64 `json:"rejected"`
	Failed   int64 `json:"failed"`
}

// Progress is where a run stands.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Status is background enrichment as /healthz, toolsearch status,
// /metrics and the dashboard show it.
type Status struct {
	// State is one of the states above; Reason says in one line why it
	// is not running, or what it waits for ("" when nothing is amiss).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Provider and Model are the configured ones ("" for the provider's
	// default model).
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Tools counts the visible tools; WithHints those with hints for
	// their current definition (from any source).
	Tools     int `json:"tools"`
	WithHints int `json:"tools_with_hints"`
	// Day is the UTC day Spent counts; Budget is the daily budget,
	// Remaining what is left of it today.
	Day       string `json:"day,omitempty"`
	Spent     Amount `json:"spent_today"`
	Budget    Amount `json:"budget"`
	Remaining Amount `json:"remaining_today"`
	// Today counts the day's tools of this state directory; SinceStart
	// those of this process, with its requests and the tokens the
	// provider counted.
	Today        Counts `json:"today"`
	SinceStart   Counts `json:"since_start"`
	Requests     int64  `json:"requests"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// Progress is the run in progress, nil between runs.
	Progress *Progress `json:"progress,omitempty"`
	// LastRun is when the last run ended; NextRun when the next one is
	// due without a change of the catalog.
	LastRun *time.Time `json:"last_run,omitempty"`
	NextRun *time.Time `json:"next_run,omitempty"`
	// LastError is the last problem (secrets hidden), at LastErrorAt.
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// Line says the state in one line: the state, and its reason when there
// is one.
func (s Status) Line() string {
	if s.Reason == "" {
		return s.State
	}
	return s.State + ": " + s.Reason
}

// hintCount is the count of visible tools with hints, for a catalog
// version.
type hintCount struct {
	version     uint64
	tools, with int
}

// Status returns the state of background enrichment (with Options.Check,
// as the state directory's record left it); refresh reads the cluster's
// spend again when it is old (never on the feed's path, which must not
// wait).
func (e *Enricher) Status(ctx context.Context, refresh bool) Status {
	tools, with := e.countHints()
	st := Status{Tools: tools, WithHints: with, State: Off}
	if !e.On() {
		return st
	}
	st.Provider, st.Model = e.cfg.Provider, e.cfg.Model
	st.Budget = Amount(e.cfg.DailyBudget)
	st.SinceStart = Counts{Written: e.written.Load(), Rejected: e.rejected.Load(), Failed: e.failed.Load()}
	st.Requests, st.InputTokens, st.OutputTokens = e.requests.Load(), e.inTokens.Load(), e.outTokens.Load()
	e.mu.Lock()
	st.State, st.Reason = e.state, e.reason
	if e.progress != nil {
		p := *e.progress
		st.Progress = &p
	}
	st.LastRun, st.NextRun, st.LastErrorAt = timePtr(e.lastRun), timePtr(e.nextRun), timePtr(e.lastErrAt)
	st.LastError = e.lastErr
	e.mu.Unlock()
	if e.budget != nil {
		day, spent := e.budget.spent(ctx, refresh)
		st.Day, st.Spent, st.Remaining = day, Amount(spent), Amount(e.budget.remaining(spent))
		r := e.rec.load().today(day)
		st.Today = Counts{Written: r.Written, Rejected: r.Rejected, Failed: r.Failed}
	}
	return st
}

// countHints counts the visible tools and those with hints, once per
// catalog version.
func (e *Enricher) countHints() (tools, with int) {
	snap := e.owner.Snapshot()
	if snap == nil {
		return 0, 0
	}
	e.mu.Lock()
	c := e.hinted
	e.mu.Unlock()
	if c.version == snap.Version() && c.version != 0 {
		return c.tools, c.with
	}
	c = hintCount{version: snap.Version()}
	for _, t := range snap.Tools() {
		if !e.owner.Visible(t) {
			continue
		}
		c.tools++
		if len(t.Hints) > 0 {
			c.with++
		}
	}
	e.mu.Lock()
	e.hinted = c
	e.mu.Unlock()
	return c.tools, c.with
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// set moves to state with reason; next is when the next run is due
// (zero: at a change). A change of state or reason is logged once; the
// state is kept in the state directory's record while this gateway holds
// the run lock, and told to the dashboard.
func (e *Enricher) set(state, reason string, next time.Time) {
	reason = oneLine(e.owner.Redact(reason))
	e.mu.Lock()
	changed := e.state != state || e.reason != reason
	e.state, e.reason, e.nextRun = state, reason, next
	if state != Running {
		e.progress = nil
	}
	e.mu.Unlock()
	if changed {
		switch state {
		case Backoff, Unavailable:
			e.log.Warn("background enrichment: " + state + ": " + reason)
		case BudgetExhausted:
			e.log.Warn("background enrichment stops for today: " + reason)
		case Running:
		default:
			if reason != "" {
				e.log.Info("background enrichment: " + state + ": " + reason)
			}
		}
	}
	e.persist()
	e.Feed()
}

// setRunning notes a run's progress.
func (e *Enricher) setRunning(done, total int) {
	e.mu.Lock()
	e.state, e.reason = Running, ""
	e.progress = &Progress{Done: done, Total: total}
	e.mu.Unlock()
	e.Feed()
}

// noteError keeps the last problem, for the status.
func (e *Enricher) noteError(msg string) {
	e.mu.Lock()
	e.lastErr, e.lastErrAt = oneLine(e.owner.Redact(msg)), time.Now()
	e.mu.Unlock()
}

// count adds up what a round did: the counts since start, the day's in
// the record, and the metrics.
func (e *Enricher) count(day string, res enrich.Result) {
	e.written.Add(int64(res.Written))
	e.rejected.Add(int64(res.Rejected))
	e.failed.Add(int64(res.Failed))
	e.requests.Add(int64(res.Requests))
	e.inTokens.Add(int64(res.InputTokens))
	e.outTokens.Add(int64(res.OutputTokens))
	if e.counted != nil {
		e.counted(res) // the metrics
	}
	if e.rec != nil {
		_, _ = e.rec.update(day, func(r *record) {
			r.Written += int64(res.Written)
			r.Rejected += int64(res.Rejected)
			r.Failed += int64(res.Failed)
		})
	}
}

// persist writes the state to the state directory's record, for
// toolsearch status, when this gateway may write it (it runs, holding
// the run lock).
func (e *Enricher) persist() {
	if e.rec == nil || e.check {
		return
	}
	e.mu.Lock()
	if !e.locked {
		e.mu.Unlock()
		return
	}
	state, reason := e.state, e.reason
	lastRun, nextRun, lastErr, lastErrAt := timePtr(e.lastRun), timePtr(e.nextRun), e.lastErr, timePtr(e.lastErrAt)
	e.mu.Unlock()
	if _, err := e.rec.update(e.budget.day(), func(r *record) {
		r.State, r.Reason, r.LastRun, r.NextRun = state, reason, lastRun, nextRun
		r.LastError, r.LastErrorAt = lastErr, lastErrAt
	}); err != nil {
		e.log.Debug("the enrichment record was not written", "err", err)
	}
}

// fromRecord takes the state the record holds, for a gateway that only
// checks (toolsearch status).
func (e *Enricher) fromRecord() {
	r, err := loadRecord(e.rec.path)
	if err != nil || r.State == "" {
		e.state, e.reason = Waiting, "serve has not run enrichment with this state directory yet"
		return
	}
	e.state, e.reason = r.State, r.Reason
	if r.LastRun != nil {
		e.lastRun = *r.LastRun
	}
	if r.NextRun != nil {
		e.nextRun = *r.NextRun
	}
	e.lastErr = r.LastError
	if r.LastErrorAt != nil {
		e.lastErrAt = *r.LastErrorAt
	}
}

// Feed tells Options.Feed the status, when there is one and enrichment
// is on: the gateway calls it when the tools with hints may have changed.
func (e *Enricher) Feed() {
	if !e.On() || e.tell == nil {
		return
	}
	e.tell(e.Status(context.Background(), false))
}

// oneLine makes s one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// budgetLine says the day's spend against the budget, for logs.
func budgetLine(spent, limit config.EnrichBudget) string {
	return fmt.Sprintf("%d of %d tools, %d of %d tokens", spent.Tools, limit.Tools, spent.Tokens, limit.Tokens)
}
