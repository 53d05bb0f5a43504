// Package web implements the gateway's built-in web tools: web_fetch, which
// reads one known URL and returns it as Markdown, and web_search, which asks
// a search provider (SearXNG or Brave Search) for pages not yet known.
//
// Both tools judge a URL by its canonical host (CanonicalHost): the name
// after IDNA (UTS #46) mapping, in lower case, without a trailing dot, or
// the IP address in its usual form when the host is an address, however it
// was written (2130706433, 0x7f.1, [::ffff:127.0.0.1]). Allow and deny lists
// match that host, and web_fetch sends its request to that host, so what
// the lists see is what is dialled. web_fetch also refuses, at connect time,
// every address in the IANA special-purpose registries (loopback, private,
// link-local, documentation, benchmarking, reserved, multicast...) unless
// AllowPrivate is set; see FetchOptions.
package web

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Domains is an allow list and a deny list of domain names. A name matches
// a listed domain when it is that domain or a subdomain of it
// ("docs.go.dev" matches "go.dev"); an IP address matches only the same
// address. Hosts and entries are compared in their canonical form
// (CanonicalHost). The deny list wins; an empty allow list allows every
// domain not denied.
type Domains struct {
	Allow, Deny []string
}

// CanonicalHost is the form of a URL's host (without port or brackets)
// that web_fetch connects to and that allow and deny lists match:
//
//   - a name is mapped as IDNA (UTS #46) lookup does, the way the HTTP
//     client maps it before dialling: full-width and other compatibility
//     forms become ASCII ("ｌｏｃａｌｈｏｓｔ" is "localhost"), letters become
//     lower case, and non-ASCII labels become punycode;
//   - one trailing dot is dropped ("localhost." is "localhost");
//   - a host whose last label is a number is an IPv4 address, in any form
//     the C library's resolver accepts (2130706433, 0x7f.1, 0177.0.0.1,
//     127.1), and is written in dotted decimal, or refused when it is not
//     a valid address;
//   - an IPv6 address is written in its canonical form, and an
//     IPv4-mapped one (::ffff:127.0.0.1) as its IPv4 address.
//
// It returns an error saying what is wrong with a host that is empty or is
// no valid name or address.
func CanonicalHost(host string) (string, error) {
	if host == "" {
		return "", errors.New("the host is empty")
	}
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return "", fmt.Errorf("%q is not a valid IPv6 address", host)
		}
		return ip.Unmap().String(), nil
	}
	name, err := idna.Lookup.ToASCII(host)
	if err != nil {
		if !isASCII(host) {
			return "", fmt.Errorf("%q is not a valid host name: %w", host, err)
		}
		// Plain ASCII names the IDNA rules refuse (a_b.example.com)
		// are dialled as they are, so they are matched as they are.
		name = strings.ToLower(host)
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.HasSuffix(name, ".") || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return "", fmt.Errorf("%q is not a valid host name: it has an empty label", host)
	}
	labels := strings.Split(name, ".")
	if last := labels[len(labels)-1]; isNumber(last) {
		ip, ok := parseIPv4(labels)
		if !ok {
			return "", fmt.Errorf("%q is not a valid IPv4 address", host)
		}
		return ip.String(), nil
	}
	return name, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isNumber reports whether a label is written as a number, decimal or
// hexadecimal with 0x (octal is decimal digits with a leading 0), as the
// URL standard decides whether a host is an IPv4 address.
func isNumber(label string) bool {
	hex := len(label) >= 2 && (label[:2] == "0x" || label[:2] == "0X")
	if hex {
		label = label[2:]
	} else if label == "" {
		return false
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !('0' <= c && c <= '9' || hex && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F')) {
			return false
		}
	}
	return true
}

// parseIPv4Part reads one part of an IPv4 address as inet_aton does.
func parseIPv4Part(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case s == "0x" || s == "0X":
		return 0, true
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}

// parseIPv4 reads the labels of a host as an IPv4 address in the forms
// inet_aton takes: a.b.c.d, a.b.c (c fills 16 bits), a.b (b fills 24
// bits) and a (32 bits), each part decimal, octal or hexadecimal.
func parseIPv4(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	parts := make([]uint64, len(labels))
	for i, l := range labels {
		n, ok := parseIPv4Part(l)
		if !ok {
			return netip.Addr{}, false
		}
		parts[i] = n
	}
	last := len(parts) - 1
	var v uint64
	for i := 0; i < last; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
		v |= parts[i] << (8 * (3 - i))
	}
	if parts[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= parts[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// CanonicalDomain is the canonical form of an allow or deny list entry:
// a domain ("go.dev", "*.example.org", "https://pkg.go.dev/x" all name a
// domain) or an IP address, in the form CanonicalHost gives.
func CanonicalDomain(entry string) (string, error) {
	d := strings.TrimSpace(entry)
	if u, err := url.Parse(d); err == nil && u.Host != "" {
		d = u.Hostname()
	}
	d = strings.TrimPrefix(d, "*.")
	d = strings.TrimPrefix(strings.TrimSuffix(d, "]"), "[")
	c, err := CanonicalHost(d)
	if err != nil {
		return "", fmt.Errorf("the domain %q: %w", entry, err)
	}
	return c, nil
}

// Check reports the first entry of either list that is not a valid domain
// or address.
func (d Domains) Check() error {
	for _, list := range []struct {
		name    string
		entries []string
	}{{"allow", d.Allow}, {"deny", d.Deny}} {
		for i, e := range list.entries {
			if _, err := CanonicalDomain(e); err != nil {
				return fmt.Errorf("%s[%d]: %w", list.name, i, err)
			}
		}
	}
	return nil
}

// hostMatches reports whether the canonical host is the entry's domain or
// one of its subdomains; an address matches only itself. An entry that is
// no valid domain matches nothing (Check reports it).
func hostMatches(host, entry string) bool {
	domain, err := CanonicalDomain(entry)
	if err != nil {
		return false
	}
	if host == domain {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	return strings.HasSuffix(host, "."+domain)
}

// Allowed reports whether host (a URL's host, with or without a port) may
// be reached, with the reason when not. The host is judged in its
// canonical form; a host that has none is refused.
func (d Domains) Allowed(host string) (bool, string) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	c, err := CanonicalHost(host)
	if err != nil {
		return false, err.Error()
	}
	for _, x := range d.Deny {
		if hostMatches(c, x) {
			return false, "the domain " + canonicalOrRaw(x) + " is denied"
		}
	}
	if len(d.Allow) == 0 {
		return true, ""
	}
	for _, a := range d.Allow {
		if hostMatches(c, a) {
			return true, ""
		}
	}
	return false, "the host " + c + " is not in the allowed domains (" + strings.Join(d.Allow, ", ") + ")"
}

func canonicalOrRaw(entry string) string {
	if c, err := CanonicalDomain(entry); err == nil {
		return c
	}
	return entry
}
