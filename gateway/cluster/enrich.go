package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// Work that one replica should do for all (the gateway's background
// enrichment: asking a model for a tool's search hints) is handed out by
// leases, and what it costs is counted per day for the whole service:
//
//	P:lease:<kind>:<name>   who does the work named: "<replica>/<nonce>" while it runs, "done" after
//	P:spend:<kind>:<day>    a hash of what was spent on a UTC day: tools, tokens
//
// A lease is taken with SET NX and a TTL, so two replicas asking at once
// get it once, and the lease of a replica that died expires. A replica
// that finishes marks its leases done (for the TTL given), so that the
// others know the result is shared rather than still under way. The day's
// spend is reserved before the work and settled after, in Lua scripts, so
// that replicas reserving at once never together pass the limit.

// takeLeasesScript takes, for ARGV[2] ms, each key of KEYS that is free or
// already ARGV[1]'s. It returns per key 1 (taken), 2 (done) or 0 (held by
// another).
var takeLeasesScript = newScript(`
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call('SET', k, ARGV[1], 'NX', 'PX', ARGV[2]) then
    out[i] = 1
  else
    local v = redis.call('GET', k)
    if v == ARGV[1] then
      redis.call('PEXPIRE', k, ARGV[2])
      out[i] = 1
    elseif v == 'done' then
      out[i] = 2
    else
      out[i] = 0
    end
  end
end
return out
`)

// finishLeasesScript sets each key of KEYS that ARGV[1] holds to "done" for
// ARGV[2] ms, or drops it when ARGV[2] is 0.
var finishLeasesScript = newScript(`
local n = 0
for _, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then
    if ARGV[2] == '0' then
      redis.call('DEL', k)
    else
      redis.call('SET', k, 'done', 'PX', ARGV[2])
    end
    n = n + 1
  end
end
return n
`)

// reserveSpendScript adds to the day's spend (KEYS[1]: tools, tokens) the
// longest run of ARGV[4..] (the tokens of one tool each) that keeps it
// within ARGV[1] tools and ARGV[2] tokens, and keeps the hash ARGV[3] ms.
// It returns how many it added and the spend then.
var reserveSpendScript = newScript(`
local tools = tonumber(redis.call('HGET', KEYS[1], 'tools') or '0')
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0')
local n = 0
for i = 4, #ARGV do
  local k = tonumber(ARGV[i])
  if tools + 1 > tonumber(ARGV[1]) or tokens + k > tonumber(ARGV[2]) then break end
  tools = tools + 1
  tokens = tokens + k
  n = n + 1
end
if n > 0 then
  redis.call('HSET', KEYS[1], 'tools', string.format('%d', tools), 'tokens', string.format('%d', tokens))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {n, tools, tokens}
`)

// addSpendScript adds ARGV[1] tools and ARGV[2] tokens (either may be
// negative; neither total goes below 0) to the day's spend KEYS[1], keeps
// it ARGV[3] ms, and returns the spend then.
var addSpendScript = newScript(`
local tools = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'tools') or '0') + tonumber(ARGV[1]))
local tokens = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'tokens') or '0') + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'tools', string.format('%d', tools), 'tokens', string.format('%d', tokens))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {tools, tokens}
`)

// spendTTL is how long a day's spend is kept: past the day in every time
// zone, and a little more for a replica whose clock lags.
const spendTTL = 3 * 24 * time.Hour

// dayForm is what names a day: YYYY-MM-DD.
var dayForm = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// newOwner names a lease holder: this replica, and this process of it (a
// restarted replica does not hold its predecessor's leases).
func newOwner(replica string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return replica + "/" + hex.EncodeToString(b[:])
}

// leaseKeys names the leases of kind.
func (c *Cluster) leaseKeys(kind string, names []string) ([]string, error) {
	keys := make([]string, len(names))
	for i, n := range names {
		if err := checkNames(kind, n); err != nil {
			return nil, err
		}
		keys[i] = c.key("lease", kind, n)
	}
	return keys, nil
}

// TakeLeases takes, for ttl, the leases of kind named names that no other
// replica holds. It returns the names it took (or held already) and those
// another replica marked done; the rest are held by another replica.
func (c *Cluster) TakeLeases(ctx context.Context, kind string, names []string, ttl time.Duration) (taken, done []string, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	keys, err := c.leaseKeys(kind, names)
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	res, err := redis.Int64s(takeLeasesScript.run(cctx, c.rdb, keys, c.owner, max(1, ttl.Milliseconds())))
	if err = c.check(cctx, err); err != nil {
		return nil, nil, err
	}
	if len(res) != len(names) {
		return nil, nil, fmt.Errorf("cluster: Redis answered %d lease states for %d names", len(res), len(names))
	}
	for i, r := range res {
		switch r {
		case 1:
			taken = append(taken, names[i])
		case 2:
			done = append(done, names[i])
		}
	}
	c.stats.leasesTaken.Add(int64(len(taken)))
	return taken, done, nil
}

// FinishLeases marks the leases of kind named names that this replica
// holds done, for ttl: the others know the work is finished and shared.
func (c *Cluster) FinishLeases(ctx context.Context, kind string, names []string, ttl time.Duration) error {
	return c.endLeases(ctx, kind, names, max(1, ttl.Milliseconds()))
}

// ReleaseLeases gives up the leases of kind named names that this replica
// holds, so that another replica may take them at once.
func (c *Cluster) ReleaseLeases(ctx context.Context, kind string, names []string) error {
	return c.endLeases(ctx, kind, names, 0)
}

func (c *Cluster) endLeases(ctx context.Context, kind string, names []string, ms int64) error {
	if len(names) == 0 {
		return nil
	}
	keys, err := c.leaseKeys(kind, names)
	if err != nil {
		return err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = finishLeasesScript.run(cctx, c.rdb, keys, c.owner, ms)
	return c.check(cctx, err)
}

// spendKey names the spend of kind on day.
func (c *Cluster) spendKey(kind, day string) (string, error) {
	if !dayForm.MatchString(day) {
		return "", fmt.Errorf("cluster: %q is not a day (YYYY-MM-DD)", day)
	}
	if err := checkNames(kind); err != nil {
		return "", err
	}
	return c.key("spend", kind, day), nil
}

// ReserveSpend adds to the spend of kind on day one tool for each element
// of toolTokens, with that many tokens, for as many tools in order as keep
// the spend within limit. It returns how many it added and the spend then
// (with them). Replicas reserving at once never pass the limit together.
func (c *Cluster) ReserveSpend(ctx context.Context, kind, day string, limit config.EnrichBudget, toolTokens []int64) (int, config.EnrichBudget, error) {
	key, err := c.spendKey(kind, day)
	if err != nil {
		return 0, config.EnrichBudget{}, err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return 0, config.EnrichBudget{}, err
	}
	defer cancel()
	args := make([]any, 0, 3+len(toolTokens))
	args = append(args, limit.Tools, limit.Tokens, spendTTL.Milliseconds())
	for _, k := range toolTokens {
		args = append(args, max(0, k))
	}
	res, err := redis.Int64s(reserveSpendScript.run(cctx, c.rdb, []string{key}, args...))
	if err = c.check(cctx, err); err != nil {
		return 0, config.EnrichBudget{}, err
	}
	if len(res) != 3 {
		return 0, config.EnrichBudget{}, fmt.Errorf("cluster: Redis answered %d numbers for a reservation", len(res))
	}
	return int(res[0]), config.EnrichBudget{Tools: res[1], Tokens: res[2]}, nil
}

// AddSpend adds delta (either part may be negative: a reservation given
// back) to the spend of kind on day, and returns the spend then. Neither
// total goes below zero.
func (c *Cluster) AddSpend(ctx context.Context, kind, day string, delta config.EnrichBudget) (config.EnrichBudget, error) {
	key, err := c.spendKey(kind, day)
	if err != nil {
		return config.EnrichBudget{}, err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return config.EnrichBudget{}, err
	}
	defer cancel()
	res, err := redis.Int64s(addSpendScript.run(cctx, c.rdb, []string{key}, delta.Tools, delta.Tokens, spendTTL.Milliseconds()))
	if err = c.check(cctx, err); err != nil {
		return config.EnrichBudget{}, err
	}
	if len(res) != 2 {
		return config.EnrichBudget{}, fmt.Errorf("cluster: Redis answered %d numbers for a spend", len(res))
	}
	return config.EnrichBudget{Tools: res[0], Tokens: res[1]}, nil
}
