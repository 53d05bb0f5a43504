package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// A manifest is what one server last listed. Manifests are cached in the
// state directory as <stateDir>/manifests/<server key>.json:
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
type manifest struct {
	Key         string                  `json:"key"`
	Fingerprint string                  `json:"fingerprint"`
	SavedAt     time.Time               `json:"savedAt"`
	Tokens      int                     `json:"tokens"`
	Tools       []json.RawMessage       `json:"tools"`
	Resources   []*mcp.Resource         `json:"resources,omitempty"`
	Templates   []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	Prompts     []*mcp.Prompt           `json:"prompts,omitempty"`
	// Skills are the server's skills/list entries as it sent them
	// (skills.go).
	Skills []json.RawMessage `json:"skills,omitempty"`
	// Capabilities are what the server declared in its initialize
	// result; nil in a manifest cached before they were recorded.
	Capabilities *mcp.ServerCapabilities `json:"capabilities,omitempty"`
}

// maxManifestBytes bounds a cached manifest read back.
const maxManifestBytes = 256 << 20

// fingerprint hashes what identifies a server's tool list.
func fingerprint(s *config.Server) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", s.Transport, s.Command, strings.Join(s.Args, "\x00"), s.URL)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func manifestPath(dir, key string) string {
	return filepath.Join(dir, "manifests", key+".json")
}

// loadManifest reads a cached manifest; it returns nil when there is none or
// it does not match the server's configuration.
func loadManifest(dir string, s *config.Server) (*manifest, error) {
	if dir == "" {
		return nil, nil
	}
	data, err := safefile.ReadFile(manifestPath(dir, s.Key), maxManifestBytes)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cached manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cached manifest %s: %w", manifestPath(dir, s.Key), err)
	}
	if m.Key != s.Key || m.Fingerprint != fingerprint(s) {
		return nil, nil
	}
	return &m, nil
}

// saveManifest writes m atomically.
func saveManifest(dir string, m *manifest) error {
	if dir == "" {
		return nil
	}
	p := manifestPath(dir, m.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("save manifest %s: %w", m.Key, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), m.Key+".*.tmp")
	if err != nil {
		return fmt.Errorf("save manifest: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("save manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save manifest: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save manifest: %w", err)
	}
	return nil
}

// declaresResources reports whether a server declared the resources
// capability when it was last listed. A manifest cached before
// capabilities were recorded counts when it lists resources.
func declaresResources(m *manifest) bool {
	if m == nil {
		return false
	}
	if m.Capabilities != nil {
		return m.Capabilities.Resources != nil
	}
	return len(m.Resources) > 0 || len(m.Templates) > 0
}
