package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/internal/safefile"
)

// maxManifestBytes bounds a cached manifest read back.
const maxManifestBytes = 256 << 20

func manifestPath(dir, key string) string {
	return filepath.Join(dir, "manifests", key+".json")
}

// loadManifest reads a cached manifest; it returns nil when there is none or
// it does not match the server's configuration.
func loadManifest(dir string, s *config.Server) (*upstream.Manifest, error) {
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
	var m upstream.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cached manifest %s: %w", manifestPath(dir, s.Key), err)
	}
	if m.Key != s.Key || m.Fingerprint != upstream.Fingerprint(s) {
		return nil, nil
	}
	return &m, nil
}

// saveManifest writes m atomically.
func saveManifest(dir string, m *upstream.Manifest) error {
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
func declaresResources(m *upstream.Manifest) bool {
	if m == nil {
		return false
	}
	if m.Capabilities != nil {
		return m.Capabilities.Resources != nil
	}
	return len(m.Resources) > 0 || len(m.Templates) > 0
}
