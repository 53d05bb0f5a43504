package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/toolsearch/toolsearch/internal/safefile"
	"io"
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
// "toolKeywords", "alwaysLoad", "title" and "version") or the bare array of
// tools. "keywords" are extra search words for every tool of the server,
// "toolKeywords" maps a tool name to extra words for that tool alone (both
// formats accept them):
//
//	{"github": {"tools": [{"name": "create_issue", ...}], "keywords": ["gh"]},
//	 "slack":  [{"name": "post_message", ...}]}
//
// In both, a tool definition is kept byte for byte. A server key may appear
// only once. In the plain format, a top-level "servers" whose value is an
// array is read as the collected format, so that name is reserved.

// LoadFile reads a catalog file in either format.
func LoadFile(path string) (*Snapshot, error) {
	f, err := safefile.Open(path)
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
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	top, keys, err := objectMembers(data)
	if err != nil {
		return nil, err
	}
	if raw, ok := top["servers"]; ok && isCollected(raw) {
		return parseCollected(raw)
	}
	return parsePlain(top, keys)
}

// objectMembers reads a JSON object's members in order, refusing a key that
// appears twice (encoding/json would silently keep the last).
func objectMembers(data []byte) (map[string]json.RawMessage, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	m := map[string]json.RawMessage{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("invalid JSON: %w", err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("invalid JSON in %q: %w", k, err)
		}
		if _, dup := m[k]; dup {
			return nil, nil, fmt.Errorf("server %q appears twice", k)
		}
		m[k] = v
		keys = append(keys, k)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("invalid JSON: data after the top-level object")
	}
	return m, keys, nil
}

// isCollected reports whether a top-level "servers" member is the collected
// format's array. In the plain format "servers" therefore cannot name a
// server whose value is a bare array of tools.
func isCollected(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '['
}

type collectedServer struct {
	Key        string            `json:"key"`
	ServerName string            `json:"server_name"`
	Package    string            `json:"package"`
	Version    string            `json:"version"`
	Keywords   []string          `json:"keywords"`
	AlwaysLoad bool              `json:"alwaysLoad"`
	Tools      []json.RawMessage `json:"tools"`
	// ToolKeywords maps a tool name to extra search words for that tool.
	ToolKeywords map[string][]string `json:"toolKeywords"`
}

func parseCollected(raw json.RawMessage) ([]*Server, error) {
	var list []collectedServer
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("\"servers\": %w", err)
	}
	out := make([]*Server, 0, len(list))
	seen := map[string]bool{}
	for i, cs := range list {
		if err := ValidKey(cs.Key); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		if seen[cs.Key] {
			return nil, fmt.Errorf("servers[%d]: duplicate server key %q", i, cs.Key)
		}
		seen[cs.Key] = true
		title := cs.ServerName
		if title == cs.Key || title == cs.Package {
			title = ""
		}
		srv := &Server{Key: cs.Key, Title: title, Package: cs.Package, Version: cs.Version,
			Keywords: cs.Keywords, AlwaysLoad: cs.AlwaysLoad}
		if err := addTools(srv, cs.Tools); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		if err := addToolKeywords(srv, cs.ToolKeywords); err != nil {
			return nil, fmt.Errorf("servers[%d]: %w", i, err)
		}
		out = append(out, srv)
	}
	return out, nil
}

type plainServer struct {
	Title        string              `json:"title"`
	Version      string              `json:"version"`
	Keywords     []string            `json:"keywords"`
	AlwaysLoad   bool                `json:"alwaysLoad"`
	Tools        []json.RawMessage   `json:"tools"`
	ToolKeywords map[string][]string `json:"toolKeywords"`
}

func parsePlain(top map[string]json.RawMessage, keys []string) ([]*Server, error) {
	keys = append([]string(nil), keys...)
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
		if err := addToolKeywords(srv, ps.ToolKeywords); err != nil {
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

// addToolKeywords gives named tools of srv extra search words. A name that
// is not one of the server's tools is an error.
func addToolKeywords(srv *Server, kw map[string][]string) error {
	for name, words := range kw {
		found := false
		for _, t := range srv.Tools {
			if t.Name == name {
				t.Keywords = append(t.Keywords, words...)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("server %q: \"toolKeywords\" names %q, which is not one of its tools", srv.Key, name)
		}
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
