package wire

import (
	"slices"
	"testing"
)

func TestServerEnviron(t *testing.T) {
	t.Parallel()
	gateway := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C", "LANG=en", "GITHUB_TOKEN=ghp_secret", "AWS_PROFILE=dev",
		"AWS_REGION=eu", "AWSX=no", "path=lower", "EMPTY=", "NOEQUALS"}
	for _, tc := range []struct {
		name        string
		passthrough []string
		extra       map[string]string
		want        []string
	}{
		{"basics only", nil, nil, []string{"HOME=/home/u", "LANG=en", "LC_ALL=C", "PATH=/usr/bin"}},
		{"config env on top", nil, map[string]string{"PATH": "/opt/bin", "TOKEN": "t"},
			[]string{"HOME=/home/u", "LANG=en", "LC_ALL=C", "PATH=/opt/bin", "TOKEN=t"}},
		{"by name", []string{"AWS_PROFILE", "EMPTY"}, nil, []string{"AWS_PROFILE=dev", "EMPTY=", "HOME=/home/u", "LANG=en", "LC_ALL=C", "PATH=/usr/bin"}},
		{"by prefix", []string{"AWS_*"}, nil, []string{"AWS_PROFILE=dev", "AWS_REGION=eu", "HOME=/home/u", "LANG=en", "LC_ALL=C", "PATH=/usr/bin"}},
		{"everything", []string{"*"}, nil, []string{"AWSX=no", "AWS_PROFILE=dev", "AWS_REGION=eu", "EMPTY=", "GITHUB_TOKEN=ghp_secret",
			"HOME=/home/u", "LANG=en", "LC_ALL=C", "PATH=/usr/bin", "path=lower"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := serverEnviron(gateway, tc.passthrough, tc.extra); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
