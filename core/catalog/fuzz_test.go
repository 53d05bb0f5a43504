package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts is
// well formed: every tool named, belonging to a parsed server, and the
// servers usable in a snapshot.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		``,
		`{}`,
		`[]`,
		`null`,
		`{"a": []}`,
		`{"a": [{"name": "x"}]}`,
		`{"a": {"tools": [{"name": "x", "inputSchema": {"type": "object", "properties": {"p": {"description": "d"}}, "required": ["p"]}}]}}`,
		`{"a": {"title": "A", "version": "1", "keywords": ["k"], "alwaysLoad": true, "tools": [{"name": "x", "_meta": {"anthropic/alwaysLoad": true, "anthropic/searchHint": "h"}}]}}`,
		`{"a": [{"name": "x"}, {"name": "x"}]}`,
		`{"a": [{"name": ""}]}`,
		`{"a": [{"name": " "}]}`,
		`{"a": 1}`,
		`{"a/b": []}`,
		`{"a": [{"name": "x", "annotations": {"title": "T"}}], "b": [{"name": "x"}]}`,
		`{"servers": []}`,
		`{"servers": [{"key": "k", "server_name": "K", "package": "p", "version": "1", "tools": [{"name": "t"}]}]}`,
		`{"servers": [{"key": "k"}, {"key": "k"}]}`,
		`{"servers": [{"key": ""}]}`,
		`{"servers": [null]}`,
		`{"servers": {"tools": [{"name": "t"}]}}`,
		`{"servers": "x"}`,
		`{"a": [{"name": "x", "inputSchema": null, "_meta": null}]}`,
		`{"a": [{"name": "\u0000", "description": "\ud800"}]}`,
		"{\"a\": [{\"name\": \"x\"}]}\n",
		`{"a": [{"name": "x"}]} trailing`,
	} {
		f.Add([]byte(seed))
	}
	for _, name := range []string{"plain.json", "collected.json"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Parse(data)
		if err != nil {
			if servers != nil {
				t.Fatalf("Parse returned %d servers along with error %v", len(servers), err)
			}
			return
		}
		keys := make(map[string]bool, len(servers))
		for _, srv := range servers {
			if srv == nil {
				t.Fatal("Parse returned a nil server")
			}
			if err := ValidKey(srv.Key); err != nil {
				t.Fatalf("Parse accepted server key %q: %v", srv.Key, err)
			}
			keys[srv.Key] = true
		}
		for _, srv := range servers {
			names := map[string]bool{}
			for _, tool := range srv.Tools {
				if tool == nil {
					t.Fatalf("server %q: nil tool", srv.Key)
				}
				if tool.Name == "" {
					t.Fatalf("server %q: tool with an empty name", srv.Key)
				}
				if !keys[tool.Server] || tool.Server != srv.Key {
					t.Fatalf("tool %q of server %q says its server is %q", tool.Name, srv.Key, tool.Server)
				}
				if names[tool.Name] {
					t.Fatalf("server %q: duplicate tool %q accepted", srv.Key, tool.Name)
				}
				names[tool.Name] = true
				if !json.Valid(tool.Raw) {
					t.Fatalf("%s: Raw is not valid JSON: %q", tool.ID(), tool.Raw)
				}
				if def := tool.Definition(); !json.Valid(def) {
					t.Fatalf("%s: Definition() is not valid JSON: %q", tool.ID(), def)
				}
				_ = tool.Params()
			}
		}
		s, err := NewSnapshot(servers...)
		if err != nil {
			t.Fatalf("Parse accepted servers that NewSnapshot rejects: %v", err)
		}
		if err := checkConsistent(s); err != nil {
			t.Fatal(err)
		}
	})
}
