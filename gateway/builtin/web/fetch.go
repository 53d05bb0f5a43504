package web

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
)

// FetchOptions configure a Fetcher. Zero fields take the defaults.
type FetchOptions struct {
	Domains   Domains
	MaxBytes  int64         // body bytes read at most (default 10 MiB)
	Timeout   time.Duration // whole fetch (default 30s)
	PageChars int           // characters per page of output (default 20,000)
	CacheTTL  time.Duration // how long a fetched page is reused (default 15m)
	// CacheBytes bounds the bytes the cache holds, text and URLs
	// (default 64 MiB). The least recently used pages go first; a page
	// larger than the bound is not cached.
	CacheBytes int64
	// CacheEntries bounds the number of pages cached (default 64).
	CacheEntries int
	// Client makes the requests (default: a client with its own
	// transport). Its CheckRedirect is replaced and, unless AllowPrivate,
	// its transport (which must then be an *http.Transport) is copied
	// with its dial functions replaced.
	Client *http.Client
	// UserAgent is sent with every request.
	UserAgent string
	// AllowPrivate lets web_fetch connect to loopback, private and the
	// other special-purpose addresses of the IANA registries (link-local,
	// carrier-grade NAT, documentation, benchmarking, reserved,
	// broadcast, multicast; NAT64 and 6to4 addresses carrying such an
	// IPv4 address). By default it refuses them, checking the address of
	// each connection as it is made, so that neither a name resolving to
	// such an address, nor a name re-resolved to one after a first
	// check, nor a redirect to one reaches the machine's own services or
	// its network. Proxies set in the environment are trusted.
	AllowPrivate bool
}

// FetchArgs are the arguments of web_fetch.
type FetchArgs struct {
	URL string `json:"url"`
	// Offset is the character offset of the page to return.
	Offset int `json:"offset,omitempty"`
	// MaxChars caps this page's size (at most the configured page size).
	MaxChars int `json:"max_chars,omitempty"`
}

// Page is one page of a fetched document.
type Page struct {
	URL         string // the URL fetched, its host canonical (after same-host redirects)
	Status      int
	ContentType string
	Text        string // this page's text
	Offset      int    // of Text in the whole document, in characters
	Total       int    // characters in the whole document
	Truncated   bool   // the body was larger than MaxBytes and was cut
	Cached      bool
	// RedirectTo is set, and Text empty, when the server redirected to
	// another host: the caller decides whether to fetch it.
	RedirectTo string
}

// String renders the page for a model: a short header, then the text.
func (p Page) String() string {
	var b strings.Builder
	if p.RedirectTo != "" {
		fmt.Fprintf(&b, "%s redirects (HTTP %d) to another host: %s\nThe redirect was not followed. To read that page, call web_fetch with that URL.", p.URL, p.Status, p.RedirectTo)
		return b.String()
	}
	fmt.Fprintf(&b, "URL: %s\nContent-Type: %s\n", p.URL, p.ContentType)
	end := p.Offset + utf8.RuneCountInString(p.Text)
	if p.Offset > 0 || end < p.Total {
		fmt.Fprintf(&b, "Characters %d-%d of %d.", p.Offset, end, p.Total)
		if end < p.Total {
			fmt.Fprintf(&b, " More: call again with offset %d.", end)
		}
		b.WriteByte('\n')
	}
	if p.Truncated {
		b.WriteString("The body was larger than the size limit and was cut.\n")
	}
	b.WriteString("\n")
	b.WriteString(p.Text)
	return b.String()
}

// Fetcher fetches pages, converting HTML to Markdown, with a small cache.
// It is safe for concurrent use.
type Fetcher struct {
	opts   FetchOptions
	client *http.Client
	// guard refuses private addresses (nil with AllowPrivate).
	guard *guard
	// err is why no request can be made.
	err error

	mu    sync.Mutex
	cache map[string]*list.Element // of *cached, by URL
	lru   *list.List               // most recently used first
	held  int64                    // the bytes of the cached entries (size)
}

type cached struct {
	key  string
	doc  document
	when time.Time
}

// entryOverhead is what one cache entry costs besides its strings: the
// entry, its list element and map slot, roughly.
const entryOverhead = 256

// size is what the entry holds in memory, as the cache counts it.
func (c *cached) size() int64 {
	return int64(len(c.key)+len(c.doc.url)+len(c.doc.contentType)+len(c.doc.text)+len(c.doc.redirect)+entryOverhead) +
		int64(len(c.doc.marks))*8
}

// document is a whole fetched document, converted.
type document struct {
	url         string
	status      int
	contentType string
	text        string // valid UTF-8
	chars       int    // characters (runes) in text
	// marks[i] is the byte offset of character i*markEvery, for text
	// that is not ASCII (in ASCII a character is a byte).
	marks     []int
	truncated bool
	redirect  string
}

// markEvery is the distance in characters between two marks.
const markEvery = 4096

// setText sets the document's text, counting and marking its characters.
func (d *document) setText(text string) {
	d.text, d.chars, d.marks = text, utf8.RuneCountInString(text), nil
	if d.chars == len(text) {
		return
	}
	d.marks = make([]int, 0, d.chars/markEvery+1)
	i := 0
	for b := range text {
		if i%markEvery == 0 {
			d.marks = append(d.marks, b)
		}
		i++
	}
}

// page returns n characters of the text from character off on, off being
// at most d.chars.
func (d *document) page(off, n int) string {
	end := min(off+n, d.chars)
	if d.marks == nil {
		return d.text[off:end]
	}
	return firstRunes(d.text[d.byteOffset(off):], end-off)
}

// byteOffset is the byte offset of character i.
func (d *document) byteOffset(i int) int {
	if i >= d.chars {
		return len(d.text)
	}
	from := d.marks[i/markEvery]
	return from + len(firstRunes(d.text[from:], i%markEvery))
}

// firstRunes returns the first n runes of s.
func firstRunes(s string, n int) string {
	b := 0
	for ; n > 0 && b < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[b:])
		b += size
	}
	return s[:b]
}

// NewFetcher makes a Fetcher.
func NewFetcher(opts FetchOptions) *Fetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 10 << 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.PageChars <= 0 {
		opts.PageChars = 20_000
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 15 * time.Minute
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 64
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "toolsearch-web-fetch/1 (+https://github.com/toolsearch/toolsearch)"
	}
	c := &http.Client{}
	if opts.Client != nil {
		cc := *opts.Client
		c = &cc
	}
	f := &Fetcher{opts: opts, client: c, cache: map[string]*list.Element{}, lru: list.New()}
	if err := opts.Domains.Check(); err != nil {
		// A deny entry that matched nothing would let its domain through.
		f.err = fmt.Errorf("the domain lists: %w", err)
	}
	if !opts.AllowPrivate {
		f.guard = &guard{}
		switch t := c.Transport.(type) {
		case nil:
			c.Transport = f.guard.transport(nil)
		case *http.Transport:
			c.Transport = f.guard.transport(t)
		default:
			f.err = errCustomTransport
		}
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		// The request goes to the canonical host, as the first did.
		host, err := CanonicalHost(req.URL.Hostname())
		if err != nil {
			return fmt.Errorf("the redirect to %s: %w", req.URL.Redacted(), err)
		}
		req.URL.Host = hostPort(host, req.URL.Port())
		if !sameHost(req.URL, via[0].URL) {
			return http.ErrUseLastResponse
		}
		if ok, why := f.opts.Domains.Allowed(host); !ok {
			return errors.New(why)
		}
		return nil
	}
	return f
}

// hostPort is the URL host ("name:port", "[v6]:port") of a canonical host
// and a port, which may be empty.
func hostPort(host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return host
	}
	return host + ":" + port
}

// sameHost reports whether b is on a's host (both canonical): the same
// name and port, or an http → https upgrade of the same name.
func sameHost(a, b *url.URL) bool {
	if a.Hostname() != b.Hostname() {
		return false
	}
	return a.Port() == b.Port() || (a.Port() == "" || b.Port() == "") && (a.Scheme != b.Scheme)
}

// ErrNotText is wrapped by the error for a body that is not text.
var ErrNotText = errors.New("not a text document")

// Fetch returns one page of the document at args.URL.
func (f *Fetcher) Fetch(ctx context.Context, args FetchArgs) (Page, error) {
	if f.err != nil {
		return Page{}, fmt.Errorf("web_fetch: %w", f.err)
	}
	raw := strings.TrimSpace(args.URL)
	u, err := url.Parse(raw)
	if err != nil {
		return Page{}, fmt.Errorf("web_fetch: %q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Page{}, fmt.Errorf("web_fetch: only http and https URLs can be fetched, not %q", raw)
	}
	if u.Host == "" {
		return Page{}, fmt.Errorf("web_fetch: %q has no host", raw)
	}
	if u.User != nil {
		return Page{}, fmt.Errorf("web_fetch: URLs with credentials are refused")
	}
	host, err := CanonicalHost(u.Hostname())
	if err != nil {
		return Page{}, fmt.Errorf("web_fetch: %q: %w", raw, err)
	}
	// Lists match, and the request goes to, the same canonical host.
	u.Host = hostPort(host, u.Port())
	if ok, why := f.opts.Domains.Allowed(host); !ok {
		return Page{}, fmt.Errorf("web_fetch: %s refused: %s", raw, why)
	}
	if args.Offset < 0 {
		return Page{}, fmt.Errorf("web_fetch: offset %d is negative", args.Offset)
	}
	u.Fragment = ""
	key := u.String()
	doc, hit := f.lookup(key)
	if !hit {
		doc, err = f.get(ctx, u)
		if err != nil {
			return Page{}, err
		}
		f.store(key, doc)
	}
	p := Page{URL: doc.url, Status: doc.status, ContentType: doc.contentType, Total: doc.chars,
		Truncated: doc.truncated, Cached: hit, RedirectTo: doc.redirect, Offset: args.Offset}
	if doc.redirect != "" {
		return p, nil
	}
	size := f.opts.PageChars
	if args.MaxChars > 0 && args.MaxChars < size {
		size = args.MaxChars
	}
	if args.Offset > doc.chars {
		return Page{}, fmt.Errorf("web_fetch: offset %d is past the end (%d characters)", args.Offset, doc.chars)
	}
	p.Text = doc.page(args.Offset, size)
	return p, nil
}

func (f *Fetcher) lookup(key string) (document, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.cache[key]
	if !ok {
		return document{}, false
	}
	c := el.Value.(*cached)
	if time.Since(c.when) > f.opts.CacheTTL {
		f.drop(el)
		return document{}, false
	}
	f.lru.MoveToFront(el)
	return c.doc, true
}

// store caches doc, then drops the least recently used entries until the
// cache is within its bounds. A document larger than the byte bound is
// not cached.
func (f *Fetcher) store(key string, doc document) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.cache[key]; ok {
		f.drop(el)
	}
	c := &cached{key: key, doc: doc, when: time.Now()}
	if c.size() > f.opts.CacheBytes {
		return
	}
	f.cache[key] = f.lru.PushFront(c)
	f.held += c.size()
	for f.held > f.opts.CacheBytes || f.lru.Len() > f.opts.CacheEntries {
		f.drop(f.lru.Back())
	}
}

// drop removes a cache entry; f.mu is held.
func (f *Fetcher) drop(el *list.Element) {
	c := f.lru.Remove(el).(*cached)
	delete(f.cache, c.key)
	f.held -= c.size()
}

// cacheUse reports the entries and bytes the cache holds.
func (f *Fetcher) cacheUse() (entries int, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lru.Len(), f.held
}

// get fetches and converts the document at u.
func (f *Fetcher) get(ctx context.Context, u *url.URL) (document, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(withProxies(ctx), http.MethodGet, u.String(), nil)
	if err != nil {
		return document{}, fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		var pe *PrivateAddressError
		if errors.As(err, &pe) {
			what := u.String()
			var ue *url.Error
			if errors.As(err, &ue) && ue.URL != what {
				what = ue.URL + " (redirected from " + what + ")"
			}
			return document{}, fmt.Errorf("web_fetch: %s refused: %w; web_fetch does not connect to loopback, private or other special-purpose addresses (allowPrivate in the web_fetch configuration lifts this)", what, pe)
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return document{}, fmt.Errorf("web_fetch: %s did not answer within %v", u, f.opts.Timeout)
		}
		return document{}, fmt.Errorf("web_fetch: %s: %w", u, err)
	}
	defer resp.Body.Close()
	doc := document{url: resp.Request.URL.String(), status: resp.StatusCode}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		if err != nil {
			return document{}, fmt.Errorf("web_fetch: %s answered HTTP %d without a usable Location", u, resp.StatusCode)
		}
		doc.redirect = loc.String()
		return doc, nil
	}
	body, truncated, err := readLimited(resp.Body, f.opts.MaxBytes)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return document{}, fmt.Errorf("web_fetch: %s: the body did not arrive within %v (%d bytes read)", u, f.opts.Timeout, len(body))
		}
		return document{}, fmt.Errorf("web_fetch: %s: reading the body: %w", u, err)
	}
	doc.truncated = truncated
	ct := resp.Header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt = http.DetectContentType(body)
		mt, params, _ = mime.ParseMediaType(mt)
	}
	doc.contentType = mt
	if resp.StatusCode >= 400 {
		snippet := string(body[:min(len(body), 300)])
		return document{}, fmt.Errorf("web_fetch: %s answered HTTP %d %s: %s", u, resp.StatusCode, http.StatusText(resp.StatusCode), strings.TrimSpace(strings.ToValidUTF8(snippet, "")))
	}
	if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" {
		body = latin1ToUTF8(body, cs)
	}
	var text string
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		md, err := htmltomarkdown.ConvertString(string(body), converter.WithDomain(doc.url), converter.WithContext(ctx))
		if err != nil {
			return document{}, fmt.Errorf("web_fetch: converting the HTML of %s to Markdown: %w", u, err)
		}
		text = md
	case isText(mt):
		text = string(body)
	default:
		return document{}, fmt.Errorf("web_fetch: %s is %s (%d bytes), %w; web_fetch returns only text, HTML, JSON or XML", u, mt, len(body), ErrNotText)
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	trimmed := strings.TrimSpace(text)
	if len(trimmed) < len(text) {
		// A copy, so that the cache does not hold the trimmed space.
		trimmed = strings.Clone(trimmed)
	}
	doc.setText(trimmed)
	return doc, nil
}

func isText(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ld+json", "application/rss+xml", "application/atom+xml", "application/x-yaml",
		"application/yaml", "application/toml", "application/x-sh", "image/svg+xml", "application/manifest+json":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// readLimited reads at most max bytes, reporting whether there was more;
// it stops reading there, so a body that never ends costs max bytes.
func readLimited(r io.Reader, max int64) ([]byte, bool, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, max+1))
	if err != nil {
		return buf.Bytes(), false, err
	}
	if n > max {
		return buf.Bytes()[:max], true, nil
	}
	return buf.Bytes(), false, nil
}

// latin1ToUTF8 converts ISO-8859-1 and Windows-1252 bodies (the common
// legacy charsets); other charsets are passed through and invalid bytes
// replaced later.
func latin1ToUTF8(b []byte, charset string) []byte {
	switch charset {
	case "iso-8859-1", "latin1", "windows-1252", "cp1252", "latin-1":
	default:
		return b
	}
	out := make([]byte, 0, len(b)+len(b)/8)
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return out
}
