// Package web implements the gateway's built-in web tools: web_fetch, which
// reads one known URL and returns it as Markdown, and web_search, which asks
// a search provider (SearXNG or Brave Search) for pages not yet known.
package web

import (
	"net"
	"net/url"
	"strings"
)

// Domains is an allow list and a deny list of domain names. A name matches
// a listed domain when it is that domain or a subdomain of it
// ("docs.go.dev" matches "go.dev"). The deny list wins; an empty allow list
// allows every domain not denied.
type Domains struct {
	Allow, Deny []string
}

func normDomain(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if u, err := url.Parse(d); err == nil && u.Host != "" {
		d = u.Hostname()
	}
	d = strings.TrimPrefix(d, "*.")
	return strings.Trim(d, ".")
}

func hostMatches(host, domain string) bool {
	domain = normDomain(domain)
	if domain == "" {
		return false
	}
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// Allowed reports whether host may be reached, with the reason when not.
func (d Domains) Allowed(host string) (bool, string) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, x := range d.Deny {
		if hostMatches(host, x) {
			return false, "the domain " + normDomain(x) + " is denied"
		}
	}
	if len(d.Allow) == 0 {
		return true, ""
	}
	for _, a := range d.Allow {
		if hostMatches(host, a) {
			return true, ""
		}
	}
	return false, "the host " + host + " is not in the allowed domains (" + strings.Join(d.Allow, ", ") + ")"
}
