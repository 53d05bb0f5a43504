package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// A request that only one replica can serve (it holds what the request
// needs: a call waiting for its client's answer) reaches it from whichever
// replica received it, over pub/sub: the replica that can serve it
// listens (Answer) on P:<topic>:<hashed key> for as long as it can; the
// one that received it (Ask) listens on a channel of its own for the
// answer, P:<topic>:<hashed key>:<nonce>, then publishes the request with
// that nonce. Both are sealed with the key, which the requester must know
// (the held call's requestState, given to its client only): a replica
// without it can neither read a request nor answer one.

// Ask sends req to the replica answering topic for key, and waits for its
// answer until ctx ends. ok is false when no replica answers for key.
func (c *Cluster) Ask(ctx context.Context, topic, key string, req []byte) (resp []byte, ok bool, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	ch := c.key(topic, sessionName(key))
	replies, stop, err := c.subscribe(ctx, key, ch+":"+nonce)
	if err != nil {
		return nil, false, err
	}
	defer stop()
	n, err := c.publish(ctx, key, ch, append([]byte(nonce+":"), req...))
	if err != nil || n == 0 {
		return nil, false, err
	}
	select {
	case resp := <-replies:
		return resp, true, nil
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

// Answer serves the requests Ask sends for topic and key, each with
// serve in a goroutine of its own, until stop is called.
func (c *Cluster) Answer(ctx context.Context, topic, key string, serve func(ctx context.Context, req []byte) []byte) (stop func(), err error) {
	ch := c.key(topic, sessionName(key))
	msgs, unsubscribe, err := c.subscribe(ctx, key, ch)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case m := <-msgs:
				nonce, req, found := strings.Cut(string(m), ":")
				if !found || len(nonce) != 24 {
					continue
				}
				go func() {
					resp := serve(context.Background(), []byte(req))
					pctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
					defer cancel()
					if _, err := c.publish(pctx, key, ch+":"+nonce, resp); err != nil {
						c.log.Debug("could not send an answer to the replica that asked", "topic", topic, "err", err)
					}
				}()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			unsubscribe()
		})
	}, nil
}

// PutTemp stores a small value under kind and key for ttl; GetTemp reads
// it (nil when there is none), DelTemp removes it. The key is hashed, and
// the value sealed with it: what is kept names nothing a client sent.
func (c *Cluster) PutTemp(ctx context.Context, kind, key string, value []byte, ttl time.Duration) error {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	k := c.key("temp", kind, sessionName(key))
	_, err = c.rdb.do(cctx, "SET", setArgs(k, seal(key, k, value), ttl)...)
	return c.check(cctx, err)
}

// GetTemp returns the value PutTemp stored, nil when there is none or it
// does not open (altered, or moved from another key).
func (c *Cluster) GetTemp(ctx context.Context, kind, key string) ([]byte, error) {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	k := c.key("temp", kind, sessionName(key))
	sealed, err := redis.Bytes(c.rdb.do(cctx, "GETRANGE", k, 0, maxSessionBytes))
	if err = c.check(cctx, err); err != nil || len(sealed) == 0 {
		return nil, err
	}
	data, err := unseal(key, k, sealed)
	if err != nil {
		c.log.Warn("refusing a shared value that does not open for its key (altered or forged)", "kind", kind)
		return nil, nil
	}
	return data, nil
}

// DelTemp removes what PutTemp stored.
func (c *Cluster) DelTemp(ctx context.Context, kind, key string) error {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = c.rdb.do(cctx, "DEL", c.key("temp", kind, sessionName(key)))
	return c.check(cctx, err)
}
