// Package catalog holds the tools that toolsearch knows about: their
// definitions exactly as their servers sent them, grouped by server, in
// immutable versioned snapshots.
//
// The package does no I/O beyond reading catalog files and imports no
// transport or SDK. A Snapshot is never modified after it is made; a change
// produces a new Snapshot and a Diff, so a reader holding a snapshot never
// sees a half-applied change.
package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Meta keys honoured on a tool's _meta object.
const (
	// MetaAlwaysLoad marks a tool that must never be deferred.
	MetaAlwaysLoad = "anthropic/alwaysLoad"
	// MetaSearchHint carries extra words a tool author wants the tool to be
	// found by.
	MetaSearchHint = "anthropic/searchHint"
)

// IDSeparator joins a server key and a tool name in a tool ID
// ("github/create_issue").
const IDSeparator = "/"

// WireSeparator joins a server key and a tool name in the name a tool is
// exposed under to a model ("github__create_issue").
const WireSeparator = "__"

// Tool is one tool definition as a server sent it, plus what the operator
// added. Raw, InputSchema, OutputSchema, Annotations and Meta hold the bytes
// exactly as received; nothing is re-encoded on the way through.
//
// A Tool is immutable once it is part of a Snapshot.
type Tool struct {
	// Server is the key of the server that provides the tool.
	Server string
	// Name is the tool's name as its server gives it.
	Name string
	// Title is the optional human-readable title.
	Title string
	// Description is the tool's description.
	Description string
	// InputSchema is the raw JSON Schema of the arguments.
	InputSchema json.RawMessage
	// OutputSchema is the raw JSON Schema of the structured result, if any.
	OutputSchema json.RawMessage
	// Annotations is the raw annotations object, if any.
	Annotations json.RawMessage
	// Meta is the raw _meta object, if any.
	Meta json.RawMessage
	// Raw is the whole definition object as received.
	Raw json.RawMessage
	// Keywords are extra search words supplied by the operator for this tool
	// (or inherited from its server).
	Keywords []string
	// AlwaysLoad is true when the tool must never be deferred, from
	// _meta["anthropic/alwaysLoad"] or the operator's configuration.
	AlwaysLoad bool
	// SearchHint is _meta["anthropic/searchHint"], if it is a string.
	SearchHint string

	tokensOnce sync.Once
	tokens     int
	paramsOnce sync.Once
	params     []Param
}

// ID returns the tool's qualified ID, "<server>/<name>".
func (t *Tool) ID() string { return t.Server + IDSeparator + t.Name }

// WireName returns the name the tool is exposed under when tools of many
// servers share one list, "<server>__<name>".
func (t *Tool) WireName() string { return t.Server + WireSeparator + t.Name }

// Params returns the tool's top-level parameters (name and description) in
// the order they appear in the input schema. A schema that cannot be read
// yields no parameters. The result is computed once and shared: callers must
// not modify it.
func (t *Tool) Params() []Param {
	t.paramsOnce.Do(func() { t.params = schemaParams(t.InputSchema) })
	return t.params
}

// Param is one top-level property of a tool's input schema.
type Param struct {
	Name        string
	Description string
	Required    bool
}

// Tokens returns the size of the tool's definition in o200k tokens, counted
// over the Anthropic-style definition {name, description, input_schema}. The
// count is computed once and cached.
func (t *Tool) Tokens() int {
	t.tokensOnce.Do(func() { t.tokens = CountTokens(string(t.Definition())) })
	return t.tokens
}

// Definition returns the tool as a compact Anthropic-style definition
// {"name","description","input_schema"}. The schema is compacted (white
// space between tokens removed) and otherwise unchanged.
func (t *Tool) Definition() []byte {
	var b bytes.Buffer
	name, _ := json.Marshal(t.Name)
	desc, _ := json.Marshal(t.Description)
	b.WriteString(`{"name":`)
	b.Write(name)
	b.WriteString(`,"description":`)
	b.Write(desc)
	b.WriteString(`,"input_schema":`)
	if len(t.InputSchema) == 0 {
		b.WriteString(`{"type":"object"}`)
	} else if err := json.Compact(&b, t.InputSchema); err != nil {
		b.Write(t.InputSchema)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// wireTool is the JSON shape of an MCP tool definition, as far as the
// catalog needs to read it.
type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Meta         json.RawMessage `json:"_meta"`
}

// ParseTool reads one MCP tool definition (an element of a tools/list
// result) for the given server. The definition's bytes are kept as they are.
func ParseTool(server string, raw json.RawMessage) (*Tool, error) {
	// Field names are matched exactly, as MCP defines them (encoding/json
	// alone would also accept "Name" or "NAME").
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("tool definition of server %q: %w", server, err)
	}
	if fields == nil {
		return nil, fmt.Errorf("tool definition of server %q: not an object", server)
	}
	var w wireTool
	for _, f := range []struct {
		key string
		dst any
	}{{"name", &w.Name}, {"title", &w.Title}, {"description", &w.Description}} {
		v, ok := fields[f.key]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, fmt.Errorf("tool definition of server %q: field %q: %w", server, f.key, err)
		}
	}
	w.InputSchema, w.OutputSchema = fields["inputSchema"], fields["outputSchema"]
	w.Annotations, w.Meta = fields["annotations"], fields["_meta"]
	if strings.TrimSpace(w.Name) == "" {
		return nil, fmt.Errorf("tool definition of server %q: missing \"name\"", server)
	}
	t := &Tool{
		Server:       server,
		Name:         w.Name,
		Title:        w.Title,
		Description:  w.Description,
		InputSchema:  nullToEmpty(w.InputSchema),
		OutputSchema: nullToEmpty(w.OutputSchema),
		Annotations:  nullToEmpty(w.Annotations),
		Meta:         nullToEmpty(w.Meta),
		Raw:          append(json.RawMessage(nil), raw...),
	}
	if t.Title == "" && len(t.Annotations) > 0 {
		var a struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(t.Annotations, &a) == nil {
			t.Title = a.Title
		}
	}
	if len(t.Meta) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(t.Meta, &m) == nil {
			var b bool
			if json.Unmarshal(m[MetaAlwaysLoad], &b) == nil && b {
				t.AlwaysLoad = true
			}
			var s string
			if json.Unmarshal(m[MetaSearchHint], &s) == nil {
				t.SearchHint = s
			}
		}
	}
	return t, nil
}

func nullToEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}

// schemaParams lists the top-level properties of a JSON Schema object in
// document order.
func schemaParams(schema json.RawMessage) []Param {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	var props map[string]struct {
		Description string `json:"description"`
		Title       string `json:"title"`
	}
	if json.Unmarshal(s.Properties, &props) != nil {
		// Properties that are not all objects: read what can be read.
		var loose map[string]json.RawMessage
		if json.Unmarshal(s.Properties, &loose) != nil {
			return nil
		}
		props = make(map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		}, len(loose))
		for k, v := range loose {
			p := props[k]
			_ = json.Unmarshal(v, &p)
			props[k] = p
		}
	}
	req := make(map[string]bool, len(s.Required))
	for _, r := range s.Required {
		req[r] = true
	}
	out := make([]Param, 0, len(props))
	for _, name := range objectKeys(s.Properties) {
		p, ok := props[name]
		if !ok {
			continue
		}
		d := p.Description
		if d == "" {
			d = p.Title
		}
		out = append(out, Param{Name: name, Description: d, Required: req[name]})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// objectKeys returns the member names of a valid JSON object in document
// order, without decoding the values. A name that appears twice is listed
// once.
func objectKeys(obj []byte) []string {
	var keys []string
	seen := map[string]bool{}
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			start := i
			for i++; i < len(obj) && obj[i] != '"'; i++ {
				if obj[i] == '\\' {
					i++
				}
			}
			if depth != 1 {
				continue
			}
			// A string at depth 1 followed by ':' is a member name.
			j := i + 1
			for j < len(obj) && (obj[j] == ' ' || obj[j] == '\t' || obj[j] == '\n' || obj[j] == '\r') {
				j++
			}
			if j < len(obj) && obj[j] == ':' {
				var k string
				if json.Unmarshal(obj[start:i+1], &k) == nil && !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	return keys
}
