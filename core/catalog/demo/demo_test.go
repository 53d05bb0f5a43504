package demo

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

func TestSnapshotParses(t *testing.T) {
	t.Parallel()
	s := Snapshot()
	if s == nil {
		t.Fatal("Snapshot() = nil")
	}
	if s.Version() != 1 {
		t.Errorf("Version() = %d, want 1", s.Version())
	}
	if got := len(s.Servers()); got < 8 {
		t.Errorf("%d servers, want at least 8", got)
	}
	if got := len(s.Tools()); got < 60 {
		t.Errorf("%d tools, want at least 60", got)
	}
	if Snapshot() != s {
		t.Error("Snapshot() returned a different snapshot on a second call")
	}
	// The same bytes also load through the generic loader.
	l, err := catalog.Load(bytes.NewReader(JSON()))
	if err != nil {
		t.Fatalf("catalog.Load(JSON()): %v", err)
	}
	if len(l.Tools()) != len(s.Tools()) {
		t.Errorf("Load gives %d tools, Snapshot %d", len(l.Tools()), len(s.Tools()))
	}
}

func TestEveryToolIsComplete(t *testing.T) {
	t.Parallel()
	for _, srv := range Snapshot().Servers() {
		if srv.Title == "" {
			t.Errorf("server %q has no title", srv.Key)
		}
		if len(srv.Tools) == 0 {
			t.Errorf("server %q has no tools", srv.Key)
		}
		seen := map[string]bool{}
		for _, tool := range srv.Tools {
			if seen[tool.Name] {
				t.Errorf("server %q: duplicate tool name %q", srv.Key, tool.Name)
			}
			seen[tool.Name] = true
			if tool.Description == "" {
				t.Errorf("%s: empty description", tool.ID())
			}
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
				t.Errorf("%s: input schema: %v", tool.ID(), err)
				continue
			}
			if schema.Type != "object" {
				t.Errorf("%s: input schema type %q, want object", tool.ID(), schema.Type)
			}
			if schema.Properties == nil {
				t.Errorf("%s: input schema has no properties object", tool.ID())
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("%s: required %q is not a property", tool.ID(), r)
				}
			}
			for _, p := range tool.Params() {
				if p.Description == "" {
					t.Errorf("%s: parameter %q has no description", tool.ID(), p.Name)
				}
			}
			if tool.Tokens() <= 0 {
				t.Errorf("%s: Tokens() = %d", tool.ID(), tool.Tokens())
			}
		}
	}
}

// The demo is meant to exercise the parts of a definition the search engine
// reads: _meta hints, annotations and mixed naming conventions.
func TestDemoCoversFeatures(t *testing.T) {
	t.Parallel()
	var alwaysLoad, hints, annotated, titled int
	var snake, kebab, camel bool
	for _, tool := range Snapshot().Tools() {
		if tool.AlwaysLoad {
			alwaysLoad++
		}
		if tool.SearchHint != "" {
			hints++
		}
		if len(tool.Annotations) > 0 {
			annotated++
		}
		if tool.Title != "" {
			titled++
		}
		name := tool.Name
		switch {
		case bytes.ContainsRune([]byte(name), '_'):
			snake = true
		case bytes.ContainsRune([]byte(name), '-'):
			kebab = true
		case bytes.ContainsAny([]byte(name), "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
			camel = true
		}
	}
	if alwaysLoad < 1 {
		t.Error("no tool has _meta anthropic/alwaysLoad")
	}
	if hints < 2 {
		t.Errorf("%d tools have a search hint, want at least 2", hints)
	}
	if annotated < 10 {
		t.Errorf("%d tools have annotations, want at least 10", annotated)
	}
	if titled < 1 {
		t.Error("no tool has a title")
	}
	if !snake || !kebab || !camel {
		t.Errorf("naming conventions: snake_case %v, kebab-case %v, camelCase %v; want all", snake, kebab, camel)
	}
}
