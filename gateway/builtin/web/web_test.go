package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func TestFetch(t *testing.T) {
	t.Parallel()
	other := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other host") })
	// hits counts the requests for /cached, which only the cache subtest
	// fetches (the others run in parallel and fetch /page).
	var hits atomic.Int32
	big := strings.Repeat("0123456789", 300) // 3,000 characters
	site := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page", "/cached":
			if r.URL.Path == "/cached" {
				hits.Add(1)
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>T</title><style>p{}</style><script>var x=1</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/docs/a">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
		case "/moved":
			http.Redirect(w, r, "/page", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/huge":
			w.Header().Set("Content-Type", "text/plain")
			chunk := []byte(strings.Repeat("x", 64<<10))
			for i := 0; i < 800; i++ { // 50 MiB unless the client stops
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "/slow":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "start")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a": 1}`)
		case "/broken":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><p>unclosed <b>bold <div>inner</p></td><table><tr><td>cell`)
		case "/long":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, big)
		case "/mixed":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, strings.Repeat("aé", 1500)) // 3,000 characters, 4,500 bytes
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/sniff":
			w.Header()["Content-Type"] = nil
			fmt.Fprint(w, "<!DOCTYPE html><html><body><h2>Sniffed</h2></body></html>")
		default:
			http.Error(w, "no such page", http.StatusNotFound)
		}
	})
	// The test servers are on 127.0.0.1, which web_fetch refuses by
	// default.
	f := NewFetcher(FetchOptions{AllowPrivate: true, MaxBytes: 1 << 20, Timeout: 2 * time.Second, PageChars: 1000})
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		args     FetchArgs
		f        *Fetcher
		contains []string
		absent   []string
		err      string
	}{
		{name: "html to markdown", args: FetchArgs{URL: site.URL + "/page"},
			contains: []string{"# Hello", "**bold**", "[a link](" + site.URL + "/docs/a)", "- one", "Content-Type: text/html"},
			absent:   []string{"var x", "p{}"}},
		{name: "same-host redirect followed", args: FetchArgs{URL: site.URL + "/moved"}, contains: []string{"# Hello", "URL: " + site.URL + "/page"}},
		{name: "other-host redirect reported", args: FetchArgs{URL: site.URL + "/away"}, contains: []string{"redirects (HTTP 302) to another host: " + other.URL + "/x", "not followed"}, absent: []string{"Content-Type"}},
		{name: "huge body cut", args: FetchArgs{URL: site.URL + "/huge"}, contains: []string{"larger than the size limit", "of 1048576"}},
		{name: "slow body", args: FetchArgs{URL: site.URL + "/slow"}, f: NewFetcher(FetchOptions{AllowPrivate: true, Timeout: 300 * time.Millisecond}), err: "did not arrive within 300ms"},
		{name: "not text", args: FetchArgs{URL: site.URL + "/png"}, err: "image/png"},
		{name: "json", args: FetchArgs{URL: site.URL + "/json"}, contains: []string{`{"a": 1}`}},
		{name: "malformed html", args: FetchArgs{URL: site.URL + "/broken"}, contains: []string{"unclosed", "inner", "cell"}},
		{name: "first page", args: FetchArgs{URL: site.URL + "/long"}, contains: []string{"Characters 0-1000 of 3000", "offset 1000"}},
		{name: "last page", args: FetchArgs{URL: site.URL + "/long", Offset: 2500}, contains: []string{"Characters 2500-3000 of 3000"}, absent: []string{"More:"}},
		{name: "small page", args: FetchArgs{URL: site.URL + "/long", Offset: 100, MaxChars: 600}, contains: []string{"Characters 100-700 of 3000"}},
		{name: "non-ascii page", args: FetchArgs{URL: site.URL + "/mixed", Offset: 1001, MaxChars: 3}, contains: []string{"Characters 1001-1004 of 3000", "\n\néaé"}},
		{name: "non-ascii last page", args: FetchArgs{URL: site.URL + "/mixed", Offset: 2000}, contains: []string{"Characters 2000-3000 of 3000"}, absent: []string{"More:"}},
		{name: "non-ascii end", args: FetchArgs{URL: site.URL + "/mixed", Offset: 3000}, contains: []string{"Characters 3000-3000 of 3000"}},
		{name: "offset past end", args: FetchArgs{URL: site.URL + "/long", Offset: 5000}, err: "past the end"},
		{name: "latin1", args: FetchArgs{URL: site.URL + "/latin1"}, contains: []string{"café"}},
		{name: "sniffed html", args: FetchArgs{URL: site.URL + "/sniff"}, contains: []string{"## Sniffed"}},
		{name: "404", args: FetchArgs{URL: site.URL + "/missing"}, err: "HTTP 404"},
		{name: "ftp", args: FetchArgs{URL: "ftp://example.com/x"}, err: "only http and https"},
		{name: "file", args: FetchArgs{URL: "file:///etc/passwd"}, err: "only http and https"},
		{name: "not a url", args: FetchArgs{URL: "::"}, err: "not a URL"},
		{name: "credentials", args: FetchArgs{URL: "http://u:p@127.0.0.1/"}, err: "credentials"},
		{name: "denied", args: FetchArgs{URL: site.URL + "/page"}, f: NewFetcher(FetchOptions{AllowPrivate: true, Domains: Domains{Deny: []string{"127.0.0.1"}}}), err: "denied"},
		{name: "not allowed", args: FetchArgs{URL: site.URL + "/page"}, f: NewFetcher(FetchOptions{AllowPrivate: true, Domains: Domains{Allow: []string{"go.dev"}}}), err: "not in the allowed domains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ff := tc.f
			if ff == nil {
				ff = f
			}
			start := time.Now()
			p, err := ff.Fetch(ctx, tc.args)
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := p.String()
			for _, c := range tc.contains {
				if !strings.Contains(s, c) {
					t.Errorf("output lacks %q:\n%s", c, s[:min(len(s), 1500)])
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(s, a) {
					t.Errorf("output has %q:\n%s", a, s)
				}
			}
		})
	}
	t.Run("cache", func(t *testing.T) {
		t.Parallel()
		cf := NewFetcher(FetchOptions{AllowPrivate: true})
		before := hits.Load()
		for i := 0; i < 3; i++ {
			p, err := cf.Fetch(ctx, FetchArgs{URL: site.URL + "/cached#frag" + fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			if p.Cached != (i > 0) {
				t.Errorf("fetch %d: cached %v", i, p.Cached)
			}
		}
		if n := hits.Load() - before; n != 1 {
			t.Errorf("the server saw %d requests for 3 fetches", n)
		}
		expired := NewFetcher(FetchOptions{AllowPrivate: true, CacheTTL: time.Nanosecond})
		before = hits.Load()
		for i := 0; i < 2; i++ {
			if _, err := expired.Fetch(ctx, FetchArgs{URL: site.URL + "/cached"}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		if n := hits.Load() - before; n != 2 {
			t.Errorf("with an expired cache the server saw %d requests for 2 fetches", n)
		}
	})
	t.Run("not text error", func(t *testing.T) {
		t.Parallel()
		if _, err := f.Fetch(ctx, FetchArgs{URL: site.URL + "/png"}); !errors.Is(err, ErrNotText) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDomains(t *testing.T) {
	t.Parallel()
	d := Domains{Allow: []string{"go.dev", "https://pkg.go.dev/x", "*.example.org"}, Deny: []string{"bad.go.dev"}}
	for host, want := range map[string]bool{
		"go.dev": true, "GO.DEV.": true, "tip.go.dev": true, "bad.go.dev": false, "x.bad.go.dev": false,
		"notgo.dev": false, "pkg.go.dev": true, "a.example.org": true, "example.org": true, "evil.com": false, "go.dev:443": true,
	} {
		if got, _ := d.Allowed(host); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
	if ok, _ := (Domains{}).Allowed("anything.net"); !ok {
		t.Error("empty lists refuse")
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	results := []map[string]string{
		{"title": "Go <strong>docs</strong>", "url": "https://go.dev/doc", "content": "The Go &amp; docs"},
		{"title": "Spam", "url": "https://spam.example.com/x", "content": "buy"},
		{"title": "Blog", "url": "https://blog.golang.org/a", "content": "news"},
		{"title": "Bad scheme", "url": "javascript:alert(1)", "content": ""},
	}
	// Results whose hosts are other spellings of spam.example.com and
	// 127.0.0.1.
	formResults := []map[string]string{
		{"title": "Wide", "url": "https://ｓｐａｍ.example.com/a"},
		{"title": "Upper", "url": "https://SPAM.EXAMPLE.COM./b"},
		{"title": "Escaped", "url": "https://%EF%BD%93pam.example.com/c"},
		{"title": "Decimal", "url": "http://2130706433/d"},
		{"title": "Mapped", "url": "http://[::ffff:127.0.0.1]/e"},
		{"title": "Bad host", "url": "http://1.2.3.4.5/f"},
		{"title": "Kept", "url": "https://go.dev/g"},
	}
	searx := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") == "" {
			http.Error(w, "bad request "+r.URL.String(), 400)
			return
		}
		if r.URL.Query().Get("q") == "fail" {
			http.Error(w, "format not allowed", http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("q") == "garbage" {
			fmt.Fprint(w, "<html>not json")
			return
		}
		if r.URL.Query().Get("q") == "slow" {
			time.Sleep(2 * time.Second)
		}
		if r.URL.Query().Get("q") == "forms" {
			json.NewEncoder(w).Encode(map[string]any{"results": formResults})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"results": results})
	})
	brave := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "k123" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var web []map[string]string
		for _, x := range results {
			web = append(web, map[string]string{"title": x["title"], "url": x["url"], "description": x["content"]})
		}
		if r.URL.Query().Get("count") == "" {
			http.Error(w, "count missing", 400)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"web": map[string]any{"results": web}})
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		s        *Searcher
		args     SearchArgs
		urls     []string
		contains string
		err      string
	}{
		{name: "searxng", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "go docs"},
			urls: []string{"https://go.dev/doc", "https://spam.example.com/x", "https://blog.golang.org/a"}, contains: "1. Go docs\n   https://go.dev/doc\n   The Go & docs"},
		{name: "searxng base with /search", s: &Searcher{Provider: &SearXNG{URL: searx.URL + "/search"}}, args: SearchArgs{Query: "go"},
			urls: []string{"https://go.dev/doc", "https://spam.example.com/x", "https://blog.golang.org/a"}},
		{name: "brave", s: &Searcher{Provider: &Brave{URL: brave.URL, Key: "k123"}}, args: SearchArgs{Query: "go", MaxResults: 2},
			urls: []string{"https://go.dev/doc", "https://spam.example.com/x"}},
		{name: "brave bad key", s: &Searcher{Provider: &Brave{URL: brave.URL, Key: "nope"}}, args: SearchArgs{Query: "go"}, err: "HTTP 401"},
		{name: "blocked by config", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Domains: Domains{Deny: []string{"example.com"}}}, args: SearchArgs{Query: "go"},
			urls: []string{"https://go.dev/doc", "https://blog.golang.org/a"}, contains: "dropped by domain rules"},
		{name: "allowed by call", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "go", AllowedDomains: []string{"golang.org"}},
			urls: []string{"https://blog.golang.org/a"}},
		{name: "blocked by call", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "go", BlockedDomains: []string{"go.dev", "golang.org"}},
			urls: []string{"https://spam.example.com/x"}},
		{name: "config allow narrows call allow", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Domains: Domains{Allow: []string{"go.dev"}}},
			args: SearchArgs{Query: "go", AllowedDomains: []string{"golang.org", "go.dev"}}, urls: []string{"https://go.dev/doc"}},
		{name: "host forms blocked by config", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Domains: Domains{Deny: []string{"spam.example.com", "127.0.0.1"}}},
			args: SearchArgs{Query: "forms"}, urls: []string{"https://go.dev/g"}, contains: "6 results dropped"},
		{name: "host forms blocked by call", s: &Searcher{Provider: &SearXNG{URL: searx.URL}},
			args: SearchArgs{Query: "forms", BlockedDomains: []string{"ＥＸＡＭＰＬＥ.com", "0x7f.1"}}, urls: []string{"https://go.dev/g"}},
		{name: "host forms allowed by call", s: &Searcher{Provider: &SearXNG{URL: searx.URL}},
			args: SearchArgs{Query: "forms", AllowedDomains: []string{"spam.example.com"}},
			urls: []string{"https://ｓｐａｍ.example.com/a", "https://SPAM.EXAMPLE.COM./b", "https://%EF%BD%93pam.example.com/c"}},
		{name: "bad blocked domain", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "go", BlockedDomains: []string{"ok.com", "a..b"}},
			err: "blocked_domains[1]"},
		{name: "bad configured domain", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Domains: Domains{Deny: []string{"256.1.1.1"}}}, args: SearchArgs{Query: "go"},
			err: "deny[0]"},
		{name: "nothing left", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Domains: Domains{Allow: []string{"nowhere.test"}}}, args: SearchArgs{Query: "go"},
			contains: "No results for \"go\" (4 dropped by domain rules)."},
		{name: "forbidden", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "fail"}, err: "HTTP 403"},
		{name: "not json", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "garbage"}, err: "not the expected JSON"},
		{name: "timeout", s: &Searcher{Provider: &SearXNG{URL: searx.URL}, Timeout: 200 * time.Millisecond}, args: SearchArgs{Query: "slow"}, err: "did not answer within 200ms"},
		{name: "empty", s: &Searcher{Provider: &SearXNG{URL: searx.URL}}, args: SearchArgs{Query: "  "}, err: "empty"},
		{name: "no provider", s: &Searcher{}, args: SearchArgs{Query: "go"}, err: "no search provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := tc.s.Search(ctx, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var urls []string
			for _, r := range res.Results {
				urls = append(urls, r.URL)
			}
			if strings.Join(urls, " ") != strings.Join(tc.urls, " ") {
				t.Errorf("urls %v, want %v", urls, tc.urls)
			}
			if tc.contains != "" && !strings.Contains(res.String(), tc.contains) {
				t.Errorf("output lacks %q:\n%s", tc.contains, res.String())
			}
		})
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"<b>x</b>", "a &amp; b", "<", "<<>>", "&#xffff;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = clean(s)
	})
}

// TestFetchRefusesPrivate: by default no connection is made to a loopback
// address, whether the URL names it, a name resolves to it, or a redirect
// leads to it.
func TestFetchRefusesPrivate(t *testing.T) {
	t.Parallel()
	var hits sync.Map // paths served
	site := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		switch r.URL.Path {
		case "/hop":
			// A new connection for the next request, whose address is
			// checked again (as after a DNS change).
			w.Header().Set("Connection", "close")
			http.Redirect(w, r, "/page", http.StatusFound)
		default:
			fmt.Fprint(w, "secret")
		}
	})
	other := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other secret") })
	away := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	port := site.Listener.Addr().(*net.TCPAddr).Port
	ctx := context.Background()

	refused := func(t *testing.T, f *Fetcher, url string, says ...string) {
		t.Helper()
		p, err := f.Fetch(ctx, FetchArgs{URL: url})
		var pe *PrivateAddressError
		if !errors.As(err, &pe) {
			t.Fatalf("fetch %s: err = %v, page %q; want a refusal", url, err, p.Text)
		}
		for _, want := range append(says, "refused", "loopback", "allowPrivate") {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
	t.Run("address", func(t *testing.T) {
		t.Parallel()
		refused(t, NewFetcher(FetchOptions{}), site.URL+"/page", "127.0.0.1", "127.0.0.1")
	})
	t.Run("name", func(t *testing.T) {
		t.Parallel()
		p, err := NewFetcher(FetchOptions{}).Fetch(ctx, FetchArgs{URL: fmt.Sprintf("http://localhost:%d/page", port)})
		var pe *PrivateAddressError
		if !errors.As(err, &pe) || pe.Host != "localhost" || !strings.Contains(err.Error(), "localhost resolves to ") {
			t.Fatalf("err = %v, page %q", err, p.Text)
		}
	})
	t.Run("same-host redirect", func(t *testing.T) {
		t.Parallel()
		f := NewFetcher(FetchOptions{})
		var dials atomic.Int32
		f.guard.exempt = func(netip.AddrPort) bool { return dials.Add(1) == 1 } // the first connection only
		refused(t, f, site.URL+"/hop", "127.0.0.1", "127.0.0.1", "redirected from "+site.URL+"/hop")
		if _, ok := hits.Load("/hop"); !ok {
			t.Error("the first request did not arrive")
		}
		if _, ok := hits.Load("/page"); ok {
			t.Error("the redirect reached its target")
		}
	})
	t.Run("other-host redirect", func(t *testing.T) {
		t.Parallel()
		f := NewFetcher(FetchOptions{})
		awayPort := away.Listener.Addr().(*net.TCPAddr).Port
		f.guard.exempt = func(ap netip.AddrPort) bool { return int(ap.Port()) == awayPort }
		p, err := f.Fetch(ctx, FetchArgs{URL: away.URL + "/"})
		if err != nil || p.RedirectTo != other.URL+"/x" {
			t.Fatalf("page %+v, err %v", p, err)
		}
		refused(t, f, p.RedirectTo, "127.0.0.1", "127.0.0.1")
	})
	t.Run("allowed when configured", func(t *testing.T) {
		t.Parallel()
		p, err := NewFetcher(FetchOptions{AllowPrivate: true}).Fetch(ctx, FetchArgs{URL: site.URL + "/allowed"})
		if err != nil || p.Text != "secret" {
			t.Fatalf("page %q, err %v", p.Text, err)
		}
	})
	t.Run("custom transport", func(t *testing.T) {
		t.Parallel()
		c := &http.Client{Transport: roundTripFunc(http.DefaultTransport.RoundTrip)}
		if _, err := NewFetcher(FetchOptions{Client: c}).Fetch(ctx, FetchArgs{URL: site.URL + "/custom"}); err == nil || !strings.Contains(err.Error(), "AllowPrivate") {
			t.Errorf("err = %v", err)
		}
		if _, err := NewFetcher(FetchOptions{Client: c, AllowPrivate: true}).Fetch(ctx, FetchArgs{URL: site.URL + "/custom"}); err != nil {
			t.Errorf("with AllowPrivate: %v", err)
		}
	})
	t.Run("proxy", func(t *testing.T) {
		t.Parallel()
		// The proxy itself is on loopback and is trusted; the target is
		// checked before the request goes to it.
		proxy := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "via proxy for "+r.Host) })
		pu, _ := url.Parse(proxy.URL)
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		f := NewFetcher(FetchOptions{Client: c})
		p, err := f.Fetch(ctx, FetchArgs{URL: "http://8.8.8.8/doc"})
		if err != nil || p.Text != "via proxy for 8.8.8.8" {
			t.Fatalf("public target: page %q, err %v", p.Text, err)
		}
		refused(t, f, site.URL+"/page", "127.0.0.1", "127.0.0.1")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
