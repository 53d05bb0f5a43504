package cluster

import (
	"crypto/tls"
	"strings"
	"testing"
)

func TestParseRedisURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url                 string
		addr, user, pass    string
		db                  int
		tls                 bool
		serverName, wantErr string
	}{
		{url: "redis://127.0.0.1:6380/2", addr: "127.0.0.1:6380", db: 2},
		{url: "redis://redis.internal", addr: "redis.internal:6379"},
		{url: "redis://redis.internal/", addr: "redis.internal:6379"},
		{url: "redis://:secret-pw@r:1/0", addr: "r:1", pass: "secret-pw"},
		{url: "redis://acl-user:secret-pw@r:1", addr: "r:1", user: "acl-user", pass: "secret-pw"},
		{url: "redis://acl-user@r:1", addr: "r:1", user: "acl-user"},
		{url: "rediss://redis.internal:6380/0", addr: "redis.internal:6380", tls: true, serverName: "redis.internal"},
		{url: "rediss://[::1]:6380", addr: "[::1]:6380", tls: true, serverName: "::1"},
		{url: "redis://r:1/notanumber", wantErr: `the database "notanumber" is not a number`},
		{url: "redis://r:1/-1", wantErr: `the database "-1" is not a number of 0 or more`},
		{url: "redis://r:1/0/1", wantErr: `the path "/0/1"`},
		{url: "redis://r:1/0?pool_size=5&dial_timeout=1s", wantErr: "options in the URL (dial_timeout, pool_size) are not read"},
		{url: "http://r:1", wantErr: `the scheme "http"`},
		{url: "redis:r:1", wantErr: "with the slashes"},
		{url: "redis://:secret-pw@r:port/0", wantErr: "not a URL"},
	}
	for _, tc := range tests {
		got, err := parseRedisURL(tc.url)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.url, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("%s: the error shows the password: %v", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if got.addr != tc.addr || got.username != tc.user || got.password != tc.pass || got.db != tc.db || (got.tls != nil) != tc.tls {
			t.Errorf("%s: got addr %q user %q password %q db %d TLS %v", tc.url, got.addr, got.username, got.password, got.db, got.tls != nil)
		}
		if got.tls != nil && (got.tls.ServerName != tc.serverName || got.tls.MinVersion < tls.VersionTLS12) {
			t.Errorf("%s: TLS server name %q, minimum version %#x; want %q and TLS 1.2 or newer", tc.url, got.tls.ServerName, got.tls.MinVersion, tc.serverName)
		}
	}
}
