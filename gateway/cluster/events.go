package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The events of MCP sessions' SSE streams, kept so that a client whose
// stream broke resumes it with Last-Event-ID on any replica: what the MCP
// library's EventStore keeps in one process, kept here for the service.
//
// Each stream of a session (its event stream, named "", and the stream of
// each POST, named by the library with a random id) is a Redis list,
// P:events:<hashed session id>:<hashed stream id>, of sealed events in the
// order they were sent. The event with index i is at position
// i - first, where first (P:events:…:first, absent when 0) counts the
// events no longer kept: at most MaxStreamEvents are, the oldest going
// first, and an event over MaxEventBytes is counted but not kept, which
// drops the events before it too, so that no replay ever skips one. A
// set, P:events:<hashed session id>, names the session's keys, so that
// the session's end removes them all; each key lives for the session's
// idle timeout after its last event.

// Bounds of what one stream keeps.
const (
	MaxStreamEvents = 256
	MaxEventBytes   = 1 << 20
)

// Errors of EventsAfter.
var (
	// ErrEventsPurged: some event after the index asked for is no
	// longer kept, so the stream cannot be replayed from there.
	ErrEventsPurged = errors.New("cluster: events of the stream were dropped")
	// ErrUnknownStream: the stream was never opened, or has expired.
	ErrUnknownStream = errors.New("cluster: no such stream")
)

// appendScript adds ARGV[1] to the list KEYS[1], or counts it without
// keeping it when ARGV[4] is "drop"; it trims the list to ARGV[2] events
// and renews every key's TTL (ARGV[3] ms). KEYS[2] is first, KEYS[3] the
// session's set. ARGV[5] events that could not be added before (Redis
// was down) are counted first, as dropped. It returns the index the event
// got.
var appendScript = newScript(`
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local len = redis.call('LLEN', KEYS[1])
local missed = tonumber(ARGV[5])
if missed > 0 then
  redis.call('DEL', KEYS[1])
  first = first + len + missed
  len = 0
  redis.call('SET', KEYS[2], first)
end
local index = first + len
if ARGV[4] == 'drop' then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], index + 1)
else
  len = redis.call('RPUSH', KEYS[1], ARGV[1])
  local over = len - tonumber(ARGV[2])
  if over > 0 then
    redis.call('LTRIM', KEYS[1], over, -1)
    redis.call('SET', KEYS[2], first + over)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], KEYS[1], KEYS[2])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return index
`)

// afterScript returns {status, events…} for the events after index
// ARGV[1]: status 1 with the events, 0 when the stream is unknown (not in
// the session's set KEYS[3] as ARGV[2]), -1 when one was dropped, -2 when
// the list holds what no replica writes: more than ARGV[3] events after
// the index, or an event over ARGV[4] bytes. A replay thus reads at most
// ARGV[3] events of at most ARGV[4] bytes, whatever was put in the list.
var afterScript = newScript(`
if redis.call('SISMEMBER', KEYS[3], ARGV[2]) == 0 then
  return {0}
end
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
local start = tonumber(ARGV[1]) + 1 - first
if start < 0 then
  return {-1}
end
local most = tonumber(ARGV[3])
if redis.call('LLEN', KEYS[1]) - start > most then
  return {-2}
end
local out = redis.call('LRANGE', KEYS[1], start, start + most - 1)
local bound = tonumber(ARGV[4])
for _, v in ipairs(out) do
  if string.len(v) > bound then
    return {-2}
  end
end
table.insert(out, 1, 1)
return out
`)

// sealOverhead is what sealing adds to an event: the nonce and the tag.
const sealOverhead = 12 + 16

// eventKeys are the keys of one stream: its list, its first, and the
// session's set.
func (c *Cluster) eventKeys(id, stream string) (list, first, set string) {
	set = c.key("events", sessionName(id))
	list = set + ":" + streamName(stream)
	return list, list + ":first", set
}

// streamName hides a stream's id as sessionName hides a session's: the
// library's stream ids are random, but nothing needs them in clear.
func streamName(stream string) string {
	if stream == "" {
		return "main"
	}
	return sessionName("stream\x00" + stream)[:24]
}

// OpenEvents marks a stream of session id as opened, so that EventsAfter
// replays it (with nothing yet) rather than failing. ttl is how long it
// is kept without events.
func (c *Cluster) OpenEvents(ctx context.Context, id, stream string, ttl time.Duration) error {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	list, _, set := c.eventKeys(id, stream)
	_, err = c.rdb.pipeline(cctx, cmd("SADD", set, list), cmd("PEXPIRE", set, ms(ttl)))
	return c.check(cctx, err)
}

// AppendEvent adds an event to a stream of session id and returns the
// index it got. An event over MaxEventBytes is counted and not kept.
// missed is how many events of the stream this replica could not add
// before (while Redis was down): they are counted as dropped, so that the
// indexes stay those the client was given and no replay skips them.
func (c *Cluster) AppendEvent(ctx context.Context, id, stream string, data []byte, missed int, ttl time.Duration) (int, error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	list, first, set := c.eventKeys(id, stream)
	var value any = ""
	mode := "drop"
	if len(data) <= MaxEventBytes {
		value, mode = seal(id, list, data), "keep"
	} else {
		c.log.Debug("an event too large to keep for other replicas", "bytes", len(data))
	}
	n, err := redis.Int(appendScript.run(cctx, c.rdb, []string{list, first, set}, value, MaxStreamEvents, max(1, ttl.Milliseconds()), mode, max(0, missed)))
	if err = c.check(cctx, err); err != nil {
		return 0, err
	}
	c.stats.eventsKept.Add(1)
	return n, nil
}

// EventsAfter returns the events of a stream of session id after index
// (-1 for all): at most MaxStreamEvents, each at most MaxEventBytes. It
// fails with ErrUnknownStream when the stream was never opened or
// expired, ErrEventsPurged when one after index is no longer kept, and
// ErrBadSession when an event does not open for the session, or the list
// holds more or larger events than a replica keeps (Redis reads no more).
func (c *Cluster) EventsAfter(ctx context.Context, id, stream string, index int) ([][]byte, error) {
	if index < -1 {
		return nil, fmt.Errorf("cluster: event index %d", index)
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	list, first, set := c.eventKeys(id, stream)
	res, err := redis.Values(afterScript.run(cctx, c.rdb, []string{list, first, set}, index, list, MaxStreamEvents, MaxEventBytes+sealOverhead))
	if err = c.check(cctx, err); err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("cluster: an empty answer to a replay")
	}
	switch status, _ := res[0].(int64); status {
	case 0:
		return nil, ErrUnknownStream
	case -1:
		return nil, ErrEventsPurged
	case -2:
		c.stats.sessionRefused.Add(1)
		c.log.Warn("refusing to replay a stream whose kept events are more or larger than a replica keeps (written by something else)",
			"session", sessionName(id)[:12], "bound", MaxStreamEvents)
		return nil, ErrBadSession
	}
	out := make([][]byte, 0, len(res)-1)
	for _, v := range res[1:] {
		sealed, _ := v.([]byte)
		data, err := unseal(id, list, sealed)
		if err != nil {
			c.stats.sessionRefused.Add(1)
			c.log.Warn("refusing a kept event that does not open for its session (altered or forged)", "session", sessionName(id)[:12])
			return nil, err
		}
		out = append(out, data)
	}
	c.stats.eventsReplayed.Add(int64(len(out)))
	return out, nil
}

// dropEvents removes every stream of session id: the session's set names
// them (what it does not name expires on its own).
func (c *Cluster) dropEvents(ctx context.Context, id string) error {
	_, _, set := c.eventKeys(id, "")
	_, err := dropEventsScript.run(ctx, c.rdb, []string{set})
	return err
}

var dropEventsScript = newScript(`
local keys = redis.call('SMEMBERS', KEYS[1])
for _, k in ipairs(keys) do
  redis.call('DEL', k)
end
redis.call('DEL', KEYS[1])
return #keys
`)
