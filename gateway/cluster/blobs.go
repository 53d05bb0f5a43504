package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// tagSize is the length of a shared value's tag.
const tagSize = sha256.Size

// SharesValues reports whether this replica reads and writes shared values:
// whether a cluster key is configured.
func (c *Cluster) SharesValues() bool { return len(c.valueKey) > 0 }

// kindKey is the key the tags of kind's values are made with.
func (c *Cluster) kindKey(kind string) []byte {
	m := hmac.New(sha256.New, c.valueKey)
	m.Write([]byte("toolsearch shared value\x00" + kind))
	return m.Sum(nil)
}

// tag authenticates data as the value of kind stored at key.
func (c *Cluster) tag(kind, key string, data []byte) []byte {
	m := hmac.New(sha256.New, c.kindKey(kind))
	m.Write([]byte(key))
	m.Write([]byte{0})
	m.Write(data)
	return m.Sum(nil)
}

// refused counts a value that failed its tag, and logs the first of each
// kind: a Redis writer flooding forged values gets one line, not one a
// read.
func (c *Cluster) refused(kind, digest, why string) {
	c.stats.blobRefused.Add(1)
	if _, seen := c.refusedKinds.LoadOrStore(kind, true); seen {
		c.log.Debug("ignoring a shared value: "+why, "kind", kind, "digest", digest)
		return
	}
	c.log.Warn("ignoring a shared value: "+why+"; it was not written by a replica with this cluster key "+
		"(altered, forged, or written under another key); later ones are counted in toolsearch_cluster_shared_refused_total",
		"kind", kind, "digest", digest)
}

// Shared values (blobs) are what one replica made and the others may
// reuse: a server's manifest, the search index of a catalog, search hints,
// learned usage. Each is named by its kind and a digest of what it was
// made from, so a value is never overwritten by one for another catalog: a
// changed catalog has another digest, and the value of the old one
// expires after the TTL.
//
// A replica trusts these values: a manifest becomes the tools it serves,
// hints and usage steer its ranking. So each is authenticated under the
// cluster key (toolsearch.cluster.key), which every replica has and Redis
// never sees: the value stored is an HMAC-SHA256 tag, then the data. The
// tag's key is derived from the cluster key for the value's kind (an HMAC
// of the kind under the cluster key), and the tag covers the value's full
// Redis key name (prefix, kind, digest) and the data, so a value written
// by anyone without the cluster key, altered, cut short, or copied under
// another kind, digest or prefix fails its tag and is refused as if
// absent (counted, and logged once per kind). Without a cluster key
// nothing is shared: every operation fails with ErrNoKey. Reading a value
// renews its TTL.

// ErrNoKey is returned by GetBlob, PutBlob and SwapBlob when no cluster
// key is configured: shared values would not be authenticated.
var ErrNoKey = errors.New("cluster: shared values need a cluster key (toolsearch.cluster.key, or $" + config.ClusterKeyEnv + ")")

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
	if !c.SharesValues() {
		return nil, ErrNoKey
	}
	cctx, cancel, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	// The range is inclusive: one byte past the bound tells a value that
	// is too large.
	replies, err := c.rdb.pipeline(cctx,
		cmd("GETRANGE", key, 0, c.maxBlob+tagSize),
		cmd("PEXPIRE", key, ms(c.ttl)))
	var data []byte
	if err == nil {
		data, err = redis.Bytes(replies[0], nil)
	}
	if err = c.check(cctx, err); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		c.stats.blobMisses.Add(1)
		return nil, nil
	}
	if int64(len(data)) > c.maxBlob+tagSize {
		return nil, fmt.Errorf("%w: %s %s", ErrTooLarge, kind, digest)
	}
	if len(data) < tagSize {
		c.refused(kind, digest, "too short to hold its tag")
		return nil, nil
	}
	tag, body := data[:tagSize], data[tagSize:]
	if !hmac.Equal(tag, c.tag(kind, key, body)) {
		c.refused(kind, digest, "its tag does not match")
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
	_, err = c.rdb.do(cctx, "SET", setArgs(key, val, c.ttl)...)
	if err := c.check(cctx, err); err != nil {
		return err
	}
	c.stats.blobPuts.Add(1)
	return nil
}

// swapScript sets KEYS[1] to ARGV[2] (for ARGV[3] ms) if the value there
// starts with the tag ARGV[1], or is absent (or empty) when ARGV[1] is empty;
// it returns 1 when it did.
var swapScript = newScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if cur and cur ~= '' then return 0 end
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
		want = c.tag(kind, key, old)
	} else if want, err = c.forgedTag(cctx, kind, key); err != nil {
		return false, err
	}
	n, err := redis.Int(swapScript.run(cctx, c.rdb, []string{key}, want, val, c.ttl.Milliseconds()))
	if err = c.check(cctx, err); err != nil {
		return false, err
	}
	if n == 1 {
		c.stats.blobPuts.Add(1)
	}
	return n == 1, nil
}

// forgedTag returns the first tagSize bytes of the value at key when it
// fails its tag, nil when there is none or it is genuine. GetBlob reads a
// forged value as absent, so a swap over "absent" must replace it:
// otherwise a forgery would block every write of its key until it
// expired.
func (c *Cluster) forgedTag(ctx context.Context, kind, key string) ([]byte, error) {
	data, err := redis.Bytes(c.rdb.do(ctx, "GETRANGE", key, 0, c.maxBlob+tagSize))
	if err = c.check(ctx, err); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) >= tagSize && int64(len(data)) <= c.maxBlob+tagSize && hmac.Equal(data[:tagSize], c.tag(kind, key, data[tagSize:])) {
		return nil, nil
	}
	return data[:min(len(data), tagSize)], nil // what the script compares
}

// blobValue is the key of the shared value of kind and digest and what
// is stored there for data: its tag, then data. A value larger than the
// bound is refused.
func (c *Cluster) blobValue(kind, digest string, data []byte) (key string, val []byte, err error) {
	key, err = c.blobKey(kind, digest)
	if err != nil {
		return "", nil, err
	}
	if !c.SharesValues() {
		return "", nil, ErrNoKey
	}
	if int64(len(data)) > c.maxBlob {
		return "", nil, fmt.Errorf("%w: %s of %d bytes (the bound is %d)", ErrTooLarge, kind, len(data), c.maxBlob)
	}
	val = make([]byte, 0, tagSize+len(data))
	return key, append(append(val, c.tag(kind, key, data)...), data...), nil
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
