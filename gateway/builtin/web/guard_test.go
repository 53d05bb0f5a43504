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

// TestSpecialRanges checks every range of the IANA special-purpose
// registries, and the addresses around them.
func TestSpecialRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, kind string // kind "" is allowed
	}{
		// 0.0.0.0/8 this network
		{"0.0.0.0", "this-network"}, {"0.255.255.255", "this-network"}, {"1.0.0.0", ""},
		// 10.0.0.0/8 private
		{"9.255.255.255", ""}, {"10.0.0.0", "private-use"}, {"10.255.255.255", "private-use"}, {"11.0.0.0", ""},
		// 100.64.0.0/10 shared
		{"100.63.255.255", ""}, {"100.64.0.0", "shared (carrier-grade NAT)"}, {"100.127.255.255", "shared (carrier-grade NAT)"}, {"100.128.0.0", ""},
		// 127.0.0.0/8 loopback
		{"126.255.255.255", ""}, {"127.0.0.0", "loopback"}, {"127.0.0.1", "loopback"}, {"127.255.255.255", "loopback"}, {"128.0.0.0", ""},
		// 169.254.0.0/16 link-local
		{"169.253.255.255", ""}, {"169.254.0.0", "link-local"}, {"169.254.169.254", "link-local"}, {"169.254.255.255", "link-local"}, {"169.255.0.0", ""},
		// 172.16.0.0/12 private
		{"172.15.255.255", ""}, {"172.16.0.0", "private-use"}, {"172.31.255.255", "private-use"}, {"172.32.0.0", ""},
		// 192.0.0.0/24 IETF protocol assignments (DS-Lite, PCP, TURN, NAT64 discovery)
		{"191.255.255.255", ""}, {"192.0.0.0", "IETF protocol assignment"}, {"192.0.0.8", "IETF protocol assignment"},
		{"192.0.0.9", "IETF protocol assignment"}, {"192.0.0.10", "IETF protocol assignment"}, {"192.0.0.170", "IETF protocol assignment"},
		{"192.0.0.255", "IETF protocol assignment"}, {"192.0.1.0", ""},
		// 192.0.2.0/24 TEST-NET-1
		{"192.0.2.0", "documentation"}, {"192.0.2.255", "documentation"}, {"192.0.3.0", ""},
		// 192.31.196.0/24 AS112
		{"192.31.195.255", ""}, {"192.31.196.0", "AS112 DNS"}, {"192.31.196.255", "AS112 DNS"}, {"192.31.197.0", ""},
		// 192.52.193.0/24 AMT
		{"192.52.192.255", ""}, {"192.52.193.0", "AMT relay"}, {"192.52.193.255", "AMT relay"}, {"192.52.194.0", ""},
		// 192.88.99.0/24 deprecated 6to4 relay anycast
		{"192.88.98.255", ""}, {"192.88.99.0", "6to4 relay anycast"}, {"192.88.99.2", "6to4 relay anycast"}, {"192.88.100.0", ""},
		// 192.168.0.0/16 private
		{"192.167.255.255", ""}, {"192.168.0.0", "private-use"}, {"192.168.255.255", "private-use"}, {"192.169.0.0", ""},
		// 192.175.48.0/24 AS112 direct delegation
		{"192.175.47.255", ""}, {"192.175.48.0", "AS112 DNS"}, {"192.175.48.255", "AS112 DNS"}, {"192.175.49.0", ""},
		// 198.18.0.0/15 benchmarking
		{"198.17.255.255", ""}, {"198.18.0.0", "benchmarking"}, {"198.19.255.255", "benchmarking"}, {"198.20.0.0", ""},
		// 198.51.100.0/24 TEST-NET-2
		{"198.51.99.255", ""}, {"198.51.100.0", "documentation"}, {"198.51.100.255", "documentation"}, {"198.51.101.0", ""},
		// 203.0.113.0/24 TEST-NET-3
		{"203.0.112.255", ""}, {"203.0.113.0", "documentation"}, {"203.0.113.255", "documentation"}, {"203.0.114.0", ""},
		// 224.0.0.0/4 multicast
		{"223.255.255.255", ""}, {"224.0.0.0", "multicast"}, {"224.0.0.1", "multicast"}, {"239.255.255.255", "multicast"},
		// 240.0.0.0/4 reserved, 255.255.255.255 broadcast
		{"240.0.0.0", "reserved"}, {"255.255.255.254", "reserved"}, {"255.255.255.255", "limited broadcast"},
		// public IPv4
		{"8.8.8.8", ""}, {"1.1.1.1", ""}, {"93.184.215.14", ""},

		// IPv6 outside 2000::/3
		{"::", "unspecified"}, {"::1", "loopback"}, {"::2", "IPv4-compatible (deprecated)"},
		{"::127.0.0.1", "IPv4-compatible (deprecated)"}, {"::8.8.8.8", "IPv4-compatible (deprecated)"}, {"::ffff:ffff", "IPv4-compatible (deprecated)"},
		{"::1:0:0", "reserved"}, {"::ffff:0:8.8.8.8", "IPv4-translated"}, {"::ffff:0:ffff:ffff", "IPv4-translated"},
		{"64:ff9b:1::", "NAT64 local-use"}, {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "NAT64 local-use"}, {"64:ff9b:2::", "reserved"},
		{"100::", "discard-only"}, {"100::ffff:ffff:ffff:ffff", "discard-only"}, {"100:0:0:1::", "dummy"}, {"100:0:0:1:ffff:ffff:ffff:ffff", "dummy"},
		{"100:0:0:2::", "reserved"}, {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
		{"4000::", "reserved"}, {"5f00::", "segment routing"}, {"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "segment routing"},
		{"8000::", "reserved"}, {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"},
		{"fc00::", "unique-local"}, {"fd00::1", "unique-local"}, {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"},
		{"fe00::", "reserved"}, {"fe80::", "link-local"}, {"fe80::1", "link-local"}, {"fe80::1%eth0", "link-local"},
		{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
		{"fec0::", "site-local (deprecated)"}, {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local (deprecated)"},
		{"ff00::", "multicast"}, {"ff02::1", "multicast"}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
		// 2001::/23 IETF protocol assignments and what it holds
		{"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001::", "Teredo"}, {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "Teredo"}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:1::1", "IETF protocol assignment"}, {"2001:1::2", "IETF protocol assignment"}, {"2001:1::3", "IETF protocol assignment"},
		{"2001:2::", "benchmarking"}, {"2001:2:0:ffff:ffff:ffff:ffff:ffff", "benchmarking"}, {"2001:2:1::", "IETF protocol assignment"},
		{"2001:3::", "AMT relay"}, {"2001:3:ffff:ffff:ffff:ffff:ffff:ffff", "AMT relay"},
		{"2001:4:112::", "AS112 DNS"}, {"2001:4:112:ffff:ffff:ffff:ffff:ffff", "AS112 DNS"},
		{"2001:10::", "ORCHID"}, {"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "ORCHID"}, {"2001:20::", "ORCHID"}, {"2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "ORCHID"},
		{"2001:30::", "drone remote ID"}, {"2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", "drone remote ID"},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "IETF protocol assignment"}, {"2001:200::", ""},
		// documentation
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""}, {"2001:db8::", "documentation"}, {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"}, {"2001:db9::", ""},
		{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""}, {"3fff::", "documentation"}, {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"}, {"3fff:1000::", ""},
		// AS112 direct delegation
		{"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", ""}, {"2620:4f:8000::", "AS112 DNS"}, {"2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "AS112 DNS"}, {"2620:4f:8001::", ""},
		// public IPv6
		{"2606:4700::1111", ""}, {"2a00:1450:4001::200e", ""},

		// IPv4 carried in IPv6 is judged by the IPv4 address.
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:10.0.0.1", "private-use"}, {"::ffff:169.254.169.254", "link-local"}, {"::ffff:8.8.8.8", ""},
		{"64:ff9b::127.0.0.1", "loopback"}, {"64:ff9b::10.1.2.3", "private-use"}, {"64:ff9b::169.254.169.254", "link-local"},
		{"64:ff9b::198.18.0.1", "benchmarking"}, {"64:ff9b::0.0.0.0", "this-network"}, {"64:ff9b::8.8.8.8", ""},
		{"2002:7f00:1::", "loopback"}, {"2002:c0a8:101::1", "private-use"}, {"2002:a9fe:a9fe:1::1", "link-local"},
		{"2002:c000:201::", "documentation"}, {"2002:ffff:ffff::", "limited broadcast"}, {"2002:808:808::1", ""},
	} {
		ip := netip.MustParseAddr(tc.addr)
		e := refusal("", ip)
		switch {
		case tc.kind == "" && e != nil:
			t.Errorf("%s is refused: %v", tc.addr, e)
		case tc.kind != "" && e == nil:
			t.Errorf("%s is allowed, want refused as %s", tc.addr, tc.kind)
		case e != nil && e.Kind != tc.kind:
			t.Errorf("%s is refused as %q, want %q", tc.addr, e.Kind, tc.kind)
		}
	}
	// Each range refuses its first and last address, under its own name
	// or a more specific one's.
	for _, r := range specialRanges {
		first := r.prefix.Masked().Addr()
		last := lastAddr(r.prefix)
		for _, a := range []netip.Addr{first, last} {
			if first.Is4() {
				if e := refusal("", a); e == nil {
					t.Errorf("%s (%s, first or last of %s) is allowed", a, r.kind, r.prefix)
				}
				continue
			}
			// IPv6: the embedding forms are judged by what they carry.
			if _, embeds := embeddedIPv4(a); !embeds && !a.Is4In6() {
				if e := refusal("", a); e == nil {
					t.Errorf("%s (%s, first or last of %s) is allowed", a, r.kind, r.prefix)
				}
			}
		}
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestPrivateAddressErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ host, addr, want string }{
		{"localhost", "127.0.0.1", "localhost resolves to 127.0.0.1, in the loopback range 127.0.0.0/8"},
		{"", "::ffff:10.1.2.3", "10.1.2.3 is an address in the private-use range 10.0.0.0/8"},
		{"x.test", "64:ff9b::a9fe:a9fe", "x.test resolves to 64:ff9b::a9fe:a9fe, which carries 169.254.169.254, in the link-local range 169.254.0.0/16"},
	} {
		e := refusal(tc.host, netip.MustParseAddr(tc.addr))
		if e == nil || e.Error() != tc.want {
			t.Errorf("refusal(%q, %s) = %v, want %q", tc.host, tc.addr, e, tc.want)
		}
	}
}
