package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// Catalog files come in two formats, told apart by their top level.
//
// The collected format is an object with a "servers" array; each element has
// a "key", optional "server_name", "package" and "version", and "tools", the
// verbatim tools/list result entries:
//
//	{"servers": [{"key": "github", "package": "...", "version": "1.0.0",
//	              "tools": [{"name": "create_issue", "inputSchema": {...}}]}]}
//
// The plain format is an object keyed by server name. Each value is either a
// tools/list result ({"tools": [...]}, optionally with "keywords",
// "alwaysLoad", "title" and "version") or the bare array of tools:
//
//	{"github": {"tools": [{"name": "create_issue", ...}], "keywords": ["gh"]},
//	 "slack":  [{"name": "post_message", ...}]}
//
// In both, a tool definition is kept byte for byte.

// LoadFile reads a catalog file in either format.
func LoadFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	s, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	return s, nil
}

// maxCatalogBytes bounds what Load reads.
const maxCatalogBytes = 512 << 20

// Load reads a catalog in either format from r.
func Load(r io.Reader) (*Snapshot, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCatalogBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCatalogBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxCatalogBytes)
	}
	servers, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(servers...)
}

// Parse reads the servers of a catalog in either format.
func Parse(data []byte) ([]*Server, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("a catalog must be a JSON object")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if raw, ok := top["servers"]; ok && len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '[' {
		return parseCollected(raw)
	}
	return parsePlain(top)
}

type collectedServer struct {
	Key        string            `json:"key"`
	ServerName string            `json:"server_name"`
	Package    string            `json:"package"`
	Version    string            `json:"version"`
	Keywords   []string          `json:"keywords"`
	AlwaysLoad bool              `json:"alwaysLoad"`
	Tools      []json.RawMessage `json:"tools"`
}

func parseCollected(raw json.RawMessage) ([]*Server, error) {
	var list []collectedServer
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("\"servers\": %w", err)
	}
	out := make([]*Server, 0, len(list))
	for i, cs := range list {
		if err := ValidKey(cs.Key); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		title := cs.ServerName
		if title == cs.Key || title == cs.Package {
			title = ""
		}
		srv := &Server{Key: cs.Key, Title: title, Package: cs.Package, Version: cs.Version,
			Keywords: cs.Keywords, AlwaysLoad: cs.AlwaysLoad}
		if err := addTools(srv, cs.Tools); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		out = append(out, srv)
	}
	return out, nil
}

type plainServer struct {
	Title      string            `json:"title"`
	Version    string            `json:"version"`
	Keywords   []string          `json:"keywords"`
	AlwaysLoad bool              `json:"alwaysLoad"`
	Tools      []json.RawMessage `json:"tools"`
}

func parsePlain(top map[string]json.RawMessage) ([]*Server, error) {
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*Server, 0, len(keys))
	for _, k := range keys {
		if err := ValidKey(k); err != nil {
			return nil, err
		}
		raw := bytes.TrimSpace(top[k])
		var ps plainServer
		switch {
		case len(raw) > 0 && raw[0] == '[':
			if err := json.Unmarshal(raw, &ps.Tools); err != nil {
				return nil, fmt.Errorf("server %q: %w", k, err)
			}
		case len(raw) > 0 && raw[0] == '{':
			if err := json.Unmarshal(raw, &ps); err != nil {
				return nil, fmt.Errorf("server %q: %w", k, err)
			}
		default:
			return nil, fmt.Errorf("server %q: want an object with \"tools\" or an array of tools", k)
		}
		srv := &Server{Key: k, Title: ps.Title, Version: ps.Version, Keywords: ps.Keywords, AlwaysLoad: ps.AlwaysLoad}
		if err := addTools(srv, ps.Tools); err != nil {
			return nil, err
		}
		out = append(out, srv)
	}
	return out, nil
}

// addTools parses raw tool definitions into srv, applying the server's
// keywords and always-load mark to each tool.
func addTools(srv *Server, raws []json.RawMessage) error {
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		t, err := ParseTool(srv.Key, raw)
		if err != nil {
			return fmt.Errorf("tools[%d]: %w", i, err)
		}
		if seen[t.Name] {
			return fmt.Errorf("server %q: duplicate tool name %q", srv.Key, t.Name)
		}
		seen[t.Name] = true
		t.Keywords = append(t.Keywords, srv.Keywords...)
		t.AlwaysLoad = t.AlwaysLoad || srv.AlwaysLoad
		srv.Tools = append(srv.Tools, t)
	}
	return nil
}

// NewServer builds a server from raw tools/list entries, as a gateway does
// with what an upstream server returned. Keywords and alwaysLoad apply to
// every tool.
func NewServer(key string, raws []json.RawMessage, keywords []string, alwaysLoad bool) (*Server, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	srv := &Server{Key: key, Keywords: keywords, AlwaysLoad: alwaysLoad}
	if err := addTools(srv, raws); err != nil {
		return nil, err
	}
	return srv, nil
}
