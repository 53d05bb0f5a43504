package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// loopbackForms are ways of writing the loopback address 127.0.0.1 and
// the name localhost in a URL that Go's URL parser accepts.
var loopbackForms = []string{
	"127.0.0.1", "127.0.0.1.", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.000.000.001",
	"１２７.０.０.１", "127。0。0。1", "%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1", // percent-encoded full-width digits
	"[::ffff:127.0.0.1]", "[0:0:0:0:0:ffff:7f00:1]",
	"localhost", "LOCALHOST.", "ｌｏｃａｌｈｏｓｔ", "ⓛocalhost", "local%C2%ADhost",
	"%EF%BD%8C%EF%BD%8F%EF%BD%83%EF%BD%81%EF%BD%8C%EF%BD%88%EF%BD%8F%EF%BD%93%EF%BD%94", // percent-encoded full-width
}

// pageURL is the URL of /page on host and port.
func pageURL(host string, port int) string { return fmt.Sprintf("http://%s:%d/page", host, port) }

// TestFetchDenyListHostForms: with private addresses allowed, a deny list
// naming localhost and 127.0.0.1 refuses every spelling of them, and
// without it each spelling reaches the server.
func TestFetchDenyListHostForms(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := 0
	site := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		fmt.Fprint(w, "secret")
	})
	port := site.Listener.Addr().(*net.TCPAddr).Port
	deny := NewFetcher(FetchOptions{AllowPrivate: true, Domains: Domains{Deny: []string{"localhost", "127.0.0.1"}}})
	open := NewFetcher(FetchOptions{AllowPrivate: true})
	for _, host := range loopbackForms {
		t.Run(host, func(t *testing.T) {
			// Not parallel: hits counts this subtest's requests.
			u := pageURL(host, port)
			mu.Lock()
			before := hits
			mu.Unlock()
			p, err := deny.Fetch(context.Background(), FetchArgs{URL: u})
			if err == nil || !strings.Contains(err.Error(), "is denied") {
				t.Errorf("denied fetch of %s: page %q, err %v; want a refusal", u, p.Text, err)
			}
			mu.Lock()
			if hits != before {
				t.Errorf("the server saw the denied request for %s", u)
			}
			mu.Unlock()
			p, err = open.Fetch(context.Background(), FetchArgs{URL: u})
			if err != nil || p.Text != "secret" {
				t.Errorf("open fetch of %s: page %q, err %v", u, p.Text, err)
			}
		})
	}
}

// TestFetchRefusesHostForms: by default every spelling of a loopback,
// unspecified or embedded-loopback address is refused when connecting,
// and no request arrives.
func TestFetchRefusesHostForms(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := 0
	site := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		fmt.Fprint(w, "secret")
	})
	port := site.Listener.Addr().(*net.TCPAddr).Port
	hosts := append([]string{
		"0.0.0.0", "0", "[::]", // reach this host on Linux
		"[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", // carry 127.0.0.1
		"[::1]", "127.255.255.254",
	}, loopbackForms...)
	f := NewFetcher(FetchOptions{})
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			u := pageURL(host, port)
			p, err := f.Fetch(context.Background(), FetchArgs{URL: u})
			var pe *PrivateAddressError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "allowPrivate") {
				t.Fatalf("fetch %s: page %q, err %v; want a refusal", u, p.Text, err)
			}
		})
	}
	for _, tc := range []struct{ host, err string }{
		{"evil@127.0.0.1", "credentials"},
		{"evil:pw@localhost", "credentials"},
		{"example.com:80@127.0.0.1", "credentials"},
		{`example.com\@127.0.0.1`, "not a URL"},
		{"%6c%6fcalhost", "not a URL"}, // ASCII may not be escaped in a host
		{"1.2.3.4.5", "not a valid IPv4"},
		{"127.0.0.256", "not a valid IPv4"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			u := pageURL(tc.host, port)
			if _, err := f.Fetch(context.Background(), FetchArgs{URL: u}); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("fetch %s: err %v, want %q", u, err, tc.err)
			}
		})
	}
	t.Run("userinfo hiding the host", func(t *testing.T) {
		t.Parallel()
		u := fmt.Sprintf("http://127.0.0.1:%d@example.com/page", port)
		if _, err := f.Fetch(context.Background(), FetchArgs{URL: u}); err == nil || !strings.Contains(err.Error(), "credentials") {
			t.Fatalf("fetch %s: err %v", u, err)
		}
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if hits != 0 {
			t.Errorf("the server saw %d requests", hits)
		}
	})
}

// TestFetchRedirectHostForms: a redirect to another spelling of the same
// host is followed to the canonical host; one to a denied host's other
// spelling is refused.
func TestFetchRedirectHostForms(t *testing.T) {
	t.Parallel()
	var site *httpServer
	site = serveAddr(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/numeric":
			http.Redirect(w, r, fmt.Sprintf("http://2130706433:%d/page", site.port), http.StatusFound)
		case "/wide":
			http.Redirect(w, r, fmt.Sprintf("http://ｌｏｃａｌｈｏｓｔ:%d/page", site.port), http.StatusFound)
		default:
			fmt.Fprint(w, "host "+r.Host)
		}
	})
	ctx := context.Background()
	f := NewFetcher(FetchOptions{AllowPrivate: true})
	p, err := f.Fetch(ctx, FetchArgs{URL: site.url + "/numeric"})
	if want := fmt.Sprintf("127.0.0.1:%d", site.port); err != nil || p.Text != "host "+want || p.URL != "http://"+want+"/page" {
		t.Errorf("numeric redirect: page %+v, err %v", p, err)
	}
	// From 127.0.0.1, "localhost" is another host: the redirect is
	// reported, not followed, and fetching its target, however spelt,
	// meets the deny list.
	p, err = f.Fetch(ctx, FetchArgs{URL: site.url + "/wide"})
	if err != nil || p.RedirectTo == "" {
		t.Fatalf("wide redirect: page %+v, err %v", p, err)
	}
	deny := NewFetcher(FetchOptions{AllowPrivate: true, Domains: Domains{Deny: []string{"localhost"}}})
	if _, err := deny.Fetch(ctx, FetchArgs{URL: p.RedirectTo}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("fetching the redirect target %s: %v", p.RedirectTo, err)
	}
	lp, err := f.Fetch(ctx, FetchArgs{URL: fmt.Sprintf("http://localhost:%d/wide", site.port)})
	if want := fmt.Sprintf("localhost:%d", site.port); err != nil || lp.Text != "host "+want {
		t.Errorf("redirect from localhost to its full-width spelling: page %+v, err %v", lp, err)
	}
}

type httpServer struct {
	url  string
	port int
}

// serveAddr is serve with the server's URL and port known to its handler.
func serveAddr(t *testing.T, h http.HandlerFunc) *httpServer {
	hs := &httpServer{}
	s := serve(t, h)
	hs.url, hs.port = s.URL, s.Listener.Addr().(*net.TCPAddr).Port
	return hs
}

// TestFetchProxyAddressDirect: a request the environment sends direct
// (proxies skip localhost) to the proxy's own address is checked like any
// other, though the same address is let through as the proxy.
func TestFetchProxyAddressDirect(t *testing.T) {
	t.Parallel()
	proxy := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.IsAbs() {
			fmt.Fprint(w, "via proxy for "+r.Host)
			return
		}
		fmt.Fprint(w, "the proxy's own page")
	})
	pu, _ := url.Parse(proxy.URL)
	direct := func(r *http.Request) (*url.URL, error) {
		if r.URL.Hostname() == "127.0.0.1" {
			return nil, nil // as http.ProxyFromEnvironment does for loopback
		}
		return pu, nil
	}
	f := NewFetcher(FetchOptions{Client: &http.Client{Transport: &http.Transport{Proxy: direct}}})
	ctx := context.Background()
	if p, err := f.Fetch(ctx, FetchArgs{URL: "http://8.8.8.8/doc"}); err != nil || p.Text != "via proxy for 8.8.8.8" {
		t.Fatalf("through the proxy: page %q, err %v", p.Text, err)
	}
	p, err := f.Fetch(ctx, FetchArgs{URL: proxy.URL + "/"})
	var pe *PrivateAddressError
	if !errors.As(err, &pe) {
		t.Fatalf("direct to the proxy's address: page %q, err %v; want a refusal", p.Text, err)
	}
}
