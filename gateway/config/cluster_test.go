package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCluster(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		gw      string
		env     map[string]string
		want    Cluster // compared when wantErr is ""
		wantErr string  // substring of the error
	}{
		{name: "absent", gw: `{}`, want: Cluster{}},
		{name: "defaults", gw: `{"cluster": {"redis": "redis://127.0.0.1:6379/0", "replica": "r1"}}`,
			want: Cluster{Redis: "redis://127.0.0.1:6379/0", Prefix: DefaultClusterPrefix, Replica: "r1",
				TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes}},
		{name: "everything", gw: `{"cluster": {"redis": "rediss://:${PW}@redis.internal:6380/2", "prefix": "ts-prod",
			"replica": "pod-7", "ttl": "2h", "maxBlobBytes": 2097152}}`, env: map[string]string{"PW": "hunter2hunter2"},
			want: Cluster{Redis: "rediss://:hunter2hunter2@redis.internal:6380/2", Prefix: "ts-prod", Replica: "pod-7",
				TTL: 2 * time.Hour, MaxBlobBytes: 2 << 20}},
		{name: "password from the environment", gw: `{"cluster": {"redis": "redis://redis:6379", "replica": "a"}}`,
			env:  map[string]string{RedisPasswordEnv: "s3cret-pass"},
			want: Cluster{Redis: "redis://redis:6379", Password: "s3cret-pass", Prefix: DefaultClusterPrefix, Replica: "a", TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes}},
		{name: "the URL's password wins", gw: `{"cluster": {"redis": "redis://u:inurl-pass@redis:6379", "replica": "a"}}`,
			env:  map[string]string{RedisPasswordEnv: "s3cret-pass"},
			want: Cluster{Redis: "redis://u:inurl-pass@redis:6379", Prefix: DefaultClusterPrefix, Replica: "a", TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes}},
		{name: "a CA file", gw: `{"cluster": {"redis": "rediss://redis:6380", "ca": " /etc/ts/ca.pem ", "replica": "a"}}`,
			want: Cluster{Redis: "rediss://redis:6380", CA: "/etc/ts/ca.pem", Prefix: DefaultClusterPrefix, Replica: "a", TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes}},
		{name: "a CA without TLS", gw: `{"cluster": {"redis": "redis://redis:6379", "ca": "/etc/ts/ca.pem"}}`,
			wantErr: `"toolsearch.cluster.ca": "/etc/ts/ca.pem" is for a rediss:// (TLS) URL`},
		{name: "empty url", gw: `{"cluster": {"redis": ""}}`, wantErr: `"toolsearch.cluster.redis": want the Redis URL`},
		{name: "http url", gw: `{"cluster": {"redis": "http://redis:6379"}}`, wantErr: "not a redis:// or rediss:// URL"},
		{name: "no host", gw: `{"cluster": {"redis": "redis://"}}`, wantErr: "not a redis:// or rediss:// URL"},
		{name: "options in the URL", gw: `{"cluster": {"redis": "redis://:${PW}@r:1/0?pool_size=5&dial_timeout=1s"}}`,
			env: map[string]string{"PW": "hunter2hunter2"}, wantErr: `"toolsearch.cluster.redis": options in the URL (dial_timeout, pool_size) are not read`},
		{name: "unset variable", gw: `{"cluster": {"redis": "redis://:${NOPE}@r:1"}}`, wantErr: "${NOPE} is not set"},
		{name: "bad prefix", gw: `{"cluster": {"redis": "redis://r:1", "prefix": "a b"}}`, wantErr: "toolsearch.cluster.prefix"},
		{name: "empty prefix", gw: `{"cluster": {"redis": "redis://r:1", "prefix": ""}}`, wantErr: "toolsearch.cluster.prefix"},
		{name: "bad replica", gw: `{"cluster": {"redis": "redis://r:1", "replica": "a\"b"}}`, wantErr: "toolsearch.cluster.replica"},
		{name: "short ttl", gw: `{"cluster": {"redis": "redis://r:1", "ttl": "5s"}}`, wantErr: "shorter than a minute"},
		{name: "bad ttl", gw: `{"cluster": {"redis": "redis://r:1", "ttl": "soon"}}`, wantErr: "toolsearch.cluster.ttl"},
		{name: "tiny blobs", gw: `{"cluster": {"redis": "redis://r:1", "maxBlobBytes": 10}}`, wantErr: "out of range"},
		{name: "wrong type", gw: `{"cluster": {"redis": 6379}}`, wantErr: "toolsearch.cluster.redis"},
		{name: "unknown key", gw: `{"cluster": {"redis": "redis://r:1", "passwd": "x"}}`, wantErr: "passwd"},
		{name: "key from the default variable", gw: `{"cluster": {"redis": "redis://r:1", "replica": "a"}}`,
			env:  map[string]string{ClusterKeyEnv: testClusterKey},
			want: Cluster{Redis: "redis://r:1", Prefix: DefaultClusterPrefix, Replica: "a", TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes, Key: testClusterKey}},
		{name: "key from a named variable", gw: `{"cluster": {"redis": "redis://r:1", "replica": "a", "key": " ${MY_KEY} "}}`,
			env:  map[string]string{"MY_KEY": testClusterKey, ClusterKeyEnv: "the-default-variable-loses-here-xxxxxxxx"},
			want: Cluster{Redis: "redis://r:1", Prefix: DefaultClusterPrefix, Replica: "a", TTL: DefaultClusterTTL, MaxBlobBytes: DefaultClusterMaxBlobBytes, Key: testClusterKey}},
		{name: "a key written in the file", gw: `{"cluster": {"redis": "redis://r:1", "key": "` + testClusterKey + `"}}`,
			wantErr: `"toolsearch.cluster.key": want a reference to the variable that holds the key`},
		{name: "a key as a default in the file", gw: `{"cluster": {"redis": "redis://r:1", "key": "${K:-` + testClusterKey + `}"}}`,
			wantErr: `"toolsearch.cluster.key": want a reference`},
		{name: "a key with text around the reference", gw: `{"cluster": {"redis": "redis://r:1", "key": "x${K}"}}`,
			env: map[string]string{"K": testClusterKey}, wantErr: `"toolsearch.cluster.key": want a reference`},
		{name: "a reference that names no variable", gw: `{"cluster": {"redis": "redis://r:1", "key": "${not a name}"}}`,
			wantErr: `does not name a variable`},
		{name: "a short key", gw: `{"cluster": {"redis": "redis://r:1", "key": "${K}"}}`,
			env: map[string]string{"K": "short-key-17chars"}, wantErr: "the cluster key has 17 characters; use at least 32"},
		{name: "a short key in the default variable", gw: `{"cluster": {"redis": "redis://r:1"}}`,
			env: map[string]string{ClusterKeyEnv: "short-key-17chars"}, wantErr: `"toolsearch.cluster.key ($TOOLSEARCH_CLUSTER_KEY)": the cluster key has 17`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("x.json", []byte(`{"toolsearch": `+tc.gw+`}`), env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				for _, v := range tc.env {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error %q shows the secret %q", err, v)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Gateway.Cluster; got != tc.want {
				t.Errorf("cluster = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// testClusterKey is a cluster key of the right length.
const testClusterKey = "0123456789abcdef0123456789abcdef-test"

// TestClusterWarnings: what serve says at start about a cluster's
// settings, per setting.
func TestClusterWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Cluster
		want []string // a substring of each warning, in order
	}{
		{name: "no cluster", c: Cluster{}},
		{name: "TLS, password and key", c: Cluster{Redis: "rediss://:pw@r:6380", Key: testClusterKey}},
		{name: "password from the environment", c: Cluster{Redis: "rediss://r:6380", Password: "pw", Key: testClusterKey}},
		{name: "no key", c: Cluster{Redis: "rediss://:pw@r:6380"},
			want: []string{"control the tool definitions and the ranking"}},
		{name: "no TLS, no password, no key", c: Cluster{Redis: "redis://r:6379"},
			want: []string{"are not shared", "without TLS (redis://) and without a password"}},
		{name: "no TLS", c: Cluster{Redis: "redis://:pw@r:6379", Key: testClusterKey},
			want: []string{"cross the network in clear"}},
		{name: "no password", c: Cluster{Redis: "rediss://r:6380", Key: testClusterKey},
			want: []string{"without a password"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.c.Warnings()
			if len(got) != len(tc.want) {
				t.Fatalf("Warnings() = %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to say %q", i, got[i], w)
				}
				if strings.Contains(got[i], "pw@") || strings.Contains(got[i], testClusterKey) {
					t.Errorf("warning %d shows a secret: %q", i, got[i])
				}
			}
		})
	}
}

func TestClusterSecrets(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("x.json", []byte(`{"toolsearch": {"cluster": {"redis": "rediss://default:${PW}@r:6380/0"}}}`),
		env(map[string]string{"PW": "p4ssw0rd-in-url"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Secrets(), "p4ssw0rd-in-url") {
		t.Errorf("Secrets() = %q, want the URL's password among them", cfg.Secrets())
	}
	if got := cfg.Gateway.Cluster.RedisRedacted(); strings.Contains(got, "p4ssw0rd") || !strings.Contains(got, "r:6380") {
		t.Errorf("RedisRedacted() = %q, want the host without the password", got)
	}
	cfg, err = Parse("x.json", []byte(`{"toolsearch": {"cluster": {"redis": "redis://r:6379"}}}`),
		env(map[string]string{RedisPasswordEnv: "env-password-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Secrets(), "env-password-1") {
		t.Errorf("Secrets() = %q, want the password from $%s", cfg.Secrets(), RedisPasswordEnv)
	}
	// A key variable that is not set is a problem serve refuses to start
	// with, not an error of the file (a reload reads it after serve has
	// removed the variable).
	cfg, err = Parse("x.json", []byte(`{"toolsearch": {"cluster": {"redis": "redis://r:6379", "key": "${NO_KEY}"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Gateway.Cluster.KeyProblem; p == nil || !strings.Contains(p.Error(), `"toolsearch.cluster.key": ${NO_KEY} is not set`) || cfg.Gateway.Cluster.Key != "" {
		t.Errorf("KeyProblem = %v (key %q), want the unset variable named", p, cfg.Gateway.Cluster.Key)
	}
	cfg, err = Parse("x.json", []byte(`{"toolsearch": {"cluster": {"redis": "redis://r:6379"}}}`),
		env(map[string]string{ClusterKeyEnv: testClusterKey}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Secrets(), testClusterKey) {
		t.Errorf("Secrets() = %q, want the cluster key from $%s", cfg.Secrets(), ClusterKeyEnv)
	}
}

// FuzzParseCluster: any cluster object is read or refused with an error
// that names toolsearch and never shows the password; what is read is
// usable (a redis URL with a host, a prefix, a replica, bounds in range).
func FuzzParseCluster(f *testing.F) {
	for _, s := range []string{
		`{"redis": "redis://127.0.0.1:6379/0"}`,
		`{"redis": "rediss://u:${PW}@h:6380/1", "prefix": "p", "replica": "r", "ttl": "1h", "maxBlobBytes": 2097152}`,
		`{"redis": "redis://:${PW}@h:1/x"}`,
		`{"redis": "http://h"}`,
		`{"redis": "", "prefix": " "}`,
		`{"redis": "redis://h", "ttl": 3}`,
		`{"redis": "redis://h", "replica": "a b"}`,
		`{"redis": 1}`,
		`null`,
		`[]`,
	} {
		f.Add(s)
	}
	const pw = "fuzz-secret-password"
	lookup := env(map[string]string{"PW": pw})
	f.Fuzz(func(t *testing.T, cluster string) {
		cfg, err := Parse("f.json", []byte(`{"toolsearch": {"cluster": `+cluster+`}}`), lookup)
		if err != nil {
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("the error shows the password: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "config f.json") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		c := cfg.Gateway.Cluster
		if !c.On() {
			return
		}
		if !strings.HasPrefix(c.Redis, "redis://") && !strings.HasPrefix(c.Redis, "rediss://") {
			t.Fatalf("accepted %q", c.Redis)
		}
		if c.Prefix == "" || c.Replica == "" || c.TTL < time.Minute || c.MaxBlobBytes < 1<<20 {
			t.Fatalf("accepted %+v", c)
		}
		if strings.Contains(c.RedisRedacted(), pw) {
			t.Fatalf("RedisRedacted shows the password: %s", c.RedisRedacted())
		}
	})
}
