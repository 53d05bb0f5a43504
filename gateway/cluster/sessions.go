package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Open sessions are counted for the whole service in one sorted set: a
// member per session (a lease, named replica/random), scored by when it
// expires. A replica renews the leases of its live sessions every
// leaseTTL/3; the leases of a replica that died expire after leaseTTL, so
// its sessions stop counting against the cap without anyone cleaning up.

// leaseTTL is how long a lease lives without renewal.
var leaseTTL = 30 * time.Second

// leaseSlack is how far past now + leaseTTL a lease may expire and still
// count: every lease is written on Redis's own clock (TIME) with an
// expiry of now + leaseTTL, so no replica writes one later than that. A
// lease that expires later was not written by a replica: anyone who can
// write to Redis could otherwise fill the set with far-future leases and
// have every replica refuse new sessions as if maxSessions were open.
// Such leases are neither counted nor kept.
const leaseSlack = 5 * time.Second

// reserveScript drops expired leases and those expiring after now +
// ARGV[3] + ARGV[4] ms (forged), then adds ARGV[1] expiring in ARGV[3] ms
// if fewer than ARGV[2] remain, or if ARGV[1] is there already (a session
// another replica holds too). It returns {1 when it added it, else 0; the
// number of forged leases it dropped}.
var reserveScript = newScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local forged = redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + tonumber(ARGV[3]) + tonumber(ARGV[4])), '+inf')
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return {0, forged}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))
return {1, forged}
`)

// renewScript sets every lease of ARGV[2..] to expire ARGV[1] ms from now
// (adding those a restarted Redis forgot).
var renewScript = newScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
return #ARGV - 1
`)

// countScript counts the leases that have not expired and expire no
// later than now + ARGV[1] ms (a later one is forged: reserveScript).
var countScript = newScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, now + tonumber(ARGV[1]))
`)

// leaseTable is the leases this replica holds.
type leaseTable struct {
	mu      sync.Mutex
	m       map[string]struct{}
	renewed time.Time
}

func (t *leaseTable) due(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) > 0 && now.Sub(t.renewed) >= leaseTTL/3
}

// A Lease is one session's place under the service-wide cap. Release
// gives it back; it is safe to call more than once.
type Lease struct {
	c    *Cluster
	id   string
	once sync.Once
}

// ReserveSession takes a place for a new session under the cap max, for
// the whole service, and returns the function that gives it back (safe to
// call more than once). ok is false when max sessions are open across the
// replicas. It returns ErrDown while Redis is down, when the caller
// counts against its own cap instead.
func (c *Cluster) ReserveSession(ctx context.Context, max int) (release func(), ok bool, err error) {
	l, ok, err := c.Reserve(ctx, max)
	if !ok {
		return nil, ok, err
	}
	return l.Release, true, nil
}

// ReserveSessionFor is ReserveSession for the MCP session id, whose lease
// is named after it: the replicas that hold the same session (one took it
// over from another, or each holds a copy behind a load balancer that is
// not sticky) count it once.
func (c *Cluster) ReserveSessionFor(ctx context.Context, id string, max int) (release func(), ok bool, err error) {
	l, ok, err := c.reserve(ctx, "s/"+sessionName(id), max)
	if !ok {
		return nil, ok, err
	}
	return l.Release, true, nil
}

// Reserve is ReserveSession, returning the Lease itself.
func (c *Cluster) Reserve(ctx context.Context, max int) (l *Lease, ok bool, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return c.reserve(ctx, c.replica+"/"+hex.EncodeToString(b[:]), max)
}

// reserve takes the lease named id.
func (c *Cluster) reserve(ctx context.Context, id string, max int) (l *Lease, ok bool, err error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, false, err
	}
	defer cancel()
	// The lease is in the table before Redis has it, so that a renewal
	// running meanwhile cannot miss it.
	c.leases.mu.Lock()
	c.leases.m[id] = struct{}{}
	c.leases.mu.Unlock()
	res, err := redis.Int64s(reserveScript.run(cctx, c.rdb, []string{c.key("sessions")}, id, max, leaseTTL.Milliseconds(), leaseSlack.Milliseconds()))
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("cluster: Redis answered %d numbers for a session lease", len(res))
	}
	var n int64
	if err == nil {
		n = res[0]
		c.droppedLeases(res[1])
	}
	if err = c.check(cctx, err); err != nil || n != 1 {
		c.leases.mu.Lock()
		delete(c.leases.m, id)
		c.leases.mu.Unlock()
		return nil, false, err
	}
	return &Lease{c: c, id: id}, true, nil
}

// Release gives the lease's place back.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		c := l.c
		c.leases.mu.Lock()
		delete(c.leases.m, l.id)
		c.leases.mu.Unlock()
		cctx, cancel, err := c.ready(context.Background())
		if err != nil {
			return // it expires on its own
		}
		defer cancel()
		_, err = c.rdb.do(cctx, "ZREM", c.key("sessions"), l.id)
		_ = c.check(cctx, err)
	})
}

// OpenSessions counts the sessions open across the replicas.
func (c *Cluster) OpenSessions(ctx context.Context) (int, error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	n, err := redis.Int(countScript.run(cctx, c.rdb, []string{c.key("sessions")}, (leaseTTL + leaseSlack).Milliseconds()))
	return n, c.check(cctx, err)
}

// droppedLeases counts n forged session leases dropped, and logs the
// first drop.
func (c *Cluster) droppedLeases(n int64) {
	if n <= 0 {
		return
	}
	if c.stats.leasesDropped.Add(n) == n {
		c.log.Warn("dropped session leases that expire later than any replica writes one (written into Redis by something else)",
			"leases", n, "key", c.key("sessions"))
	}
}

// refreshLeases renews the leases of this replica's live sessions.
func (c *Cluster) refreshLeases(ctx context.Context) {
	c.leases.mu.Lock()
	args := []any{leaseTTL.Milliseconds()}
	for id := range c.leases.m {
		args = append(args, id)
	}
	c.leases.renewed = time.Now()
	c.leases.mu.Unlock()
	if len(args) == 1 {
		return
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return
	}
	defer cancel()
	_, err = renewScript.run(cctx, c.rdb, []string{c.key("sessions")}, args...)
	_ = c.check(cctx, err)
}
