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
		{name: "unset variable", gw: `{"cluster": {"redis": "redis://:${NOPE}@r:1"}}`, wantErr: "${NOPE} is not set"},
		{name: "bad prefix", gw: `{"cluster": {"redis": "redis://r:1", "prefix": "a b"}}`, wantErr: "toolsearch.cluster.prefix"},
		{name: "empty prefix", gw: `{"cluster": {"redis": "redis://r:1", "prefix": ""}}`, wantErr: "toolsearch.cluster.prefix"},
		{name: "bad replica", gw: `{"cluster": {"redis": "redis://r:1", "replica": "a\"b"}}`, wantErr: "toolsearch.cluster.replica"},
		{name: "short ttl", gw: `{"cluster": {"redis": "redis://r:1", "ttl": "5s"}}`, wantErr: "shorter than a minute"},
		{name: "bad ttl", gw: `{"cluster": {"redis": "redis://r:1", "ttl": "soon"}}`, wantErr: "toolsearch.cluster.ttl"},
		{name: "tiny blobs", gw: `{"cluster": {"redis": "redis://r:1", "maxBlobBytes": 10}}`, wantErr: "out of range"},
		{name: "wrong type", gw: `{"cluster": {"redis": 6379}}`, wantErr: "toolsearch.cluster.redis"},
		{name: "unknown key", gw: `{"cluster": {"redis": "redis://r:1", "passwd": "x"}}`, wantErr: "passwd"},
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
