package config

// The cluster settings: many gateway replicas serving one service share
// state through Redis (or Valkey). Under the "toolsearch" key:
//
//	"cluster": {
//	  "redis": "rediss://:${REDIS_PASSWORD}@redis.internal:6379/0", // redis:// or rediss:// (TLS)
//	  "ca": "/etc/toolsearch/redis-ca.pem", // rediss:// only: the CAs to trust, instead of the system's
//	  "prefix": "toolsearch",     // every key starts with prefix + ":"
//	  "replica": "",              // this replica's name; "" is the host name
//	  "ttl": "24h",               // how long a shared catalog, index or hint file lives
//	  "maxBlobBytes": 67108864,   // the largest value one replica writes
//	  "key": "${TOOLSEARCH_CLUSTER_KEY}" // authenticates shared values; a ${VAR} reference only
//	}
//
// The password comes from the URL, or else from $TOOLSEARCH_REDIS_PASSWORD;
// it is a secret (Config.Secrets) and never shown. The cluster key comes
// from the variable "key" names, or else from $TOOLSEARCH_CLUSTER_KEY: it
// is never written in the file, never sent to Redis, and it is a secret
// too. Without it the replicas share no manifest, index, hints or learned
// usage (Cluster.Warnings says why). docs/scale.md says what is shared and
// what each replica keeps to itself.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// Defaults of the cluster settings.
const (
	DefaultClusterPrefix       = "toolsearch"
	DefaultClusterTTL          = 24 * time.Hour
	DefaultClusterMaxBlobBytes = 64 << 20
	// RedisPasswordEnv names the variable the Redis password is read from
	// when the URL carries none.
	RedisPasswordEnv = "TOOLSEARCH_REDIS_PASSWORD"
	// ClusterKeyEnv names the variable the cluster key is read from when
	// toolsearch.cluster.key names none.
	ClusterKeyEnv = "TOOLSEARCH_CLUSTER_KEY"
	// MinClusterKeyLength is the shortest cluster key accepted.
	MinClusterKeyLength = 32
)

// Cluster configures the state replicas share (toolsearch.cluster). The
// zero value, with Redis empty, is a gateway on its own.
type Cluster struct {
	// Redis is the server's URL, redis:// or rediss:// (TLS), with its
	// password when it has one. It is a secret: never print it (use
	// RedisRedacted).
	Redis string
	// Password is the password read from $TOOLSEARCH_REDIS_PASSWORD when
	// the URL carries none ("" otherwise). It is a secret.
	Password string
	// CA is a PEM file of the certificate authorities a rediss:// server's
	// certificate is checked against, instead of the system's ("" for the
	// system's). Only with a rediss:// URL.
	CA string
	// Prefix starts every key the gateway writes, before ":".
	Prefix string
	// Replica names this replica in logs, metrics and /healthz.
	Replica string
	// TTL bounds how long a shared value lives after it was last written.
	TTL time.Duration
	// MaxBlobBytes bounds a value written or read back (a catalog or an
	// index).
	MaxBlobBytes int64
	// Key authenticates the values replicas share (manifests, the search
	// index, hints, learned usage): every replica of a service has the
	// same one. "" shares none of them. It is a secret, and never sent to
	// Redis: only values derived from it are.
	Key string
	// KeyProblem is why the key could not be read: the variable the file
	// names is not set. It is not an error of the file, so that a reload
	// after serve has removed the variable from its environment still
	// reads it; serve refuses to start with it.
	KeyProblem error
}

// Warnings says what the cluster settings leave open to anyone who can
// write to Redis, one sentence each; nil when there is nothing to say (or
// no cluster). serve logs them at start and --check prints them.
func (c Cluster) Warnings() []string {
	if !c.On() {
		return nil
	}
	var out []string
	if c.Key == "" {
		out = append(out, "no cluster key (toolsearch.cluster.key, or $"+ClusterKeyEnv+"): manifests, the search index, "+
			"search hints and learned usage are not shared, since whoever can write to Redis would then control the tool "+
			"definitions and the ranking every replica serves; set the same random key of at least 32 characters on every replica to share them")
	}
	u, err := url.Parse(c.Redis)
	if err != nil {
		return out
	}
	_, hasPassword := u.User.Password()
	hasPassword = hasPassword || c.Password != ""
	switch {
	case u.Scheme != "rediss" && !hasPassword:
		out = append(out, "Redis is reached without TLS (redis://) and without a password: whoever reaches it can read and change "+
			"what the replicas share (session leases, rate buckets, enrichment leases and spend; the values a cluster key "+
			"authenticates are refused when altered, and sessions stay sealed); use rediss:// and a password")
	case u.Scheme != "rediss":
		out = append(out, "Redis is reached without TLS (redis://): its password and what the replicas share cross the network in clear; use rediss://")
	case !hasPassword:
		out = append(out, "Redis is reached without a password: whoever reaches it can read and change what the replicas share; "+
			"set one in the URL or in $"+RedisPasswordEnv)
	}
	return out
}

// On reports whether a cluster is configured.
func (c Cluster) On() bool { return c.Redis != "" }

// RedisRedacted is the Redis URL with its user's password hidden.
func (c Cluster) RedisRedacted() string {
	u, err := url.Parse(c.Redis)
	if err != nil {
		return "(a Redis URL that cannot be read)"
	}
	return u.Redacted()
}

// rawClusterTop is the JSON shape of the cluster settings, as they sit in
// the "toolsearch" object.
type rawClusterTop struct {
	Cluster *struct {
		Redis        string          `json:"redis"`
		CA           string          `json:"ca"`
		Prefix       *string         `json:"prefix"`
		Replica      string          `json:"replica"`
		TTL          json.RawMessage `json:"ttl"`
		MaxBlobBytes *int64          `json:"maxBlobBytes"`
		Key          *string         `json:"key"`
	} `json:"cluster"`
}

// parseCluster reads toolsearch.cluster from the top-level object.
func parseCluster(cfg *Config, top map[string]json.RawMessage, lookup func(string) (string, bool)) *Error {
	raw, ok := top["toolsearch"]
	if !ok || string(raw) == "null" {
		return nil
	}
	errAt := func(field string, err error) *Error { return &Error{Field: "toolsearch.cluster" + field, Err: err} }
	var rt rawClusterTop
	if err := json.Unmarshal(raw, &rt); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: "toolsearch." + te.Field, Err: fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value)}
		}
		return &Error{Field: "toolsearch", Err: fmt.Errorf("want an object: %w", err)}
	}
	rc := rt.Cluster
	if rc == nil {
		return nil
	}
	c := Cluster{Prefix: DefaultClusterPrefix, TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes}
	u, missing := Expand(strings.TrimSpace(rc.Redis), lookup)
	if len(missing) > 0 {
		return errAt(".redis", fmt.Errorf("${%s} is not set", missing[0]))
	}
	if u == "" {
		return errAt(".redis", errors.New(`want the Redis URL, such as "redis://127.0.0.1:6379/0"`))
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "redis" && pu.Scheme != "rediss") || pu.Host == "" {
		// As written: the expanded URL may hold the password.
		return errAt(".redis", fmt.Errorf("%q is not a redis:// or rediss:// URL with a host", rc.Redis))
	}
	if pu.RawQuery != "" {
		// The gateway's own timeouts and pool apply (cluster.Open).
		names := slices.Sorted(maps.Keys(pu.Query()))
		return errAt(".redis", fmt.Errorf("options in the URL (%s) are not read: write redis://host:port/db", strings.Join(names, ", ")))
	}
	c.Redis = u
	if _, has := pu.User.Password(); !has {
		if p, ok := lookup(RedisPasswordEnv); ok {
			c.Password = p
		}
	}
	if ca := strings.TrimSpace(rc.CA); ca != "" {
		if pu.Scheme != "rediss" {
			return errAt(".ca", fmt.Errorf("%q is for a rediss:// (TLS) URL; the URL is redis://, which does not use TLS", rc.CA))
		}
		c.CA = ExpandHome(ca)
	}
	if rc.Prefix != nil {
		p := strings.TrimSpace(*rc.Prefix)
		if p == "" || strings.ContainsAny(p, " \t\r\n{}") {
			return errAt(".prefix", fmt.Errorf("%q: want a non-empty prefix without spaces or braces", *rc.Prefix))
		}
		c.Prefix = p
	}
	c.Replica = strings.TrimSpace(rc.Replica)
	if c.Replica == "" {
		c.Replica, _ = os.Hostname()
	}
	if c.Replica == "" {
		c.Replica = "replica"
	}
	if strings.ContainsAny(c.Replica, " \t\r\n\"\\") || len(c.Replica) > 128 {
		return errAt(".replica", fmt.Errorf("%q: want a name of at most 128 characters without spaces or quotes", c.Replica))
	}
	d, err := ParseDuration(rc.TTL)
	if err != nil {
		return errAt(".ttl", err)
	}
	if d > 0 {
		if d < time.Minute {
			return errAt(".ttl", fmt.Errorf("%v is shorter than a minute", d))
		}
		c.TTL = d
	}
	if rc.MaxBlobBytes != nil {
		if *rc.MaxBlobBytes < 1<<20 || *rc.MaxBlobBytes > 512<<20 {
			return errAt(".maxBlobBytes", fmt.Errorf("%d is out of range 1 MiB..512 MiB", *rc.MaxBlobBytes))
		}
		c.MaxBlobBytes = *rc.MaxBlobBytes
	}
	key, field, err := clusterKey(rc.Key, lookup)
	var unset *unsetKeyError
	switch {
	case errors.As(err, &unset):
		c.KeyProblem = errAt(field, err)
	case err != nil:
		return errAt(field, err)
	}
	c.Key = key
	cfg.Gateway.Cluster = c
	return nil
}

// clusterKey reads the cluster key: from the variable ref names (which must
// be a ${VAR} reference: the file is not the place for a secret), else
// from $TOOLSEARCH_CLUSTER_KEY; "" when neither is given. Errors never
// show the key.
func clusterKey(ref *string, lookup func(string) (string, bool)) (key, field string, err error) {
	field = ".key"
	if ref == nil {
		v, ok := lookup(ClusterKeyEnv)
		if !ok || v == "" {
			return "", "", nil
		}
		key, field = v, ".key ($"+ClusterKeyEnv+")"
	} else {
		r := strings.TrimSpace(*ref)
		if !strings.HasPrefix(r, "${") || !strings.HasSuffix(r, "}") || strings.Count(r, "${") != 1 || strings.Contains(r, ":-") {
			return "", field, fmt.Errorf("want a reference to the variable that holds the key, such as \"${%s}\", not the key itself", ClusterKeyEnv)
		}
		v, missing := Expand(r, lookup)
		if len(missing) > 0 {
			return "", field, &unsetKeyError{missing[0]}
		}
		if v == r {
			return "", field, fmt.Errorf("%q does not name a variable", r)
		}
		key = v
	}
	if n := len(strings.TrimSpace(key)); n < MinClusterKeyLength {
		return "", field, fmt.Errorf("the cluster key has %d characters; use at least %d (for example: openssl rand -hex 32)", n, MinClusterKeyLength)
	}
	return key, "", nil
}

// unsetKeyError: the variable toolsearch.cluster.key names is not set.
type unsetKeyError struct{ name string }

func (e *unsetKeyError) Error() string { return fmt.Sprintf("${%s} is not set", e.name) }
