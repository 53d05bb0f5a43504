package web

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host, want, err string
	}{
		{host: "go.dev", want: "go.dev"},
		{host: "GO.Dev", want: "go.dev"},
		{host: "go.dev.", want: "go.dev"},
		{host: "ｌｏｃａｌｈｏｓｔ", want: "localhost"},       // full-width
		{host: "ｌocalhost", want: "localhost"},       // from %EF%BD%8Cocalhost
		{host: "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", want: "localhost"},       // circled letters
		{host: "local\u00adhost", want: "localhost"}, // soft hyphen
		{host: "ＬＯＣＡＬＨＯＳＴ．", want: "localhost"},      // full-width stop
		{host: "Bücher.example", want: "xn--bcher-kva.example"},
		{host: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{host: "a_b.example.com", want: "a_b.example.com"}, // ASCII the IDNA rules refuse
		{host: "A_B.example.com", want: "a_b.example.com"},
		{host: "127.0.0.1", want: "127.0.0.1"},
		{host: "127.0.0.1.", want: "127.0.0.1"},
		{host: "2130706433", want: "127.0.0.1"},
		{host: "0x7f000001", want: "127.0.0.1"},
		{host: "0X7F.1", want: "127.0.0.1"},
		{host: "017700000001", want: "127.0.0.1"},
		{host: "0177.0.0.1", want: "127.0.0.1"},
		{host: "127.1", want: "127.0.0.1"},
		{host: "127.0.1", want: "127.0.0.1"},
		{host: "127.000.000.001", want: "127.0.0.1"},
		{host: "0x7f.0x0.0x0.0x1", want: "127.0.0.1"},
		{host: "10.0xffffff", want: "10.255.255.255"},
		{host: "0", want: "0.0.0.0"},
		{host: "0x", want: "0.0.0.0"},
		{host: "１２７.０.０.１", want: "127.0.0.1"}, // full-width digits
		{host: "127。0。0。1", want: "127.0.0.1"}, // ideographic stops
		{host: "169.254.169.254", want: "169.254.169.254"},
		{host: "::1", want: "::1"},
		{host: "0:0:0:0:0:0:0:1", want: "::1"},
		{host: "::ffff:127.0.0.1", want: "127.0.0.1"},
		{host: "0:0:0:0:0:ffff:7f00:1", want: "127.0.0.1"},
		{host: "::127.0.0.1", want: "::7f00:1"},
		{host: "64:ff9b::127.0.0.1", want: "64:ff9b::7f00:1"},
		{host: "FE80::1%eth0", want: "fe80::1%eth0"},
		{host: "", err: "empty"},
		{host: ".", err: "empty label"},
		{host: "a..b", err: "empty label"},
		{host: "localhost..", err: "empty label"},
		{host: ".localhost", err: "empty label"},
		{host: "1.2.3.4.5", err: "not a valid IPv4"},
		{host: "256.0.0.1", err: "not a valid IPv4"},
		{host: "127.0.0.256", err: "not a valid IPv4"},
		{host: "127.0.65536", err: "not a valid IPv4"},
		{host: "4294967296", err: "not a valid IPv4"},
		{host: "0x100000000", err: "not a valid IPv4"},
		{host: "08.0.0.1", err: "not a valid IPv4"}, // 8 is no octal digit
		{host: "example.0", err: "not a valid IPv4"},
		{host: "::g", err: "not a valid IPv6"},
		{host: "1:2", err: "not a valid IPv6"},
		{host: "a\u200db.example", err: "not a valid host name"}, // zero-width joiner
		{host: "\u2488.example", err: "not a valid host name"},   // "1." in one rune
	} {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalHost(tc.host)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CanonicalHost(%q) = %q, %v; want an error saying %q", tc.host, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CanonicalHost(%q) = %q, %v; want %q", tc.host, got, err, tc.want)
			}
		})
	}
}

func FuzzCanonicalHost(f *testing.F) {
	for _, s := range []string{"go.dev", "ｌｏｃａｌｈｏｓｔ", "2130706433", "0x7f.1", "0177.0.0.1", "::ffff:127.0.0.1",
		"fe80::1%eth0", "a..b", "1.2.3.4.5", "xn--bcher-kva.example", "a_b.c", "127。0。0。1", "0x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		c, err := CanonicalHost(host)
		if err != nil {
			return
		}
		// The canonical form is a fixed point, and an address is in its
		// usual form.
		again, err := CanonicalHost(c)
		if err != nil || again != c {
			t.Fatalf("CanonicalHost(%q) = %q, but CanonicalHost(%q) = %q, %v", host, c, c, again, err)
		}
		if ip, err := netip.ParseAddr(c); err == nil && ip.Unmap().String() != c {
			t.Fatalf("CanonicalHost(%q) = %q, not the address's usual form %q", host, c, ip.Unmap())
		}
	})
}

func TestDomainsHostForms(t *testing.T) {
	t.Parallel()
	d := Domains{Deny: []string{"localhost", "127.0.0.1", "Bücher.example", "*.ＩＮＴＥＲＮＡＬ.example"}}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"ｌｏｃａｌｈｏｓｔ", false}, {"LOCALHOST.", false}, {"localhost:8080", false}, {"ⓛocalhost", false},
		{"2130706433", false}, {"0x7f.1", false}, {"0177.0.0.1", false}, {"127.1", false}, {"127.0.0.1.", false},
		{"::ffff:127.0.0.1", false}, {"[::ffff:127.0.0.1]:80", false}, {"127。0。0。1", false},
		{"xn--bcher-kva.example", false}, {"BÜCHER.example", false}, {"a.internal.example", false}, {"internal.example", false},
		{"127.0.0.2", true}, {"notlocalhost", true}, {"example", true}, {"::1", true},
		// A host that has no canonical form is refused.
		{"1.2.3.4.5", false}, {"a..b", false},
	} {
		if got, why := d.Allowed(tc.host); got != tc.ok {
			t.Errorf("Allowed(%q) = %v (%s), want %v", tc.host, got, why, tc.ok)
		}
	}
	// An address matches only itself, never as a suffix.
	allow := Domains{Allow: []string{"0.0.1", "1.1"}}
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "1.1.1.1"} {
		if ok, _ := allow.Allowed(host); ok {
			t.Errorf("allow %v lets %s through", allow.Allow, host)
		}
	}
	if err := (Domains{Deny: []string{"go.dev", "a..b"}}).Check(); err == nil || !strings.Contains(err.Error(), "deny[1]") {
		t.Errorf("Check of a bad entry: %v", err)
	}
}
