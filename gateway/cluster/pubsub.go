package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// subscriber is one Redis connection that carries every subscription of
// a replica (streams.go). A subscription counts once Redis has confirmed
// it. The subscriber remembers its channels: when the connection fails it
// connects again, every retryEvery while Redis is away, and subscribes to
// them all anew. It pings every subPingEvery; a connection that has not
// answered within subPingEvery+subPingWait is taken for dead (a network
// that drops packets closes nothing).
type subscriber struct {
	r                   *redisClient
	log                 *slog.Logger
	red                 *redact.Redactor
	pingEvery, pingWait time.Duration
	out                 chan message  // what was published on the channels, in order
	stopped             chan struct{} // closed when the reader has stopped

	// mu guards what follows, and is held to write to conn (one writer
	// at a time; the reader goroutine alone reads).
	mu       sync.Mutex
	conn     redis.Conn // nil while there is none
	channels map[string]struct{}
	waiting  map[string][]chan struct{} // closed when Redis confirms the channel's subscription
	closed   bool
	done     chan struct{} // closed by close
	wake     chan struct{} // subscribe added channels without a connection
}

// message is one message published on a channel.
type message struct {
	channel string
	payload []byte
}

// How the subscriber keeps its connection, and how long it waits for the
// reader of out before dropping a message.
var (
	subPingEvery  = 3 * time.Second
	subPingWait   = 5 * time.Second
	retryEvery    = 100 * time.Millisecond
	subDeliverMax = time.Minute
)

var errSubscriberClosed = errors.New("cluster: the pub/sub connection is closed")

// newSubscriber starts the subscriber of r; its messages come on out,
// which is closed after close. It connects at the first subscribe.
func newSubscriber(r *redisClient, log *slog.Logger, red *redact.Redactor, buffer int) *subscriber {
	s := &subscriber{r: r, log: log, red: red, pingEvery: subPingEvery, pingWait: subPingWait,
		out: make(chan message, buffer), stopped: make(chan struct{}),
		channels: map[string]struct{}{}, waiting: map[string][]chan struct{}{},
		done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go s.run()
	return s
}

// subscribe adds ch, connecting first if there is no connection, and
// returns once Redis has confirmed it: a message published after that
// reaches it. The channel is kept when it fails (the error of the
// connection, or ctx's): it is subscribed to when the connection is made
// again.
func (s *subscriber) subscribe(ctx context.Context, ch string) error {
	confirmed := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errSubscriberClosed
	}
	s.channels[ch] = struct{}{}
	s.waiting[ch] = append(s.waiting[ch], confirmed)
	var err error
	if s.conn != nil {
		err = s.sendLocked("SUBSCRIBE", ch)
	} else {
		err = s.connectLocked(ctx) // subscribes to every channel
		// The reader may wait for a channel, or to connect again.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	if err == nil {
		select {
		case <-confirmed:
			return nil
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	s.mu.Lock()
	s.waiting[ch] = slices.DeleteFunc(s.waiting[ch], func(c chan struct{}) bool { return c == confirmed })
	if len(s.waiting[ch]) == 0 {
		delete(s.waiting, ch)
	}
	s.mu.Unlock()
	return err
}

// confirm releases the subscribe calls waiting for ch.
func (s *subscriber) confirm(ch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.waiting[ch] {
		close(c)
	}
	delete(s.waiting, ch)
}

// unsubscribe removes ch.
func (s *subscriber) unsubscribe(ch string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.channels, ch)
	if s.conn == nil {
		return nil
	}
	return s.sendLocked("UNSUBSCRIBE", ch)
}

// close ends the connection, and returns once the reader has stopped
// and closed out.
func (s *subscriber) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		if s.conn != nil {
			_ = s.conn.Close()
			s.conn = nil
		}
	}
	s.mu.Unlock()
	<-s.stopped
}

// sendLocked writes one command of channels; a connection that fails is
// closed, for the reader to make another. s.mu is held.
func (s *subscriber) sendLocked(cmd string, channels ...string) error {
	args := make([]any, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	err := s.conn.Send(cmd, args...)
	if err == nil {
		err = s.conn.Flush()
	}
	if err != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	return err
}

// connectLocked dials and subscribes to every channel. s.mu is held.
func (s *subscriber) connectLocked(ctx context.Context) error {
	conn, err := s.r.dial(ctx)
	if err != nil {
		return err
	}
	s.conn = conn
	if len(s.channels) > 0 {
		all := make([]string, 0, len(s.channels))
		for ch := range s.channels {
			all = append(all, ch)
		}
		if err := s.sendLocked("SUBSCRIBE", all...); err != nil {
			return err
		}
	}
	return nil
}

// current is the connection to read, made if there is none; nil, nil
// when there is none and no channel to subscribe to; nil with
// errSubscriberClosed once closed.
func (s *subscriber) current() (redis.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSubscriberClosed
	}
	if s.conn == nil && len(s.channels) == 0 {
		return nil, nil
	}
	if s.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.r.timeout)
		defer cancel()
		if err := s.connectLocked(ctx); err != nil {
			return nil, err
		}
	}
	return s.conn, nil
}

// drop closes conn, if it is still the connection, so that the next
// current makes another.
func (s *subscriber) drop(conn redis.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == conn {
		s.conn = nil
	}
	_ = conn.Close()
}

// run reads from one connection after another until close. A connection
// that fails is made again at once, then every retryEvery (or as soon as
// a subscribe makes one) while Redis is away.
func (s *subscriber) run() {
	defer close(s.stopped)
	defer close(s.out)
	down := false // logged once per outage
	for {
		conn, err := s.current()
		if errors.Is(err, errSubscriberClosed) {
			return
		}
		if conn == nil && err == nil { // nothing to listen to until a subscribe
			select {
			case <-s.done:
				return
			case <-s.wake:
			}
			continue
		}
		wait := err != nil
		if err == nil {
			if down {
				s.log.Debug("Redis pub/sub: connected again; subscriptions renewed")
				down = false
			}
			err = s.read(conn)
			s.drop(conn)
		}
		select {
		case <-s.done:
			return
		default:
		}
		if !down {
			s.log.Debug("Redis pub/sub: connection lost; connecting again", "err", s.red.String(err.Error()))
			down = true
		}
		if !wait {
			continue
		}
		select {
		case <-s.done:
			return
		case <-s.wake:
		case <-time.After(retryEvery):
		}
	}
}

// read hands on the messages of conn until it fails, pinging it
// meanwhile.
func (s *subscriber) read(conn redis.Conn) error {
	stop := make(chan struct{})
	defer close(stop)
	go s.ping(conn, stop)
	for {
		reply, err := redis.ReceiveWithTimeout(conn, s.pingEvery+s.pingWait)
		if err != nil {
			return err
		}
		kind, m := readPush(reply)
		switch kind {
		case "subscribe":
			s.confirm(m.channel)
		case "message":
			if !s.deliver(m) {
				return errSubscriberClosed
			}
		}
	}
}

// ping sends PING on conn every pingEvery until stop.
func (s *subscriber) ping(conn redis.Conn, stop <-chan struct{}) {
	t := time.NewTicker(s.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.conn == conn {
			if err := conn.Send("PING"); err == nil {
				_ = conn.Flush() // a failure fails the read too
			}
		}
		s.mu.Unlock()
	}
}

// deliver passes m on, waiting at most subDeliverMax for room; it
// reports false once the subscriber is closed.
func (s *subscriber) deliver(m message) bool {
	select {
	case s.out <- m:
		return true
	default:
	}
	t := time.NewTimer(subDeliverMax)
	defer t.Stop()
	select {
	case s.out <- m:
	case <-t.C:
		s.log.Debug("Redis pub/sub: dropping a message; its listeners did not take the ones before", "channel", m.channel)
	case <-s.done:
		return false
	}
	return true
}

// readPush reads what Redis pushes to a subscribed connection: its kind
// ("message", "subscribe", "unsubscribe", "pong"), and the channel and
// payload of a message (the channel alone of a subscription). A reply of
// another shape has no kind.
func readPush(reply any) (kind string, m message) {
	parts, ok := reply.([]any)
	if !ok || len(parts) == 0 {
		return "", message{}
	}
	k, _ := parts[0].([]byte)
	kind = string(k)
	if len(parts) > 1 {
		ch, _ := parts[1].([]byte)
		m.channel = string(ch)
	}
	switch kind {
	case "message":
		payload, isBulk := parts[len(parts)-1].([]byte)
		if len(parts) != 3 || !isBulk {
			return "", message{}
		}
		m.payload = payload
	case "subscribe", "unsubscribe":
		if len(parts) != 3 {
			return "", message{}
		}
	}
	return kind, m
}
