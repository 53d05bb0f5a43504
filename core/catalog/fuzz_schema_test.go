package catalog

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseTool feeds one tool definition, as an upstream server's
// tools/list would carry it, to ParseTool and checks what is kept: the
// bytes exactly as received, the fields read from them, the parameters of
// the input schema (each a property of the schema, once, in document
// order), a definition that is valid JSON whenever the input is, and a
// token count.
func FuzzParseTool(f *testing.F) {
	for _, s := range []string{
		`{"name":"x"}`,
		`{"name":"create_issue","title":"Create issue","description":"Create an issue.","inputSchema":{"type":"object","properties":{"title":{"type":"string","description":"The title"},"body":{"title":"Body"}},"required":["title"]}}`,
		`{"inputSchema":{"required":["zeta"],"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"type":"object"},"name":"odd","_meta":{"zz":1}}`,
		`{"name":"m","_meta":{"anthropic/alwaysLoad":true,"anthropic/searchHint":"find me"},"annotations":{"title":"T","readOnlyHint":true}}`,
		`{"name":"n","inputSchema":null,"outputSchema":{"type":"object"},"annotations":null}`,
		`{"name":"p","inputSchema":{"type":"object","properties":{"a":1,"b":"x","c":null,"d":{"description":2}}}}`,
		`{"name":"q","inputSchema":{"properties":{"a":{},"a":{"description":"dup"}}}}`,
		`{"name":"r","inputSchema":{"type":"object","properties":{"x\"y":{"description":"quoted"},"é":{}}}}`,
		`{"name":"s","inputSchema":"not an object"}`,
		`{"name":"t","inputSchema":[1,2]}`,
		`{"name":"u","inputSchema":{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}}`,
		`{"name":" "}`,
		`{"Name":"v"}`,
		`{"name":7}`,
		`{"name":"w","description":"\ud800"}`,
		`{"name":"x", "inputSchema" : { "type" : "object" , "properties" : { "k" : { } } } }`,
		`[]`,
		`null`,
		``,
	} {
		f.Add("srv", []byte(s))
	}
	f.Fuzz(func(t *testing.T, server string, raw []byte) {
		tool, err := ParseTool(server, raw)
		if err != nil {
			if tool != nil {
				t.Fatalf("ParseTool returned a tool with error %v", err)
			}
			return
		}
		if tool.Server != server || tool.Name == "" || len(bytes.TrimSpace([]byte(tool.Name))) == 0 {
			t.Fatalf("tool %q of %q from %q", tool.Name, tool.Server, raw)
		}
		if !bytes.Equal(tool.Raw, raw) {
			t.Fatalf("Raw changed: %q → %q", raw, tool.Raw)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", raw, err)
		}
		for key, got := range map[string]json.RawMessage{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema,
			"annotations": tool.Annotations, "_meta": tool.Meta} {
			want := fields[key]
			if string(want) == "null" {
				want = nil
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: kept %q, the definition has %q", key, got, want)
			}
		}
		var name string
		if json.Unmarshal(fields["name"], &name) != nil || name != tool.Name {
			t.Fatalf("name %q, the definition has %s", tool.Name, fields["name"])
		}
		def := tool.Definition()
		if !json.Valid(def) {
			t.Fatalf("Definition() is not valid JSON: %q", def)
		}
		var d struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(def, &d); err != nil || d.Name != tool.Name {
			t.Fatalf("Definition() %q: %v", def, err)
		}
		if len(tool.InputSchema) > 0 {
			var compact bytes.Buffer
			if json.Compact(&compact, tool.InputSchema) == nil && !bytes.Equal(d.InputSchema, compact.Bytes()) {
				t.Fatalf("Definition() changed the schema: %q → %q", tool.InputSchema, d.InputSchema)
			}
		}
		if tool.Tokens() < 1 {
			t.Fatalf("%d tokens", tool.Tokens())
		}
		// Parameters: each a property of the schema, once, in document
		// order.
		var schema struct {
			Properties json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(tool.InputSchema, &schema)
		var props map[string]json.RawMessage
		_ = json.Unmarshal(schema.Properties, &props)
		order := objectKeys(schema.Properties)
		seen := map[string]bool{}
		last := -1
		for _, p := range tool.Params() {
			if _, ok := props[p.Name]; !ok {
				t.Fatalf("parameter %q is not a property of %s", p.Name, tool.InputSchema)
			}
			if seen[p.Name] {
				t.Fatalf("parameter %q twice", p.Name)
			}
			seen[p.Name] = true
			i := indexOf(order, p.Name)
			if i <= last {
				t.Fatalf("parameters out of document order in %s", tool.InputSchema)
			}
			last = i
		}
	})
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}
