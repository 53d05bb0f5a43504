package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"syscall"
	"time"
)

// PrivateAddressError is the error for a connection web_fetch refused to
// make because its address is in a special-purpose range: loopback,
// private, link-local, documentation, reserved and the rest
// (specialRanges).
type PrivateAddressError struct {
	Host string     // the host name the URL gave
	Addr netip.Addr // the address it led to (an IPv4-mapped one unmapped)
	// Embedded is the IPv4 address that Addr, a NAT64 or 6to4 address,
	// carries and that was judged; it is not valid otherwise.
	Embedded netip.Addr
	Kind     string       // the range's name: "loopback", "private-use", ...
	Range    netip.Prefix // the range
}

// Error says which address was refused and which range it is in.
func (e *PrivateAddressError) Error() string {
	where := fmt.Sprintf("in the %s range %s", e.Kind, e.Range)
	if e.Embedded.IsValid() {
		where = fmt.Sprintf("which carries %s, %s", e.Embedded, where)
	}
	if e.Host == "" || e.Host == e.Addr.String() {
		return fmt.Sprintf("%s is an address %s", e.Addr, where)
	}
	return fmt.Sprintf("%s resolves to %s, %s", e.Host, e.Addr, where)
}

// specialRange is one range of addresses web_fetch does not connect to.
type specialRange struct {
	prefix netip.Prefix
	kind   string
}

// ranges makes the ranges of one kind.
func ranges(kind string, prefixes ...string) []specialRange {
	out := make([]specialRange, len(prefixes))
	for i, p := range prefixes {
		out[i] = specialRange{netip.MustParsePrefix(p), kind}
	}
	return out
}

// specialRanges are the ranges of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries (RFC 6890), multicast, and the IPv6 space outside
// global unicast (2000::/3). All are refused, even the few the registries
// mark globally reachable (anycast relays, AS112 DNS sinks, ORCHID
// identifiers): none serves web pages, and some (PCP, TURN anycast) reach
// the local network's own equipment. Three IPv6 forms carry an IPv4 address
// and are judged by it instead (embeddedIPv4): IPv4-mapped (::ffff:0:0/96),
// the NAT64 well-known prefix (64:ff9b::/96) and 6to4 (2002::/16).
//
// An address in several ranges gets the most specific one's name.
var specialRanges = slices.Concat(
	// IPv4.
	ranges("this-network", "0.0.0.0/8"), // 0.0.0.0 reaches this host on Linux
	ranges("private-use", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	ranges("shared (carrier-grade NAT)", "100.64.0.0/10"),
	ranges("loopback", "127.0.0.0/8"),
	ranges("link-local", "169.254.0.0/16"),
	ranges("IETF protocol assignment", "192.0.0.0/24"),
	ranges("documentation", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"),
	ranges("AS112 DNS", "192.31.196.0/24", "192.175.48.0/24"),
	ranges("AMT relay", "192.52.193.0/24"),
	ranges("6to4 relay anycast", "192.88.99.0/24"),
	ranges("benchmarking", "198.18.0.0/15"),
	ranges("multicast", "224.0.0.0/4"),
	ranges("reserved", "240.0.0.0/4"),
	ranges("limited broadcast", "255.255.255.255/32"),
	// IPv6. Everything outside 2000::/3 is reserved or special.
	ranges("reserved", "::/3", "4000::/2", "8000::/1"),
	ranges("unspecified", "::/128"),
	ranges("loopback", "::1/128"),
	ranges("IPv4-compatible (deprecated)", "::/96"),
	ranges("IPv4-translated", "::ffff:0:0:0/96"),
	ranges("NAT64 local-use", "64:ff9b:1::/48"),
	ranges("discard-only", "100::/64"),
	ranges("dummy", "100:0:0:1::/64"),
	ranges("IETF protocol assignment", "2001::/23"),
	ranges("Teredo", "2001::/32"),
	ranges("benchmarking", "2001:2::/48"),
	ranges("ORCHID", "2001:10::/28", "2001:20::/28"),
	ranges("drone remote ID", "2001:30::/28"),
	ranges("documentation", "2001:db8::/32", "3fff::/20"),
	ranges("AS112 DNS", "2001:4:112::/48", "2620:4f:8000::/48"),
	ranges("AMT relay", "2001:3::/32"),
	ranges("segment routing", "5f00::/16"),
	ranges("unique-local", "fc00::/7"),
	ranges("link-local", "fe80::/10"),
	ranges("site-local (deprecated)", "fec0::/10"),
	ranges("multicast", "ff00::/8"),
)

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address carries.
// (IPv4-mapped addresses are unmapped before.)
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// lookupRange returns the most specific special range holding ip.
func lookupRange(ip netip.Addr) (specialRange, bool) {
	best, found := specialRange{}, false
	for _, r := range specialRanges {
		if r.prefix.Contains(ip) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// refusal says why ip may not be connected to, or nil when it may. host
// is the name the URL gave, for the message.
func refusal(host string, ip netip.Addr) *PrivateAddressError {
	ip = ip.Unmap().WithZone("")
	judged, embedded := ip, netip.Addr{}
	if v4, ok := embeddedIPv4(ip); ok {
		judged, embedded = v4, v4
	}
	r, ok := lookupRange(judged)
	if !ok {
		return nil
	}
	return &PrivateAddressError{Host: host, Addr: ip, Embedded: embedded, Kind: r.kind, Range: r.prefix}
}

// guard refuses connections to special-purpose addresses. It checks the
// address of each connection as it is made (net.Dialer.Control), after
// name resolution, so a name that resolves, or re-resolves, to such an
// address cannot get through, nor can a redirect to one. Proxies from the
// environment are trusted: a connection to the proxy chosen for one of a
// fetch's requests is not checked, and the target's name is resolved and
// checked before the request goes to the proxy. Any other connection to
// the proxy's address (a request the environment sends direct, such as
// one for localhost) is checked like the rest.
type guard struct {
	// exempt, when set, lets an address through (tests).
	exempt func(netip.AddrPort) bool
}

// proxiesKey is the context key of a fetch's *proxies.
type proxiesKey struct{}

// proxies are the addresses ("host:port") of the proxies chosen for the
// requests of one fetch, the connections the guard lets through unchecked.
type proxies struct {
	mu    sync.Mutex
	addrs map[string]bool
}

func (p *proxies) add(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addrs == nil {
		p.addrs = map[string]bool{}
	}
	p.addrs[addr] = true
}

func (p *proxies) has(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[addr]
}

// withProxies returns ctx carrying a new record of chosen proxies, for
// the requests of one fetch. The HTTP client passes a request's context
// values to its dials.
func withProxies(ctx context.Context) context.Context {
	return context.WithValue(ctx, proxiesKey{}, &proxies{})
}

// check is a net.Dialer Control function for a connection to host.
func (g *guard) check(host, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("web_fetch: connecting to %s: unexpected address %q", host, address)
	}
	if g.exempt != nil && g.exempt(ap) {
		return nil
	}
	if e := refusal(host, ap.Addr()); e != nil {
		return e
	}
	return nil
}

// transport returns a copy of t (http.DefaultTransport when nil) whose
// connections pass the guard.
func (g *guard) transport(t *http.Transport) *http.Transport {
	if t == nil {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	//lint:ignore SA1019 a DialTLS the caller set would bypass the guard: it is cleared, not used
	t.DialTLSContext, t.DialTLS = nil, nil // TLS too goes through DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := ctx.Value(proxiesKey{}).(*proxies); ok && p.has(addr) {
			return dialer.DialContext(ctx, network, addr)
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		d := *dialer
		d.Control = func(_, address string, _ syscall.RawConn) error { return g.check(host, address) }
		return d.DialContext(ctx, network, addr)
	}
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			pu, err := proxy(req)
			if err != nil || pu == nil {
				return pu, err
			}
			if err := g.checkName(req.Context(), req.URL.Hostname()); err != nil {
				return nil, err
			}
			if p, ok := req.Context().Value(proxiesKey{}).(*proxies); ok {
				p.add(proxyAddr(pu))
			}
			return pu, nil
		}
	}
	return t
}

// checkName resolves host and checks its addresses, for requests that go
// through a proxy, which resolves the name itself.
func (g *guard) checkName(ctx context.Context, host string) error {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("web_fetch: resolving %s: %w", host, err)
	}
	for _, a := range addrs {
		if err := g.check(host, netip.AddrPortFrom(a, 0).String()); err != nil {
			return err
		}
	}
	return nil
}

// proxyAddr is the "host:port" the transport dials for proxy u.
func proxyAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// errCustomTransport is the error when the private-address guard cannot be
// put on a client's transport.
var errCustomTransport = errors.New("the client's transport is not an *http.Transport, so private addresses cannot be refused; set AllowPrivate or use an *http.Transport")
