// Package clientera is what a client's request says of its MCP protocol
// era: the protocol version in its _meta and the era that version belongs
// to, the client's name and implementation, the size bound on _meta, and
// the error of a request whose version the connection does not speak. It
// also holds the facts a client gives of itself (Facts) and the list of
// per-request clients seen lately (Recent).
//
// A client speaks either the session era (MCP 2025-11-25 and earlier:
// initialize, then requests of one session) or the per-request era (MCP
// 2026-07-28: no initialize, each request carries the protocol version and
// the client's capabilities in its _meta).
package clientera

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// PerRequestVersion is the first protocol version without sessions.
const PerRequestVersion = "2026-07-28"

// MaxMetaBytes bounds the _meta of one request (its JSON encoding). The
// per-request era puts the client's capabilities there, which are small;
// a larger _meta is refused rather than decoded, logged or passed on.
const MaxMetaBytes = 16 << 10

// Modern reports whether v is a version of the per-request era.
// Versions compare as dates, as the MCP library compares them.
func Modern(v string) bool { return v >= PerRequestVersion }

// Era says which era a version belongs to, for logs and /healthz:
// "per-request", "session", or "unknown" for no version.
func Era(v string) string {
	switch {
	case v == "":
		return "unknown"
	case Modern(v):
		return "per-request"
	default:
		return "session"
	}
}

// ModernMode is the exposure a 2026-07-28 client gets for mode (as
// resolved): dynamic becomes search.
func ModernMode(mode string) string {
	if mode == config.ExposureDynamic {
		return config.ExposureSearch
	}
	return mode
}

// Meta returns the _meta of a request, nil when it has none.
func Meta(req mcp.Request) map[string]any {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil // a request without params
	}
	return p.GetMeta()
}

// Version is the protocol version a request's _meta claims, "" when it
// claims none.
func Version(meta map[string]any) string {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// ClientName is how a client names itself in a request's _meta or its
// initialize: "name version", shortened.
func ClientName(impl *mcp.Implementation) string {
	if impl == nil {
		return ""
	}
	n := strings.TrimSpace(impl.Name + " " + impl.Version)
	if len(n) > 80 {
		n = n[:80] + "…"
	}
	return n
}

// MetaClient is how the client names itself in a request's _meta
// (ClientName of its clientInfo), "" when it does not.
func MetaClient(meta map[string]any) string { return ClientName(MetaImpl(meta)) }

// MetaImpl is the clientInfo of a request's _meta, nil when it has none
// (or one that is not an Implementation).
func MetaImpl(meta map[string]any) *mcp.Implementation {
	raw, ok := meta[mcp.MetaKeyClientInfo]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var impl mcp.Implementation
	if json.Unmarshal(b, &impl) != nil {
		return nil
	}
	return &impl
}

// IsNotification reports whether method names a notification.
func IsNotification(method string) bool { return strings.HasPrefix(method, "notifications/") }

// Refusal is the error of a request refused for its era. An error of code
// mcp.CodeUnsupportedProtocolVersion carries the versions supported and
// the one requested as its data.
func Refusal(code int64, msg string, supported []string, requested string) error {
	err := &jsonrpc.Error{Code: code, Message: msg}
	if code == mcp.CodeUnsupportedProtocolVersion {
		err.Data, _ = json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: supported, Requested: requested})
	}
	return err
}

// CheckMetaSize refuses a _meta over MaxMetaBytes, or one that cannot be
// encoded, with an invalid-params error; it returns nil otherwise.
func CheckMetaSize(meta map[string]any) error {
	if len(meta) == 0 {
		return nil
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the request's _meta cannot be encoded: %v", err)}
	}
	if len(b) > MaxMetaBytes {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("the request's _meta is %d bytes, more than the %d accepted", len(b), MaxMetaBytes)}
	}
	return nil
}
