// Package proxytest runs a local stand-in for an Anthropic-compatible
// endpoint, for tests of the proxy and of its clients. It wraps the
// validating stand-in of package anthropictest (which answers non-streaming
// POST /v1/messages with a scripted model) and adds what a proxy's upstream
// also serves:
//
//   - streaming: a request with "stream": true is answered with the event
//     sequence the API streams for the same message (package sse);
//   - POST /v1/messages/count_tokens and GET /v1/models;
//   - with Options.NoReferences, the 400s of endpoints that break tool
//     search (defer_loading, tool_reference blocks, server search tools);
//   - unless Options.SystemMessages, a 400 for {"role": "system"} messages
//     inside messages (the validating stand-in's NoSystemMessages, or the
//     wording Options.SystemRefusal gives);
//   - a record of every request: path and query, headers, body.
package proxytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/proxy/internal/sse"
)

// Options configure an Upstream.
type Options struct {
	// Options of the validating stand-in behind (NoReferences,
	// SearchToolName, Model).
	anthropictest.Options
	// SystemMessages accepts {"role": "system"} messages inside messages
	// (the mid-conversation-system beta), with the tool changes they may
	// carry, as the validating stand-in checks them.
	SystemMessages bool
	// SystemRefusal, when set and SystemMessages is not, refuses a
	// POST /v1/messages whose messages hold a system-role message in other
	// words than the validating stand-in's: it returns the status and the
	// raw body to answer, given the index of the first such message.
	SystemRefusal func(index int) (status int, body string)
}

// Recorded is one request the Upstream received.
type Recorded struct {
	// Method and URI (path and query) of the request.
	Method, URI string
	// Header holds the request's headers.
	Header http.Header
	// Body is the request body.
	Body []byte
}

// Upstream is a running stand-in endpoint. Its methods are safe for
// concurrent use.
type Upstream struct {
	// URL is the endpoint's base URL.
	URL string
	// Inner is the validating stand-in behind.
	Inner *anthropictest.Server

	opts   Options
	srv    *httptest.Server
	client *http.Client

	mu       sync.Mutex
	reqs     []Recorded
	refusals []string
}

// Refusals returns the bodies of the refusals SystemRefusal answered.
func (u *Upstream) Refusals() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.refusals)
}

// New starts a stand-in that stops when the test ends.
func New(t testing.TB, opts Options) *Upstream {
	u := Start(opts)
	t.Cleanup(u.Close)
	return u
}

// Start starts a stand-in; Close stops it.
func Start(opts Options) *Upstream {
	inner := opts.Options
	inner.NoSystemMessages = inner.NoSystemMessages || !opts.SystemMessages
	u := &Upstream{opts: opts, Inner: anthropictest.Start(inner), client: &http.Client{}}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	u.URL = u.srv.URL
	return u
}

// Close stops the stand-in.
func (u *Upstream) Close() {
	u.srv.Close()
	u.Inner.Close()
}

// Requests returns every request received, in order.
func (u *Upstream) Requests() []Recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.reqs)
}

// Messages returns the bodies of the POST /v1/messages requests received.
func (u *Upstream) Messages() [][]byte {
	var out [][]byte
	for _, r := range u.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(pathOf(r.URI), "/v1/messages") {
			out = append(out, r.Body)
		}
	}
	return out
}

func pathOf(uri string) string {
	p, _, _ := strings.Cut(uri, "?")
	return p
}

// WriteError writes an error in the API's shape.
func WriteError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "reading body: "+err.Error())
		return
	}
	u.mu.Lock()
	u.reqs = append(u.reqs, Recorded{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	u.mu.Unlock()
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"type":"model","id":"claude-standin","display_name":"Stand-in","created_at":"2025-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-standin","last_id":"claude-standin"}`)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		if msg := u.refuse(body); msg != "" {
			WriteError(w, http.StatusBadRequest, "invalid_request_error", msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, (len(body)+3)/4)
	case r.Method == http.MethodPost && path == "/v1/messages":
		u.messages(w, r, body)
	default:
		WriteError(w, http.StatusNotFound, "not_found_error", "not found: "+r.Method+" "+path)
	}
}

// refuse returns the 400 message a tool-search-unaware endpoint gives a
// count_tokens body, or "".
func (u *Upstream) refuse(body []byte) string {
	if !u.opts.NoReferences {
		return ""
	}
	for _, s := range []string{`"defer_loading"`, `"tool_reference"`, `"type":"tool_search_tool_`} {
		if bytes.Contains(body, []byte(s)) {
			return "Extra inputs are not permitted: " + strings.Trim(s, `"`)
		}
	}
	return ""
}

func (u *Upstream) messages(w http.ResponseWriter, r *http.Request, body []byte) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "request body is not valid JSON")
		return
	}
	if u.opts.SystemRefusal != nil && !u.opts.SystemMessages {
		var msgs []struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(top["messages"], &msgs)
		for i, m := range msgs {
			if m.Role != "system" {
				continue
			}
			status, out := u.opts.SystemRefusal(i)
			u.mu.Lock()
			u.refusals = append(u.refusals, out)
			u.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, out)
			return
		}
	}
	stream := string(top["stream"]) == "true"
	delete(top, "stream")
	inner, _ := json.Marshal(top)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, u.Inner.URL+"/v1/messages", bytes.NewReader(inner))
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	for _, b := range r.Header.Values("anthropic-beta") {
		req.Header.Add("anthropic-beta", b)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		WriteError(w, http.StatusBadGateway, "api_error", err.Error())
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		WriteError(w, http.StatusBadGateway, "api_error", err.Error())
		return
	}
	if rid := resp.Header.Get("request-id"); rid != "" {
		w.Header().Set("request-id", rid)
	}
	if resp.StatusCode != http.StatusOK || !stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
		return
	}
	sse.SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	_ = sse.WriteMessage(sse.NewWriter(w), out)
}
