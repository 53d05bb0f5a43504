package cluster

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The state of an MCP session (2025-11-25 and earlier), saved so that
// another replica can take the session over when the one that held it
// dies. A session id is a bearer credential: whoever presents it is the
// session. So the id itself is never written to Redis, and nothing Redis
// holds lets anyone make a request in the session:
//
//   - the key is P:session:<name>, name a SHA-256 of the id (in a domain
//     of its own, so no other key of the cluster shares it);
//   - the value is sealed with AES-256-GCM under a key derived from the id
//     (another SHA-256 domain), the key's name as additional data. Only a
//     replica that is shown the id can open it; a value altered, cut,
//     moved under another key or written by anyone without the id fails
//     to open and is refused (ErrBadSession), as if the session were
//     unknown.
//
// What a replica saves is the gateway's business (package gateway); this
// file only stores it.

// ErrBadSession is returned by LoadSession for a saved state that does not
// open: altered, truncated, or not made for this id.
var ErrBadSession = errors.New("cluster: the saved session state is not valid for this session id (altered or forged)")

// maxSessionBytes bounds one saved session state, written or read.
const maxSessionBytes = 1 << 20

// sessionName is the hashed id that names a session's keys.
func sessionName(id string) string {
	sum := sha256.Sum256([]byte("toolsearch session name\x00" + id))
	return hex.EncodeToString(sum[:16])
}

// sessionAEAD is the cipher that seals a session's state and messages.
func sessionAEAD(id string) cipher.AEAD {
	key := sha256.Sum256([]byte("toolsearch session key\x00" + id))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// seal encrypts data for the session id, bound to label.
func seal(id, label string, data []byte) []byte {
	aead := sessionAEAD(id)
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(data)+aead.Overhead())
	_, _ = rand.Read(out)
	return aead.Seal(out, out[:aead.NonceSize()], data, []byte(label))
}

// unseal decrypts what seal made for the session id and label.
func unseal(id, label string, sealed []byte) ([]byte, error) {
	aead := sessionAEAD(id)
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrBadSession
	}
	data, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(label))
	if err != nil {
		return nil, ErrBadSession
	}
	return data, nil
}

func (c *Cluster) sessionKey(id string) string { return c.key("session", sessionName(id)) }

// SaveSession stores the state of session id, for ttl (the sessions' idle
// timeout: a session no replica touches for that long is gone).
func (c *Cluster) SaveSession(ctx context.Context, id string, state []byte, ttl time.Duration) error {
	if id == "" {
		return errors.New("cluster: a session state needs a session id")
	}
	if len(state) > maxSessionBytes {
		return fmt.Errorf("cluster: a session state of %d bytes is over the bound of %d", len(state), maxSessionBytes)
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	key := c.sessionKey(id)
	_, err = c.rdb.do(cctx, "SET", setArgs(key, seal(id, key, state), ttl)...)
	if err := c.check(cctx, err); err != nil {
		return err
	}
	c.stats.sessionSaves.Add(1)
	return nil
}

// LoadSession returns the saved state of session id, nil, nil when there
// is none, and ErrBadSession when the value does not open.
func (c *Cluster) LoadSession(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	key := c.sessionKey(id)
	// One byte past the bound tells a value that is too large.
	sealed, err := redis.Bytes(c.rdb.do(cctx, "GETRANGE", key, 0, maxSessionBytes+64))
	if err = c.check(cctx, err); err != nil {
		return nil, err
	}
	if len(sealed) == 0 {
		return nil, nil
	}
	if len(sealed) > maxSessionBytes+64 {
		return nil, ErrBadSession
	}
	data, err := unseal(id, key, sealed)
	if err != nil {
		c.stats.sessionRefused.Add(1)
		c.log.Warn("refusing a saved session state that does not open for its session id (altered or forged)", "session", sessionName(id)[:12])
		return nil, err
	}
	c.stats.sessionLoads.Add(1)
	return data, nil
}

// TouchSession renews the TTL of session id's saved state.
func (c *Cluster) TouchSession(ctx context.Context, id string, ttl time.Duration) error {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	_, err = c.rdb.do(cctx, "PEXPIRE", c.sessionKey(id), ms(ttl))
	return c.check(cctx, err)
}

// DeleteSession removes session id's saved state and kept events
// (events.go), the session having ended, and tells the other replicas (P:ended), so that those holding it
// too (for its event stream) close it.
func (c *Cluster) DeleteSession(ctx context.Context, id string) error {
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	name := sessionName(id)
	ch := c.key("ended")
	msg := append([]byte(name+":"), seal(id, ch, []byte(name))...)
	_, err = c.rdb.pipeline(cctx, cmd("DEL", c.sessionKey(id)), cmd("PUBLISH", ch, msg))
	if err == nil {
		err = c.dropEvents(cctx, id)
	}
	return c.check(cctx, err)
}

// OnSessionEnded registers f, called for each session another replica
// ended (DeleteSession) with ended, which reports whether it was session
// id. The message names the session by its hash and proves it with the
// id's seal: one published by anyone without the id ends nothing.
func (c *Cluster) OnSessionEnded(f func(ended func(id string) bool)) {
	h := &c.streams
	h.mu.Lock()
	h.onEnded = append(h.onEnded, f)
	first := len(h.onEnded) == 1
	h.mu.Unlock()
	if first {
		c.ensureSubscribed(c.key("ended"))
	}
}

// endedCheck reads a P:ended message into the check OnSessionEnded's
// functions get.
func (c *Cluster) endedCheck(channel, payload string) func(id string) bool {
	name, sealed, ok := strings.Cut(payload, ":")
	return func(id string) bool {
		if !ok || sessionName(id) != name {
			return false
		}
		got, err := unseal(id, channel, []byte(sealed))
		return err == nil && string(got) == name
	}
}
