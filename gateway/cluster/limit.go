package cluster

import (
	"context"
	"math"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Rates are token buckets shared by every replica: a client that spreads
// its requests over N replicas gets the allowance of one, not N. Each
// bucket is one key holding its theoretical arrival time (the generic cell
// rate algorithm: the same bucket as golang.org/x/time/rate's, kept as one
// number), updated by a Lua script so that the read and the write are
// atomic. The clock is Redis's own (TIME), so replicas whose clocks
// disagree still share one bucket.

// takeScript takes one request from the bucket KEYS[1] of ARGV[1]
// microseconds per request and ARGV[2] requests of burst. It returns 0
// when the request may pass, or how many microseconds to wait.
var takeScript = newScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission = tonumber(ARGV[1])
local tolerance = emission * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new = tat + emission
local allowAt = new - tolerance
if now < allowAt then
  return allowAt - now
end
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000) + 1)
return 0
`)

// Take takes one request from the shared bucket named bucket, of
// perSecond requests a second and burst at once (at least one). It
// returns 0 when the request may pass, or how long the client should
// wait; ErrDown while Redis is down, when the caller applies its own
// local limit instead.
func (c *Cluster) Take(ctx context.Context, bucket string, perSecond float64, burst int) (time.Duration, error) {
	if perSecond <= 0 {
		return 0, nil
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	emission := int64(math.Max(1, math.Round(1e6/perSecond)))
	n, err := redis.Int64(takeScript.run(cctx, c.rdb, []string{c.key("rate", bucket)}, emission, max(1, burst)))
	if err = c.check(cctx, err); err != nil {
		return 0, err
	}
	if n > 0 {
		c.stats.limited.Add(1)
	}
	return time.Duration(n) * time.Microsecond, nil
}
