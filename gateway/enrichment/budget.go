package enrichment

import (
	"context"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// budget is background enrichment's daily budget
// (toolsearch.enrich.dailyBudget): the tools answered and the tokens
// spent on a UTC day, by every replica together.
//
// Before a round of requests the gateway reserves what it should cost (a
// tool and an estimate of its tokens, for each tool in order) and is
// granted the tools that fit; after the round it settles: what was not
// spent (tools not answered, tokens not used) goes back, what the
// estimate missed is added. Tools whose request failed are given back:
// the budget bounds what the provider bills. The spend is kept in the
// state directory's enrich.json, so that a restart does not reset it,
// and, with a cluster, in Redis (Coordinator), where every replica
// reserves from the same count. While Redis is down a replica counts
// against the last total it saw plus its own spend (as rate limits fall
// back to per replica), and adds its own spend to the shared count when
// Redis answers again.
type budget struct {
	limit config.EnrichBudget
	rec   *recordFile
	coord Coordinator // nil without a cluster
	now   func() time.Time

	mu sync.Mutex
	// seen is the spend last read from the cluster, on seenDay at seenAt;
	// pending what this replica spent while Redis was down, on
	// pendingDay.
	seen                config.EnrichBudget
	seenDay, pendingDay string
	seenAt              time.Time
	pending             config.EnrichBudget
}

// spendRefresh is how old the cluster's spend may be when a status shows
// it.
const spendRefresh = 5 * time.Second

// day is the current UTC day, YYYY-MM-DD.
func (b *budget) day() string { return b.now().UTC().Format(time.DateOnly) }

// reserve reserves one tool per element of toolTokens, with that many
// tokens, for as many in order as the day's budget holds; it returns how
// many it granted, the day they count on and the day's spend then.
func (b *budget) reserve(ctx context.Context, toolTokens []int64) (granted int, day string, spent config.EnrichBudget) {
	day = b.day()
	if b.coord != nil && b.flushPending(ctx, day) {
		cctx, cancel := context.WithTimeout(ctx, coordTimeout)
		n, s, err := b.coord.ReserveSpend(cctx, leaseKind, day, b.limit, toolTokens)
		cancel()
		if err == nil {
			b.sawShared(day, s)
			b.mirror(day, s)
			return n, day, s
		}
	}
	rec, _ := b.rec.update(day, func(r *record) {
		spent := config.EnrichBudget(r.Spent)
		for _, k := range toolTokens {
			if spent.Tools+1 > b.limit.Tools || spent.Tokens+k > b.limit.Tokens {
				break
			}
			spent.Tools++
			spent.Tokens += k
			granted++
		}
		b.addPending(day, config.EnrichBudget{Tools: int64(granted), Tokens: spent.Tokens - r.Spent.Tokens})
		r.Spent = Amount(spent)
	})
	return granted, day, config.EnrichBudget(rec.Spent)
}

// settle adds delta (negative parts give a reservation back) to the spend
// of day.
func (b *budget) settle(ctx context.Context, day string, delta config.EnrichBudget) {
	if delta == (config.EnrichBudget{}) {
		return
	}
	if b.coord != nil && b.flushPending(ctx, day) {
		cctx, cancel := context.WithTimeout(ctx, coordTimeout)
		s, err := b.coord.AddSpend(cctx, leaseKind, day, delta)
		cancel()
		if err == nil {
			b.sawShared(day, s)
			b.mirror(day, s)
			return
		}
	}
	if day != b.day() {
		return // a day past: its spend no longer counts
	}
	_, _ = b.rec.update(day, func(r *record) {
		r.Spent.Tools = max(0, r.Spent.Tools+delta.Tools)
		r.Spent.Tokens = max(0, r.Spent.Tokens+delta.Tokens)
	})
	b.addPending(day, delta)
}

// spent returns the day's spend: the cluster's (read again when older
// than spendRefresh, if refresh is set), or the state directory's.
func (b *budget) spent(ctx context.Context, refresh bool) (string, config.EnrichBudget) {
	day := b.day()
	if b.coord != nil {
		b.mu.Lock()
		seen, sameDay, age := b.seen, b.seenDay == day, time.Since(b.seenAt)
		b.mu.Unlock()
		if sameDay && (age < spendRefresh || !refresh) {
			return day, seen
		}
		if refresh {
			cctx, cancel := context.WithTimeout(ctx, coordTimeout)
			_, s, err := b.coord.ReserveSpend(cctx, leaseKind, day, b.limit, nil)
			cancel()
			if err == nil {
				b.sawShared(day, s)
				return day, s
			}
		}
	}
	return day, config.EnrichBudget(b.rec.load().today(day).Spent)
}

// remaining is what is left of the day's budget after spent.
func (b *budget) remaining(spent config.EnrichBudget) config.EnrichBudget {
	return config.EnrichBudget{Tools: max(0, b.limit.Tools-spent.Tools), Tokens: max(0, b.limit.Tokens-spent.Tokens)}
}

// exhausted reports whether spent leaves no room for another tool.
func (b *budget) exhausted(spent config.EnrichBudget) bool {
	return spent.Tools >= b.limit.Tools || spent.Tokens >= b.limit.Tokens
}

// sawShared notes the cluster's spend of day.
func (b *budget) sawShared(day string, s config.EnrichBudget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen, b.seenDay, b.seenAt = s, day, time.Now()
}

// mirror keeps the cluster's spend in the state directory too, for
// toolsearch status and for a start while Redis is down.
func (b *budget) mirror(day string, s config.EnrichBudget) {
	_, _ = b.rec.update(day, func(r *record) { r.Spent = Amount(s) })
}

// addPending notes spend made without the cluster, for the cluster.
func (b *budget) addPending(day string, d config.EnrichBudget) {
	if b.coord == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pendingDay != day {
		b.pendingDay, b.pending = day, config.EnrichBudget{}
	}
	b.pending.Tools += d.Tools
	b.pending.Tokens += d.Tokens
}

// flushPending adds to the cluster what this replica spent while it was
// down; it reports whether the cluster answered (or there was nothing
// to add).
func (b *budget) flushPending(ctx context.Context, day string) bool {
	b.mu.Lock()
	p, pday := b.pending, b.pendingDay
	b.mu.Unlock()
	if p == (config.EnrichBudget{}) || pday != day {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, coordTimeout)
	defer cancel()
	if _, err := b.coord.AddSpend(cctx, leaseKind, day, p); err != nil {
		return false
	}
	b.mu.Lock()
	if b.pendingDay == pday {
		b.pending.Tools -= p.Tools
		b.pending.Tokens -= p.Tokens
	}
	b.mu.Unlock()
	return true
}
