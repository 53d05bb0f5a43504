package gateway

// The tool list of full exposure of one catalog version, which every
// session in full mode shares (full.go).

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/builtin"
)

// fullPageSize is how many tools one tools/list page of full exposure
// holds: the MCP library's default page size.
const fullPageSize = mcp.DefaultPageSize

// fullList is the tool list of full exposure of one snapshot and naming.
type fullList struct {
	snap  *catalog.Snapshot
	names *resolver
	tools []*mcp.Tool // sorted by name
	has   map[string]bool
	// servers are the keys of the servers with a tool in the list.
	servers map[string]bool
	// headers are the x-mcp-header parameters of the tools that have
	// some, by name (paramheaders.go).
	headers map[string][]paramBinding
	sum     [sha256.Size]byte // of the names and definitions: equal lists, equal sums
}

// without returns the list less the built-in tools named in off.
func (fl *fullList) without(off map[string]bool) *fullList {
	out := &fullList{snap: fl.snap, names: fl.names, has: map[string]bool{}, servers: map[string]bool{}, headers: fl.headers}
	if fl.names == nil {
		out.servers = fl.servers
	}
	h := sha256.New()
	for _, t := range fl.tools {
		var ct *catalog.Tool
		if fl.names != nil {
			ct = fl.names.byName[t.Name]
		}
		if ct != nil && ct.Server == builtin.Key && off[ct.Name] {
			continue
		}
		out.tools = append(out.tools, t)
		out.has[t.Name] = true
		fmt.Fprintf(h, "%d:%s", len(t.Name), t.Name)
		if ct != nil {
			fmt.Fprintf(h, "%d:%s", len(ct.Raw), ct.Raw)
			out.servers[ct.Server] = true
		}
	}
	copy(out.sum[:], h.Sum(nil))
	return out
}

// page answers tools/list: the tools after the cursor's name.
func (fl *fullList) page(cursor string) (*mcp.ListToolsResult, error) {
	start := 0
	if cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", cursor)}
		}
		start = sort.Search(len(fl.tools), func(i int) bool { return fl.tools[i].Name > string(after) })
	}
	end := min(start+fullPageSize, len(fl.tools))
	res := &mcp.ListToolsResult{Tools: append([]*mcp.Tool{}, fl.tools[start:end]...)}
	if end < len(fl.tools) {
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(fl.tools[end-1].Name))
	}
	return res, nil
}
