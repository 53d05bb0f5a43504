package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// PrivateAddressError is the error for a connection web_fetch refused to
// make because its address is loopback, private, link-local or
// unspecified.
type PrivateAddressError struct {
	Host string     // the host name the URL gave
	Addr netip.Addr // the address it led to
	Kind string     // "loopback", "private", "link-local" or "unspecified"
}

func (e *PrivateAddressError) Error() string {
	if e.Host == "" || e.Host == e.Addr.String() {
		return fmt.Sprintf("%s is a %s address", e.Addr, e.Kind)
	}
	return fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.Addr, e.Kind)
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598), not
// reachable from the internet either.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// addressKind says why ip may not be connected to, or "" when it may.
func addressKind(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate() || cgnat.Contains(ip):
		return "private"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return "link-local"
	case ip.IsUnspecified() || (ip.Is4() && ip.As4()[0] == 0):
		// 0.0.0.0/8 reaches this host on Linux.
		return "unspecified"
	}
	return ""
}

// guard refuses connections to private addresses. It checks the address
// of each connection as it is made (net.Dialer.Control), after name
// resolution, so a name that resolves, or re-resolves, to such an address
// cannot get through. Proxies from the environment are trusted: the
// connection to the proxy is not checked, and the target's name is
// resolved and checked before the request goes to the proxy.
type guard struct {
	// proxies are the addresses ("host:port") of the proxies in use.
	proxies sync.Map
	// exempt, when set, lets an address through (tests).
	exempt func(netip.AddrPort) bool
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
	if kind := addressKind(ap.Addr()); kind != "" {
		return &PrivateAddressError{Host: host, Addr: ap.Addr().Unmap(), Kind: kind}
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
	t.DialTLSContext, t.DialTLS = nil, nil // TLS too goes through DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := g.proxies.Load(addr); ok {
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
			g.proxies.Store(proxyAddr(pu), true)
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
