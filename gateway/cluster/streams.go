package cluster

import (
	"context"
	"sync"

	"github.com/gomodule/redigo/redis"
)

// Messages for one MCP session's event stream (the GET stream of
// 2025-11-25 sessions) travel between replicas over Redis pub/sub, on the
// channel P:stream:<hashed session id>: a replica that has a message for
// a session's stream but does not hold the stream publishes it, and the
// replica that holds it, subscribed while the stream is open, sends it on.
// Each message is sealed as a saved session state is (sessionstate.go):
// only a replica shown the session id can read it, and a message anyone
// else publishes on the channel fails to open and is dropped.
//
// The client's answers to a session's server-to-client requests travel
// the same way, on P:reply:<hashed session id>, to the replicas that made
// requests in the session: the one that made it takes the answer.
//
// One Redis connection carries every subscription of a replica. Pub/sub
// delivers at most once: a message published while no replica is
// subscribed, or while Redis is down, is lost, as a message to a closed
// stream is in a single gateway.

// streamHub is a replica's one pub/sub connection and who listens on it.
type streamHub struct {
	mu      sync.Mutex
	ps      *subscriber
	subs    map[string]map[*streamSub]struct{} // channel → listeners
	onEnded []func(ended func(id string) bool) // sessionstate.go
}

type streamSub struct {
	id string
	ch chan []byte
}

// streamBuffer is how many messages a listener may fall behind by; more
// are dropped (a stream whose client does not read is not waited on).
const streamBuffer = 64

func (c *Cluster) streamChannel(id string) string { return c.key("stream", sessionName(id)) }

// replyChannel carries the client's answers to a session's server-to-
// client requests: P:reply:<hashed session id>.
func (c *Cluster) replyChannel(id string) string { return c.key("reply", sessionName(id)) }

// PublishStream sends msg to the replica holding session id's event
// stream. It returns how many replicas received it: 0 when none holds it.
func (c *Cluster) PublishStream(ctx context.Context, id string, msg []byte) (int, error) {
	return c.publish(ctx, id, c.streamChannel(id), msg)
}

// SubscribeStream receives the messages published for session id's event
// stream until stop is called. While Redis is down it fails with ErrDown;
// a subscription made before an outage resumes when Redis returns.
func (c *Cluster) SubscribeStream(ctx context.Context, id string) (msgs <-chan []byte, stop func(), err error) {
	return c.subscribe(ctx, id, c.streamChannel(id))
}

// PublishReply sends a client's answer to a request of session id to the
// replicas that listen for them (SubscribeReplies): the one that made the
// request knows it by its id. It returns how many replicas received it.
func (c *Cluster) PublishReply(ctx context.Context, id string, msg []byte) (int, error) {
	return c.publish(ctx, id, c.replyChannel(id), msg)
}

// SubscribeReplies receives the answers PublishReply sends for session id
// until stop is called.
func (c *Cluster) SubscribeReplies(ctx context.Context, id string) (msgs <-chan []byte, stop func(), err error) {
	return c.subscribe(ctx, id, c.replyChannel(id))
}

// publish sends msg, sealed for session id, on channel ch.
func (c *Cluster) publish(ctx context.Context, id, ch string, msg []byte) (int, error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	n, err := redis.Int(c.rdb.do(cctx, "PUBLISH", ch, seal(id, ch, msg)))
	if err = c.check(cctx, err); err != nil {
		return 0, err
	}
	c.stats.streamPublished.Add(1)
	return int(n), nil
}

// subscribe receives what is published on channel ch for session id.
func (c *Cluster) subscribe(ctx context.Context, id, ch string) (msgs <-chan []byte, stop func(), err error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	h := &c.streams
	sub := &streamSub{id: id, ch: make(chan []byte, streamBuffer)}
	h.mu.Lock()
	c.startHub()
	first := len(h.subs[ch]) == 0
	if first {
		h.subs[ch] = map[*streamSub]struct{}{}
	}
	h.subs[ch][sub] = struct{}{}
	ps := h.ps
	h.mu.Unlock()
	if first {
		if err := c.check(cctx, ps.subscribe(cctx, ch)); err != nil {
			c.dropListener(ch, sub)
			return nil, nil, err
		}
	}
	var once sync.Once
	return sub.ch, func() { once.Do(func() { c.dropListener(ch, sub) }) }, nil
}

// startHub opens the pub/sub connection on first use. h.mu is held.
func (c *Cluster) startHub() {
	h := &c.streams
	if h.ps == nil {
		h.ps = newSubscriber(c.rdb, c.log, c.red, 256)
		h.subs = map[string]map[*streamSub]struct{}{}
		go c.dispatch(h.ps.out)
	}
}

// ensureSubscribed subscribes the hub to ch (P:ended). Should Redis be
// down, the hub subscribes when it connects again.
func (c *Cluster) ensureSubscribed(ch string) {
	h := &c.streams
	h.mu.Lock()
	c.startHub()
	ps := h.ps
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	_ = ps.subscribe(ctx, ch)
}

// dropListener removes sub; the last listener of a channel unsubscribes.
func (c *Cluster) dropListener(ch string, sub *streamSub) {
	h := &c.streams
	h.mu.Lock()
	delete(h.subs[ch], sub)
	last := h.subs[ch] != nil && len(h.subs[ch]) == 0
	if last {
		delete(h.subs, ch)
	}
	ps := h.ps
	h.mu.Unlock()
	if last && ps != nil {
		_ = ps.unsubscribe(ch)
	}
}

// dispatch hands each message to the listeners of its channel, opened
// with the session id of each; one that does not open is dropped.
func (c *Cluster) dispatch(in <-chan message) {
	h := &c.streams
	ended := c.key("ended")
	for m := range in {
		if m.channel == ended {
			h.mu.Lock()
			fs := append([]func(func(string) bool){}, h.onEnded...)
			h.mu.Unlock()
			check := c.endedCheck(m.channel, string(m.payload))
			for _, f := range fs {
				f(check)
			}
			continue
		}
		h.mu.Lock()
		var subs []*streamSub
		for s := range h.subs[m.channel] {
			subs = append(subs, s)
		}
		h.mu.Unlock()
		for _, s := range subs {
			data, err := unseal(s.id, m.channel, m.payload)
			if err != nil {
				c.stats.streamRefused.Add(1)
				c.log.Warn("dropping a stream message that does not open for its session (forged)", "session", sessionName(s.id)[:12])
				continue
			}
			select {
			case s.ch <- data:
				c.stats.streamDelivered.Add(1)
			default:
				c.log.Debug("dropping a stream message: its stream is not read", "session", sessionName(s.id)[:12])
			}
		}
	}
}

// closeStreams ends the pub/sub connection.
func (c *Cluster) closeStreams() {
	h := &c.streams
	h.mu.Lock()
	ps := h.ps
	h.ps = nil
	h.mu.Unlock()
	if ps != nil {
		ps.close()
	}
}
