package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The cluster speaks RESP2 to one Redis (or Valkey) through redigo: a
// bounded pool of connections for commands, pipelines and scripts, and a
// connection of its own for pub/sub (pubsub.go). This file is what redigo
// leaves to its user: reading the URL, dialling (TLS included) within one
// timeout, checking an idle connection before it is used again, and
// scripts that take any number of keys.

// redisTarget is where Redis is and how to log in, as the URL says.
type redisTarget struct {
	addr     string // host:port
	username string // an ACL user; "" is the default user
	password string
	db       int
	tls      *tls.Config // nil: plain TCP (redis://)
}

// parseRedisURL reads redis://[[user]:password@]host[:port][/db], or
// rediss:// for TLS (1.2 or newer). The host defaults to localhost, the
// port to 6379, the database to 0. Its errors never quote the URL, which
// may hold the password.
func parseRedisURL(raw string) (redisTarget, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return redisTarget{}, fmt.Errorf("not a URL: %w", err)
	}
	var t redisTarget
	switch u.Scheme {
	case "redis":
	case "rediss":
		t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return redisTarget{}, fmt.Errorf("the scheme %q is not redis:// or rediss://", u.Scheme)
	}
	if u.Opaque != "" {
		return redisTarget{}, errors.New("want redis://host:port/db, with the slashes")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "6379"
	}
	t.addr = net.JoinHostPort(host, port)
	if t.tls != nil {
		t.tls.ServerName = host
	}
	if u.User != nil {
		t.username = u.User.Username()
		t.password, _ = u.User.Password()
	}
	switch parts := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' }); len(parts) {
	case 0:
	case 1:
		db, err := strconv.Atoi(parts[0])
		if err != nil || db < 0 {
			return redisTarget{}, fmt.Errorf("the database %q is not a number of 0 or more", parts[0])
		}
		t.db = db
	default:
		return redisTarget{}, fmt.Errorf("the path %q is not /<database number>", u.Path)
	}
	if u.RawQuery != "" {
		names := slices.Sorted(maps.Keys(u.Query()))
		return redisTarget{}, fmt.Errorf("options in the URL (%s) are not read: timeouts and the pool are the gateway's own; write redis://host:port/db",
			strings.Join(names, ", "))
	}
	return t, nil
}

// redisClient is a bounded pool of connections to one Redis. It retries
// nothing: the caller falls back to its local state, and a retry would
// only double the wait.
type redisClient struct {
	target  redisTarget
	timeout time.Duration // to dial (TLS included), and to read or write one reply
	pool    *redis.Pool
}

// newRedisClient makes the pool for target: at most ten connections per
// CPU, a caller waiting (within its context) for one to be free; an idle
// connection is closed after 30 minutes, and one the server closed is
// not used again.
func newRedisClient(target redisTarget, timeout time.Duration) *redisClient {
	r := &redisClient{target: target, timeout: timeout}
	size := 10 * runtime.GOMAXPROCS(0)
	r.pool = &redis.Pool{
		DialContext: r.dial,
		TestOnBorrow: func(c redis.Conn, _ time.Time) error {
			if pc, ok := c.(*poolConn); ok {
				return connGone(pc.nc)
			}
			return nil
		},
		MaxIdle:     size,
		MaxActive:   size,
		Wait:        true,
		IdleTimeout: 30 * time.Minute,
	}
	return r
}

// poolConn is a connection and the network connection under it, which
// connGone looks at.
type poolConn struct {
	redis.ConnWithTimeout
	nc net.Conn
}

// dial opens a connection: TCP, and TLS for rediss://, within the
// timeout (and ctx), then AUTH and SELECT as the URL asks.
func (r *redisClient) dial(ctx context.Context) (redis.Conn, error) {
	var nc net.Conn
	d := &net.Dialer{Timeout: r.timeout, KeepAlive: 5 * time.Minute}
	dialNet := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var err error
		if r.target.tls != nil {
			nc, err = (&tls.Dialer{NetDialer: d, Config: r.target.tls}).DialContext(ctx, network, addr)
		} else {
			nc, err = d.DialContext(ctx, network, addr)
		}
		return nc, err
	}
	c, err := redis.DialContext(ctx, "tcp", r.target.addr,
		redis.DialContextFunc(dialNet),
		redis.DialReadTimeout(r.timeout), redis.DialWriteTimeout(r.timeout),
		redis.DialUsername(r.target.username), redis.DialPassword(r.target.password),
		redis.DialDatabase(r.target.db))
	if err != nil {
		return nil, err
	}
	tc, ok := c.(redis.ConnWithTimeout)
	if !ok {
		_ = c.Close()
		return nil, errors.New("cluster: the Redis connection takes no timeout")
	}
	return &poolConn{ConnWithTimeout: tc, nc: nc}, nil
}

// timeLeft is how long a reply may take: the client's timeout, or less
// when ctx's deadline is nearer. ctx bounds a command by this deadline on
// the socket, not by a goroutine watching it: a caller that cancels waits
// for the reply all the same (no longer than the timeout).
func (r *redisClient) timeLeft(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	d := r.timeout
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		d = min(d, left)
	}
	return d, nil
}

// conn takes a connection from the pool, and says how long its reply
// may take.
func (r *redisClient) conn(ctx context.Context) (redis.Conn, time.Duration, error) {
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return nil, 0, err
	}
	wait, err := r.timeLeft(ctx)
	if err != nil {
		_ = conn.Close()
		return nil, 0, err
	}
	return conn, wait, nil
}

// do sends one command on a pooled connection and returns its reply,
// within ctx.
func (r *redisClient) do(ctx context.Context, cmd string, args ...any) (any, error) {
	conn, wait, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redis.DoWithTimeout(conn, wait, cmd, args...)
}

// command is one command of a pipeline.
type command struct {
	name string
	args []any
}

func cmd(name string, args ...any) command { return command{name: name, args: args} }

// pipeline sends cmds at once on one connection and returns their
// replies, in order; the first reply that is an error is the error.
func (r *redisClient) pipeline(ctx context.Context, cmds ...command) ([]any, error) {
	conn, wait, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for _, c := range cmds {
		if err := conn.Send(c.name, c.args...); err != nil {
			return nil, err
		}
	}
	replies, err := redis.Values(redis.DoWithTimeout(conn, wait, ""))
	if err != nil {
		return nil, err
	}
	if len(replies) != len(cmds) {
		return nil, fmt.Errorf("cluster: Redis answered %d replies to %d commands", len(replies), len(cmds))
	}
	for _, reply := range replies {
		if e, ok := reply.(redis.Error); ok {
			return replies, e
		}
	}
	return replies, nil
}

// close closes the pool's connections.
func (r *redisClient) close() error { return r.pool.Close() }

// script is a Lua script, run with EVALSHA, or with EVAL when Redis
// answers NOSCRIPT (its first run, or after a restart).
type script struct{ s *redis.Script }

// newScript makes the script of src, which takes any number of keys.
func newScript(src string) script { return script{s: redis.NewScript(-1, src)} }

// run runs the script with keys and args on a pooled connection, within
// ctx.
func (s script) run(ctx context.Context, r *redisClient, keys []string, args ...any) (any, error) {
	conn, wait, err := r.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	kv := make([]any, 0, 1+len(keys)+len(args))
	kv = append(kv, len(keys))
	for _, k := range keys {
		kv = append(kv, k)
	}
	return s.s.Do(timedConn{Conn: conn, wait: wait}, append(kv, args...)...)
}

// timedConn is a connection whose Do waits wait for its reply.
type timedConn struct {
	redis.Conn
	wait time.Duration
}

func (c timedConn) Do(cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, c.wait, cmd, args...)
}

// ms is a TTL as Redis's PX and PEXPIRE take it: whole milliseconds, at
// least one for a positive duration.
func ms(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

// setArgs are SET's arguments for value at key, expiring after ttl (never
// when ttl is not positive).
func setArgs(key string, value []byte, ttl time.Duration) []any {
	if ttl <= 0 {
		return []any{key, value}
	}
	return []any{key, value, "PX", ms(ttl)}
}
