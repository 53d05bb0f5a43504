package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP library's streamable transport reads the request's protocol
// version (its Mcp-Protocol-Version header) from the request's context,
// where only the library's own HTTP handler puts it, under a key of its
// own. The sessions a cluster keeps are served on the library's transport
// without that handler (sessionshare.go); without the version, the
// transport takes every request for one of 2025-03-26, and so neither
// primes a POST's stream with an event id (2025-11-25) nor passes on SSE
// polling (wire/ssepoll.go).
//
// versioned has the library's handler make the context: a stateless
// handler, given the request, calls back (for the server to use) first
// with the request as it came, then with the request it made with the
// version in its context; versioned serves the second, and throws away
// what the handler itself answers. Should a later library not call back so,
// the request is served as it came, as before.

// versionedKey carries, in a request's context, what to serve it with.
type versionedKey struct{}

type versionedCall struct {
	orig   *http.Request
	w      http.ResponseWriter
	serve  func(http.ResponseWriter, *http.Request)
	served bool
}

// versionHandler is the library's handler versioned uses.
var versionHandler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
	c, ok := r.Context().Value(versionedKey{}).(*versionedCall)
	if ok && r != c.orig && !c.served {
		c.served = true
		c.serve(c.w, r)
	}
	return nil // the handler answers "no server" to no one (discardWriter)
}, &mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true, MaxRequestBodyBytes: -1})

// versioned serves a POST with serve, on the request as the MCP library's
// handler would give it to its transport.
func versioned(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request)) {
	if r.Method != http.MethodPost {
		serve(w, r)
		return
	}
	c := &versionedCall{w: w, serve: serve}
	c.orig = r.WithContext(context.WithValue(r.Context(), versionedKey{}, c))
	versionHandler.ServeHTTP(discardWriter{h: http.Header{}}, c.orig)
	if !c.served {
		serve(w, r)
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header       { return d.h }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
