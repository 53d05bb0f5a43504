package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Shared values (blobs) are what one replica made and the others may
// reuse: a server's manifest, the search index of a catalog. Each is
// named by its kind and a digest of what it was made from, so a value is
// never overwritten by one for another catalog: a changed catalog has
// another digest, and the value of the old one expires after the TTL.
//
// A value is stored as the SHA-256 of the data followed by the data, and
// checked when read back: a truncated or altered value is refused, as if
// absent. Reading a value renews its TTL.

// ErrTooLarge is returned by PutBlob for a value over the size bound, and
// by GetBlob for a stored value over it.
var ErrTooLarge = errors.New("cluster: value over toolsearch.cluster.maxBlobBytes")

// GetBlob returns the shared value of kind and digest, or nil, nil when
// there is none (or it was refused as altered).
func (c *Cluster) GetBlob(ctx context.Context, kind, digest string) ([]byte, error) {
	key, err := c.blobKey(kind, digest)
	if err != nil {
		return nil, err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var get interface{ Result() (string, error) }
	_, perr := c.rdb.Pipelined(cctx, func(p redisPipe) error {
		// The range is inclusive: one byte past the bound tells a value
		// that is too large.
		get = p.GetRange(cctx, key, 0, c.maxBlob+sha256.Size)
		p.PExpire(cctx, key, c.ttl)
		return nil
	})
	s, err := get.Result()
	if err == nil {
		err = perr
	}
	if err = c.check(cctx, err); err != nil {
		return nil, err
	}
	if s == "" {
		c.stats.blobMisses.Add(1)
		return nil, nil
	}
	if int64(len(s)) > c.maxBlob+sha256.Size {
		return nil, fmt.Errorf("%w: %s %s", ErrTooLarge, kind, digest)
	}
	data := []byte(s)
	if len(data) < sha256.Size {
		c.log.Warn("ignoring a shared value that is too short to be one", "kind", kind, "digest", digest)
		return nil, nil
	}
	sum, body := data[:sha256.Size], data[sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		c.log.Warn("ignoring a shared value whose checksum does not match (altered or truncated)", "kind", kind, "digest", digest)
		return nil, nil
	}
	c.stats.blobHits.Add(1)
	return body, nil
}

// PutBlob stores data as the shared value of kind and digest, for the TTL.
func (c *Cluster) PutBlob(ctx context.Context, kind, digest string, data []byte) error {
	key, val, err := c.blobValue(kind, digest, data)
	if err != nil {
		return err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.check(cctx, c.rdb.Set(cctx, key, val, c.ttl).Err()); err != nil {
		return err
	}
	c.stats.blobPuts.Add(1)
	return nil
}

// swapScript sets KEYS[1] to ARGV[2] (for ARGV[3] ms) if the value there
// starts with the checksum ARGV[1], or is absent when ARGV[1] is empty;
// it returns 1 when it did.
var swapScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if cur then return 0 end
elseif not cur or string.sub(cur, 1, 32) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// SwapBlob stores data as the shared value of kind and digest only if the
// value there is still old (nil: none), as GetBlob returned it: a replica
// that read, changed and writes back a value loses no other replica's
// write made meanwhile. swapped is false when there was one; read again
// and retry.
func (c *Cluster) SwapBlob(ctx context.Context, kind, digest string, old, data []byte) (swapped bool, err error) {
	key, val, err := c.blobValue(kind, digest, data)
	if err != nil {
		return false, err
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	var want []byte
	if old != nil {
		sum := sha256.Sum256(old)
		want = sum[:]
	}
	n, err := swapScript.Run(cctx, c.rdb, []string{key}, want, val, c.ttl.Milliseconds()).Int()
	if err = c.check(cctx, err); err != nil {
		return false, err
	}
	if n == 1 {
		c.stats.blobPuts.Add(1)
	}
	return n == 1, nil
}

// blobValue is the key of the shared value of kind and digest and what
// is stored there for data: its checksum, then data. A value larger
// than the bound is refused.
func (c *Cluster) blobValue(kind, digest string, data []byte) (key string, val []byte, err error) {
	key, err = c.blobKey(kind, digest)
	if err != nil {
		return "", nil, err
	}
	if int64(len(data)) > c.maxBlob {
		return "", nil, fmt.Errorf("%w: %s of %d bytes (the bound is %d)", ErrTooLarge, kind, len(data), c.maxBlob)
	}
	sum := sha256.Sum256(data)
	val = make([]byte, 0, len(sum)+len(data))
	return key, append(append(val, sum[:]...), data...), nil
}

// blobKey names a shared value. Kinds and digests are the gateway's own
// words, never a client's; they are checked all the same, so that no
// value can name a key outside its kind.
func (c *Cluster) blobKey(kind, digest string) (string, error) {
	if err := checkNames(kind, digest); err != nil {
		return "", err
	}
	return c.key("blob", kind, digest), nil
}

// checkNames checks the parts of a key's name: each non-empty, short, and
// without a separator, a space or a brace.
func checkNames(parts ...string) error {
	for _, part := range parts {
		if part == "" || len(part) > 200 || strings.ContainsAny(part, ": \t\r\n{}") {
			return fmt.Errorf("cluster: %q cannot name a shared value", part)
		}
	}
	return nil
}
