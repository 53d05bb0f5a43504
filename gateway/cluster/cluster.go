// Package cluster is what the replicas of one toolsearch service share,
// through Redis (or Valkey): the catalog and search index their servers
// make, by content digest, so that a replica that starts answers at once;
// request rates and the number of open sessions, counted for the whole
// service rather than per replica; the state of each MCP session, so that
// another replica takes it over when the one holding it dies, and the
// messages for a session's event stream held by another replica; and
// whether Redis can be reached.
//
// Redis is a shared cache and a set of counters here, never the only copy
// of anything: when it cannot be reached, every operation fails at once
// with ErrDown (no request waits on a dead server), the gateway serves from
// its local state, and the Cluster logs the outage once and the return
// once. A watcher pings Redis every second and rejoins as soon as it
// answers.
//
// The keys, under the configured prefix P:
//
//	P:blob:<kind>:<digest>   a shared value: a 32-byte HMAC-SHA256 tag under the cluster key, then the data (blobs.go)
//	P:rate:<bucket>          a rate bucket: its theoretical arrival time in µs (GCRA)
//	P:sessions               the open sessions: a sorted set of leases, scored by expiry (ms)
//	P:session:<name>         one MCP session's saved state, sealed with its id (sessionstate.go)
//	P:stream:<name>          a pub/sub channel: messages for one session's event stream (streams.go)
//	P:lease:<kind>:<name>    who does a piece of work for every replica, or "done" (enrich.go)
//	P:spend:<kind>:<day>     what the replicas spent on a UTC day: tools, tokens (enrich.go)
//
// docs/scale.md says what is shared, what stays per replica, and how each
// failure behaves.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/redact"
)

// ErrDown is returned, at once, by every operation while Redis cannot be
// reached.
var ErrDown = errors.New("cluster: Redis is unreachable")

// How often the watcher pings Redis, and how long one command may take.
var (
	pingEvery      = time.Second
	commandTimeout = 750 * time.Millisecond
)

// Cluster is one replica's connection to the state it shares. Make it with
// Open, run its watcher with Run, and Close it at the end. Its methods are
// safe for concurrent use.
type Cluster struct {
	rdb     *redisClient
	prefix  string
	replica string
	ttl     time.Duration
	maxBlob int64
	log     *slog.Logger
	red     *redact.Redactor
	addr    string // the URL without its password, for logs
	owner   string // names this process in the leases it takes (enrich.go)
	// valueKey is the cluster key shared values are authenticated
	// under (blobs.go); empty: none are shared.
	valueKey     []byte
	refusedKinds sync.Map // the kinds of which a refused value was logged

	up      atomic.Bool
	mu      sync.Mutex
	since   time.Time
	lastErr string
	onMu    sync.Mutex
	on      []func(up bool)

	leases  leaseTable // the sessions this replica holds (sessions.go)
	streams streamHub  // the event streams it holds (streams.go)
	stats   stats
}

// Health is what /healthz says of the cluster.
type Health struct {
	// Replica is this replica's name.
	Replica string `json:"replica"`
	// Redis is "up" or "down".
	Redis string `json:"redis"`
	// Since is when Redis last went up or down.
	Since time.Time `json:"since"`
	// Error is why Redis is down (secrets hidden); empty while it is up.
	Error string `json:"error,omitempty"`
	// Addr is the Redis URL, its password hidden.
	Addr string `json:"addr"`
}

// Open connects to the Redis of cfg and checks that it answers. A Redis
// that does not answer yet is not an error: the Cluster starts down, says
// so once, and joins when it answers. A URL that cannot be read is.
func Open(ctx context.Context, cfg config.Cluster, log *slog.Logger) (*Cluster, error) {
	if !cfg.On() {
		return nil, errors.New("cluster: no Redis URL is configured (toolsearch.cluster.redis)")
	}
	if cfg.KeyProblem != nil {
		return nil, fmt.Errorf("cluster: %w", cfg.KeyProblem)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	target, err := parseRedisURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("cluster: toolsearch.cluster.redis %s: %s", cfg.RedisRedacted(), redact.New(secretsOf(cfg)...).String(err.Error()))
	}
	if target.password == "" && cfg.Password != "" {
		target.password = cfg.Password
	}
	if cfg.CA != "" {
		if target.tls == nil {
			return nil, fmt.Errorf("cluster: toolsearch.cluster.ca %s is for a rediss:// (TLS) URL", cfg.CA)
		}
		pool, err := loadCA(cfg.CA)
		if err != nil {
			return nil, fmt.Errorf("cluster: toolsearch.cluster.ca: %w", err)
		}
		target.tls.RootCAs = pool
	}
	c := &Cluster{
		rdb: newRedisClient(target, commandTimeout), prefix: cfg.Prefix, replica: cfg.Replica, ttl: cfg.TTL, maxBlob: cfg.MaxBlobBytes,
		log: log.With("replica", cfg.Replica), red: redact.New(secretsOf(cfg)...), addr: cfg.RedisRedacted(),
		owner: newOwner(cfg.Replica), valueKey: []byte(cfg.Key),
	}
	if c.prefix == "" {
		c.prefix = config.DefaultClusterPrefix
	}
	if c.ttl <= 0 {
		c.ttl = config.DefaultClusterTTL
	}
	if c.maxBlob <= 0 {
		c.maxBlob = config.DefaultClusterMaxBlobBytes
	}
	c.leases.m = map[string]struct{}{}
	c.since = time.Now()
	for _, w := range cfg.Warnings() {
		c.log.Warn(w)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*commandTimeout)
	defer cancel()
	if _, err := c.rdb.do(pctx, "PING"); err != nil {
		c.lastErr = c.red.String(err.Error())
		c.log.Warn("Redis does not answer; this replica serves from its local state until it does",
			"redis", c.addr, "err", c.lastErr)
	} else {
		c.up.Store(true)
		c.log.Info("sharing state with the other replicas through Redis", "redis", c.addr, "prefix", c.prefix)
	}
	return c, nil
}

// secretsOf is what logs and errors about Redis must not show.
func secretsOf(cfg config.Cluster) []string {
	c := &config.Config{}
	c.Gateway.Cluster = cfg
	return c.Secrets()
}

// Replica is this replica's name (toolsearch.cluster.replica, or the host
// name).
func (c *Cluster) Replica() string { return c.replica }

// Up reports whether Redis answered last time it was asked.
func (c *Cluster) Up() bool { return c.up.Load() }

// Health says whether Redis is up, since when and why not.
func (c *Cluster) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := Health{Replica: c.replica, Redis: "down", Since: c.since, Addr: c.addr}
	if c.up.Load() {
		h.Redis = "up"
	} else {
		h.Error = c.lastErr
	}
	return h
}

// Status is Health, as /healthz shows it.
func (c *Cluster) Status() any { return c.Health() }

// OnChange registers f, called (in its own goroutine) each time Redis goes
// down or comes back. A gateway uses the return to write again what a
// restarted Redis lost.
func (c *Cluster) OnChange(f func(up bool)) {
	c.onMu.Lock()
	c.on = append(c.on, f)
	c.onMu.Unlock()
}

// Run pings Redis every second until ctx ends, marking it up or down.
func (c *Cluster) Run(ctx context.Context) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, commandTimeout)
		_, err := c.rdb.do(pctx, "PING")
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.markDown(err)
			continue
		}
		if c.markUp() {
			c.refreshLeases(ctx) // a restarted Redis forgot them (sessions.go)
		} else if c.leases.due(time.Now()) {
			c.refreshLeases(ctx)
		}
	}
}

// Close closes the connections to Redis.
func (c *Cluster) Close() error {
	c.closeStreams()
	return c.rdb.close()
}

// key is prefix:parts...
func (c *Cluster) key(parts ...string) string {
	return c.prefix + ":" + strings.Join(parts, ":")
}

// ready returns ErrDown at once while Redis is down, and a context that
// bounds one command otherwise.
func (c *Cluster) ready(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if !c.up.Load() {
		return nil, nil, ErrDown
	}
	cctx, cancel := context.WithTimeout(ctx, commandTimeout)
	return cctx, cancel, nil
}

// check classifies the error of a command: nil is no failure; an error
// Redis answered with is the command's own; any other (connection
// refused, timeout, a closed connection) marks Redis down and becomes
// ErrDown.
func (c *Cluster) check(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return err // the caller gave up
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !isConnError(err) {
		return fmt.Errorf("cluster: Redis refused: %s", c.red.String(err.Error()))
	}
	c.markDown(err)
	return fmt.Errorf("%w: %s", ErrDown, c.red.String(err.Error()))
}

func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "LOADING")
}

// markDown records that Redis failed; the first failure of an outage is
// logged, the others are not.
func (c *Cluster) markDown(err error) {
	msg := c.red.String(err.Error())
	c.mu.Lock()
	c.lastErr = msg
	was := c.up.Swap(false)
	if was {
		c.since = time.Now()
	}
	c.mu.Unlock()
	if was {
		c.stats.outages.Add(1)
		c.log.Warn("Redis is unreachable; this replica serves from its local state (limits and session caps count per replica) until it returns",
			"redis", c.addr, "err", msg)
		c.notify(false)
	}
}

// markUp records that Redis answered; it reports whether it was down.
func (c *Cluster) markUp() bool {
	c.mu.Lock()
	was := c.up.Swap(true)
	if !was {
		c.since = time.Now()
		c.lastErr = ""
	}
	c.mu.Unlock()
	if !was {
		c.log.Info("Redis is reachable again; sharing state with the other replicas", "redis", c.addr)
		c.notify(true)
	}
	return !was
}

func (c *Cluster) notify(up bool) {
	c.onMu.Lock()
	fs := append([]func(bool){}, c.on...)
	c.onMu.Unlock()
	for _, f := range fs {
		go f(up)
	}
}
