package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Result is one web search result.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// Provider asks one search service. Implementations return results in the
// service's order and do no domain filtering.
type Provider interface {
	// Name names the provider in errors ("searxng", "brave").
	Name() string
	// Search returns up to n results for query.
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// SearXNG asks a SearXNG instance through its JSON API (the instance must
// allow the json format in its settings).
type SearXNG struct {
	// URL is the instance's base URL, e.g. http://127.0.0.1:8888.
	URL    string
	Client *http.Client
}

// Name implements Provider.
func (s *SearXNG) Name() string { return "searxng" }

// Search implements Provider.
func (s *SearXNG) Search(ctx context.Context, query string, n int) ([]Result, error) {
	base := strings.TrimRight(s.URL, "/")
	if !strings.HasSuffix(base, "/search") {
		base += "/search"
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("searxng: bad URL %q: %w", s.URL, err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	var body struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := getJSON(ctx, client(s.Client), u.String(), nil, &body); err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	out := make([]Result, 0, len(body.Results))
	for _, r := range body.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

// BraveEndpoint is Brave Search's web search API.
const BraveEndpoint = "https://api.search.brave.com/res/v1/web/search"

// Brave asks the Brave Search API.
type Brave struct {
	// Key is the subscription token.
	Key string
	// URL overrides BraveEndpoint (tests, proxies).
	URL    string
	Client *http.Client
}

// Name implements Provider.
func (b *Brave) Name() string { return "brave" }

// Search implements Provider.
func (b *Brave) Search(ctx context.Context, query string, n int) ([]Result, error) {
	endpoint := b.URL
	if endpoint == "" {
		endpoint = BraveEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("brave: bad URL %q: %w", endpoint, err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("count", fmt.Sprint(min(max(n, 1), 20)))
	u.RawQuery = q.Encode()
	var body struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	h := http.Header{"X-Subscription-Token": {b.Key}}
	if err := getJSON(ctx, client(b.Client), u.String(), h, &body); err != nil {
		return nil, fmt.Errorf("brave: %w", err)
	}
	out := make([]Result, 0, len(body.Web.Results))
	for _, r := range body.Web.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Description})
	}
	return out, nil
}

func client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// getJSON GETs u and decodes a JSON body of at most 4 MiB.
func getJSON(ctx context.Context, c *http.Client, u string, h http.Header, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		s := strings.TrimSpace(string(body[:min(len(body), 200)]))
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("HTTP %d: the key was refused or the format is not enabled: %s", resp.StatusCode, s)
		case http.StatusTooManyRequests:
			return fmt.Errorf("HTTP 429: rate limited; try again later")
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, s)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return nil
}

// SearchArgs are the arguments of web_search.
type SearchArgs struct {
	Query string `json:"query"`
	// AllowedDomains keeps only results from these domains (added to the
	// configured allow list). Hosts and domains are compared in their
	// canonical form (CanonicalHost).
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	// BlockedDomains drops results from these domains.
	BlockedDomains []string `json:"blocked_domains,omitempty"`
	MaxResults     int      `json:"max_results,omitempty"`
}

// Searcher runs web searches through a provider, filtering domains.
type Searcher struct {
	Provider   Provider
	Domains    Domains
	Timeout    time.Duration
	MaxResults int
}

// Results are what one search returned, after filtering.
type Results struct {
	Query    string
	Results  []Result
	Filtered int // results dropped by domain rules
}

// String renders results for a model, one numbered entry each.
func (r Results) String() string {
	var b strings.Builder
	if len(r.Results) == 0 {
		fmt.Fprintf(&b, "No results for %q", r.Query)
		if r.Filtered > 0 {
			fmt.Fprintf(&b, " (%d dropped by domain rules)", r.Filtered)
		}
		b.WriteString(".")
		return b.String()
	}
	for i, x := range r.Results {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, x.Title, x.URL)
		if x.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", x.Snippet)
		}
	}
	if r.Filtered > 0 {
		fmt.Fprintf(&b, "(%d results dropped by domain rules)\n", r.Filtered)
	}
	b.WriteString("Read a page with web_fetch.")
	return b.String()
}

var tagRE = regexp.MustCompile(`<[^>]{0,200}>`)

// clean strips HTML tags and entities from a provider's text.
func clean(s string) string {
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	return strings.Join(strings.Fields(s), " ")
}

// Search runs args through the provider.
func (s *Searcher) Search(ctx context.Context, args SearchArgs) (Results, error) {
	q := strings.TrimSpace(args.Query)
	if q == "" {
		return Results{}, errors.New("web_search: the query is empty")
	}
	if len(q) > 400 {
		return Results{}, errors.New("web_search: the query is longer than 400 characters")
	}
	if s.Provider == nil {
		return Results{}, errors.New("web_search: no search provider is configured (toolsearch.builtins.web_search)")
	}
	n := args.MaxResults
	if n <= 0 {
		n = s.MaxResults
	}
	if n <= 0 {
		n = 10
	}
	n = min(n, 20)
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	for _, l := range []struct {
		name    string
		entries []string
	}{{"allowed_domains", args.AllowedDomains}, {"blocked_domains", args.BlockedDomains}} {
		for i, e := range l.entries {
			if _, err := CanonicalDomain(e); err != nil {
				return Results{}, fmt.Errorf("web_search: %s[%d]: %w", l.name, i, err)
			}
		}
	}
	if err := s.Domains.Check(); err != nil {
		return Results{}, fmt.Errorf("web_search: the configured domains: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dom := Domains{Allow: append(append([]string(nil), s.Domains.Allow...), args.AllowedDomains...),
		Deny: append(append([]string(nil), s.Domains.Deny...), args.BlockedDomains...)}
	if len(s.Domains.Allow) > 0 && len(args.AllowedDomains) > 0 {
		// Both lists: a result must satisfy each.
		dom.Allow = args.AllowedDomains
	}
	// Ask for more than n when results may be dropped.
	ask := n
	if len(dom.Allow) > 0 || len(dom.Deny) > 0 {
		ask = min(20, n*2)
	}
	raw, err := s.Provider.Search(ctx, q, ask)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Results{}, fmt.Errorf("web_search: %s did not answer within %v", s.Provider.Name(), timeout)
		}
		return Results{}, fmt.Errorf("web_search: %w", err)
	}
	out := Results{Query: q}
	for _, r := range raw {
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			out.Filtered++
			continue
		}
		if ok, _ := dom.Allowed(u.Hostname()); !ok {
			out.Filtered++
			continue
		}
		if len(s.Domains.Allow) > 0 && len(args.AllowedDomains) > 0 {
			if ok, _ := (Domains{Allow: s.Domains.Allow}).Allowed(u.Hostname()); !ok {
				out.Filtered++
				continue
			}
		}
		if len(out.Results) < n {
			out.Results = append(out.Results, Result{Title: clean(r.Title), URL: r.URL, Snippet: clean(r.Snippet)})
		}
	}
	return out, nil
}
