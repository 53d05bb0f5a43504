package gateway

// Which handler serves an HTTP request of an MCP endpoint. The MCP library
// serves 2026-07-28 requests only from a stateless handler, and sessions
// only from a stateful one, so each request is sent to one of them by what
// it carries:
//
//   - Mcp-Protocol-Version of 2026-07-28 or later, or (a POST) a JSON-RPC
//     request whose _meta names such a version, or server/discover: the
//     stateless handler. Such a request must not carry Mcp-Session-Id: a
//     2026-07-28 request names no session, so one that names a session
//     (another client's, perhaps) is refused, not served in it.
//   - anything else (initialize, a session's requests, its event stream,
//     DELETE): the sessions' handler, as before.
//
// Both handlers sit behind the same guards: httpguard (Host, Origin,
// token, rates, body bound), the id check (ids.go) and the count of posts
// the drain waits for; the drain refuses new calls in both (drain.go), and
// a subscriptions/listen stream counts against the session cap (era.go).
// The stateless handler checks Mcp-Method, Mcp-Name and
// Mcp-Protocol-Version against the body (-32020 on a mismatch), and the
// Mcp-Param-* headers of the tools it serves; the gateway checks those of
// the tools of full exposure, which the handler does not know
// (paramheaders.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// sharedKeyCtx carries, in an HTTP request's context, the key of the
// shared server that serves it (sharedSession).
type sharedKeyCtx struct{}

// statelessHandler is the handler of 2026-07-28 requests for one
// exposure. On an auto endpoint each request is served by the shared
// server of the exposure its own clientInfo name gives (modernAutoKey),
// and a client with tools of its own by one that leaves out the built-in
// tools it has (modernBuiltinKey).
func (g *Gateway) statelessHandler(mode string) http.Handler {
	sv := g.cfg.Gateway.Serve
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		key, ok := r.Context().Value(sharedKeyCtx{}).(string)
		if !ok {
			key = mode
		}
		return g.sharedSession(key).server
	}, &mcp.StreamableHTTPOptions{Logger: g.log, Stateless: true,
		// As for sessions: the guard checks Host and bounds bodies.
		DisableLocalhostProtection: true, MaxRequestBodyBytes: sv.MaxBodyBytes,
		// A request whose client went away is not worked on.
		PropagateRequestCancellation: true})
	auto := mode == config.ExposureAuto || mode == ""
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := mode
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(r.Body) // bounded by the guard, read once already
			if err != nil {
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			hb, _ := peekBody(body) // routeModern has refused a body it cannot peek
			if auto {
				key = g.modernAutoKey(hb.client)
			}
			key = g.modernBuiltinKey(key, hb.client) // builtinclient.go
			if id, err := g.fullParamHeaders(key, r.Header, body); err != nil {
				writeJSONRPCErrorID(w, http.StatusBadRequest, id, mcp.CodeHeaderMismatch, err.Error())
				return
			}
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sharedKeyCtx{}, key)))
	})
}

// fullParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call of a tool of full exposure, which the MCP library does not
// know (paramheaders.go); it returns the request's id for the error. key
// names the shared server that serves the request.
func (g *Gateway) fullParamHeaders(key string, h http.Header, body []byte) (json.RawMessage, error) {
	if !clientera.Modern(h.Get("Mcp-Protocol-Version")) {
		return nil, nil
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return nil, nil // the library answers what is not a tools/call
	}
	s := g.sharedSession(key)
	s.mu.Lock()
	fl := s.full
	s.mu.Unlock()
	if fl == nil {
		return nil, nil // not full exposure: the library knows the tools
	}
	return msg.ID, checkParamHeaders(h, msg.Params.Arguments, fl.headers[msg.Params.Name])
}

// httpBody is what routing reads of a POST body: its one JSON-RPC
// message's method and the version its _meta names. A batch or a body
// that is not JSON-RPC leaves both empty (the sessions' handler answers).
type httpBody struct {
	method  string
	version string
	// client is the clientInfo name the _meta gives (self-reported).
	client  string
	metaLen int
}

func peekBody(body []byte) (httpBody, error) {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return httpBody{}, nil
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil {
		return httpBody{}, nil
	}
	out := httpBody{method: msg.Method, metaLen: len(msg.Params.Meta)}
	if out.metaLen > clientera.MaxMetaBytes {
		return out, fmt.Errorf("the request's _meta is %d bytes, more than the %d accepted", out.metaLen, clientera.MaxMetaBytes)
	}
	if len(msg.Params.Meta) > 0 {
		var meta struct {
			Version any `json:"io.modelcontextprotocol/protocolVersion"`
		}
		if json.Unmarshal(msg.Params.Meta, &meta) == nil {
			out.version, _ = meta.Version.(string)
		}
		// The client's name as the request's handler will read it
		// (clientera.MetaImpl), so that routing and serving agree.
		var m map[string]any
		if json.Unmarshal(msg.Params.Meta, &m) == nil {
			if impl := clientera.MetaImpl(m); impl != nil {
				out.client = impl.Name
			}
		}
	}
	return out, nil
}

// routeModern serves r with the stateless handler when it is a 2026-07-28
// request, or refuses it when it is one that cannot be served; it reports
// whether it answered.
func (g *Gateway) routeModern(w http.ResponseWriter, r *http.Request, stateless http.Handler) bool {
	header := r.Header.Get("Mcp-Protocol-Version")
	modern := clientera.Modern(header)
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body) // the guard has bounded it
		if err != nil {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		hb, err := peekBody(body)
		if err != nil {
			writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidParams, err.Error())
			return true
		}
		if clientera.Modern(hb.version) || hb.method == "server/discover" {
			modern = true
		}
	}
	if !modern {
		return false
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"a request of MCP 2026-07-28 (by its Mcp-Protocol-Version header or its _meta) carries no Mcp-Session-Id; "+
				"sessions are of MCP 2025-11-25 and earlier, and a session's requests name no 2026-07-28 version")
		return true
	}
	stateless.ServeHTTP(w, r)
	return true
}
