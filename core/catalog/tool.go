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
	"unicode/utf16"
	"unicode/utf8"
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
	// Hints are search phrasings written for the tool ahead of time (by
	// toolsearch enrich, or read from a hints file): the words people would
	// type to find it. The search index gives them a field of their own.
	Hints []string

	tokensOnce sync.Once
	tokens     int
	paramsOnce sync.Once
	params     []Param
	idOnce     sync.Once
	id         string
}

// ID returns the tool's qualified ID, "<server>/<name>". It is built on
// the first call and kept, so a tool's Server and Name must not change
// once its ID has been asked for (a snapshot's tools never change).
func (t *Tool) ID() string {
	t.idOnce.Do(func() { t.id = t.Server + IDSeparator + t.Name })
	return t.id
}

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
	if sc := (jsonScan{b: raw}); json.Valid(raw) && sc.object(func(key, val []byte) bool {
		if fields == nil {
			fields = make(map[string]json.RawMessage, 8)
		}
		if k, ok := jsonString(key); ok {
			fields[k] = val // the last of two equal names wins, as in encoding/json
		}
		return true
	}) {
		if fields == nil {
			fields = map[string]json.RawMessage{}
		}
	} else if err := json.Unmarshal(raw, &fields); err != nil {
		// Not an object: encoding/json says why.
		return nil, fmt.Errorf("tool definition of server %q: %w", server, err)
	}
	if fields == nil {
		return nil, fmt.Errorf("tool definition of server %q: not an object", server)
	}
	var w wireTool
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &w.Name}, {"title", &w.Title}, {"description", &w.Description}} {
		v, ok := fields[f.key]
		if !ok || string(v) == "null" {
			continue
		}
		if str, ok := jsonString(v); ok {
			*f.dst = str
		} else if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, fmt.Errorf("tool definition of server %q: field %q: %w", server, f.key, err)
		}
	}
	w.InputSchema, w.OutputSchema = fields["inputSchema"], fields["outputSchema"]
	w.Annotations, w.Meta = fields["annotations"], fields["_meta"]
	if strings.TrimSpace(w.Name) == "" {
		return nil, fmt.Errorf("tool definition of server %q: missing \"name\"", server)
	}
	// One copy of the definition: the raw members are parts of Raw.
	own := append(json.RawMessage(nil), raw...)
	t := &Tool{
		Server:       server,
		Name:         w.Name,
		Title:        w.Title,
		Description:  w.Description,
		InputSchema:  partOf(raw, own, w.InputSchema),
		OutputSchema: partOf(raw, own, w.OutputSchema),
		Annotations:  partOf(raw, own, w.Annotations),
		Meta:         partOf(raw, own, w.Meta),
		Raw:          own,
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

// partOf returns member r of the definition raw (nil when it is absent or
// null) as the same bytes of own, raw's copy, so that a tool keeps its
// definition once. A member that is not a part of raw (decoded apart) is
// copied. The part's capacity ends with it: appending to it never writes
// over the rest of own.
func partOf(raw, own, r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	// A part of raw starts where raw's capacity and its own differ by.
	if at := cap(raw) - cap(r); at >= 0 && at+len(r) <= len(raw) && bytes.Equal(raw[at:at+len(r)], r) {
		return own[at : at+len(r) : at+len(r)]
	}
	return append(json.RawMessage(nil), r...)
}

// schemaParams lists the top-level properties of a JSON Schema object in
// document order.
//
// It reads the schema in one pass, without decoding it into maps: at start
// up a gateway reads the parameters of thousands of cached tools. It
// follows encoding/json's reading of the schema: member names match
// without regard to case and the last of two equal names wins, a property
// keeps the place where its name first appears, a description or title
// that is not a string counts as absent, a property that is not an object
// has no description, and a "required" that is not a list of names, or a
// schema that is not an object, gives no parameters.
func schemaParams(schema json.RawMessage) []Param {
	sc := jsonScan{b: schema}
	var props []byte
	var required []string
	ok := sc.object(func(key []byte, val []byte) bool {
		switch {
		case keyIs(key, "properties"):
			props = val
		case keyIs(key, "required"):
			r, ok := stringList(val)
			if !ok {
				return false
			}
			required = r
		}
		return true
	})
	if !ok || len(props) == 0 || props[0] != '{' {
		return nil
	}
	var out []Param
	at := map[string]int{}
	pr := jsonScan{b: props}
	pr.object(func(key []byte, val []byte) bool {
		name, ok := jsonString(key)
		if !ok {
			return true
		}
		var desc, title string
		if len(val) > 0 && val[0] == '{' {
			v := jsonScan{b: val}
			v.object(func(k, x []byte) bool {
				switch {
				case keyIs(k, "description"):
					desc, _ = jsonString(x)
				case keyIs(k, "title"):
					title, _ = jsonString(x)
				}
				return true
			})
		}
		if desc == "" {
			desc = title
		}
		if i, dup := at[name]; dup {
			out[i].Description = desc
			return true
		}
		at[name] = len(out)
		out = append(out, Param{Name: name, Description: desc})
		return true
	})
	if len(out) == 0 {
		return nil
	}
	for _, r := range required {
		if i, ok := at[r]; ok {
			out[i].Required = true
		}
	}
	return out
}

// keyIs reports whether a raw JSON member name (quotes included) names
// want, without regard to case, as encoding/json matches struct fields.
func keyIs(raw []byte, want string) bool {
	if len(raw) == len(want)+2 && bytes.IndexByte(raw, '\\') < 0 {
		return strings.EqualFold(string(raw[1:len(raw)-1]), want)
	}
	s, ok := jsonString(raw)
	return ok && strings.EqualFold(s, want)
}

// jsonString decodes a raw JSON string; ok is false for any other value.
// Like encoding/json, it turns invalid UTF-8 and lone surrogates into
// U+FFFD.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true
	}
	b := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\':
			if i+1 >= len(body) {
				return "", false
			}
			switch e := body[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(body[i+2:])
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(body[min(i+2, len(body)):]); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	return string(b), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// stringList decodes null or a JSON list of strings.
func stringList(raw []byte) ([]string, bool) {
	if string(raw) == "null" {
		return nil, true
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var out []string
	if json.Unmarshal(raw, &out) != nil {
		return nil, false
	}
	return out, true
}

// jsonScan walks JSON text that is already known to be valid, without
// decoding it. On text that is not valid it stops early; it never reads
// out of bounds.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value skips one value and returns its text.
func (s *jsonScan) value() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i >= len(s.b) {
		return nil, false
	}
	switch s.b[s.i] {
	case '"':
		if !s.str() {
			return nil, false
		}
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			return nil, false
		}
	default:
		for s.i < len(s.b) {
			c := s.b[s.i]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			s.i++
		}
		if s.i == start {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// str skips a string starting at s.i.
func (s *jsonScan) str() bool {
	i := s.i + 1
	for {
		j := bytes.IndexByte(s.b[i:], '"')
		if j < 0 {
			s.i = len(s.b)
			return false
		}
		i += j
		// The quote ends the string unless an odd number of backslashes
		// precede it.
		n := 0
		for k := i - 1; k > s.i && s.b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			s.i = i
			return true
		}
	}
}

// object calls member for each member of the object at s.i, in document
// order, until it returns false. It reports false when the text is not an
// object or member stopped it.
func (s *jsonScan) object(member func(key, val []byte) bool) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	for {
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			return true
		case ',':
			s.i++
			continue
		case '"':
		default:
			return false
		}
		start := s.i
		if !s.str() {
			return false
		}
		key := s.b[start:s.i]
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		val, ok := s.value()
		if !ok || !member(key, val) {
			return false
		}
	}
}
