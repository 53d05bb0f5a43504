package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// A Manifest is what one server last listed. The gateway caches manifests
// in its state directory as <stateDir>/manifests/<server key>.json:
//
//	{"key": "github", "fingerprint": "…", "savedAt": "2026-…",
//	 "tokens": 12345,                       // o200k tokens of the tools
//	 "tools": [ … tools/list entries, byte for byte … ],
//	 "resources": [ … ], "resourceTemplates": [ … ], "prompts": [ … ],
//	 "capabilities": { … }}                 // what the server declared
//
// The fingerprint hashes how the server is started (transport, command,
// args, url); a manifest whose fingerprint differs from the configuration is
// ignored.
type Manifest struct {
	Key         string                  `json:"key"`
	Fingerprint string                  `json:"fingerprint"`
	SavedAt     time.Time               `json:"savedAt"`
	Tokens      int                     `json:"tokens"`
	Tools       []json.RawMessage       `json:"tools"`
	Resources   []*mcp.Resource         `json:"resources,omitempty"`
	Templates   []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	Prompts     []*mcp.Prompt           `json:"prompts,omitempty"`
	// Skills are the server's skills/list entries as it sent them
	// (Owner.ListSkills).
	Skills []json.RawMessage `json:"skills,omitempty"`
	// Capabilities are what the server declared in its initialize
	// result; nil in a manifest cached before they were recorded.
	Capabilities *mcp.ServerCapabilities `json:"capabilities,omitempty"`
}

// Fingerprint hashes what identifies a server's tool list.
func Fingerprint(s *config.Server) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", s.Transport, s.Command, strings.Join(s.Args, "\x00"), s.URL)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
