package catalog

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodedParams is the straightforward reading of a schema's parameters with
// encoding/json, which schemaParams must match.
func decodedParams(schema json.RawMessage) []Param {
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
	type prop struct {
		Description string `json:"description"`
		Title       string `json:"title"`
	}
	var loose map[string]json.RawMessage
	if json.Unmarshal(s.Properties, &loose) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []Param
	for _, name := range objectKeys(s.Properties) {
		v, ok := loose[name]
		if !ok {
			continue
		}
		var p prop
		_ = json.Unmarshal(v, &p)
		d := p.Description
		if d == "" {
			d = p.Title
		}
		out = append(out, Param{Name: name, Description: d, Required: req[name]})
	}
	return out
}

var paramSchemas = []string{
	``,
	`null`,
	`{}`,
	`[]`,
	`"x"`,
	`{"type":"object"}`,
	`{"type":"object","properties":{}}`,
	`{"type":"object","properties":null}`,
	`{"type":"object","properties":[1]}`,
	`{"type":"object","properties":{"a":{"type":"string","description":"The A"},"b":{"title":"Bee"}},"required":["b"]}`,
	`{"required":["zeta","nope"],"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","description":"α \u00e9 \"q\""}},"type":"object"}`,
	`{"properties":{"a":1,"b":"x","c":null,"d":{"description":2,"title":"T"},"e":[{"description":"no"}]}}`,
	`{"properties":{"a":{},"a":{"description":"dup"}}}`,
	`{"properties":{"a":{"description":"first"}},"properties":{"b":{}}}`,
	`{"Properties":{"a":{"Description":"case","description":"lower"}}}`,
	`{"properties":{"a":{"description":"x"}},"required":[1]}`,
	`{"properties":{"a":{"description":"x"}},"required":"a"}`,
	`{"properties":{"a":{"description":"x"}},"required":["a",null]}`,
	`{"properties":{"x\"y":{"description":"quoted"},"\u00e9":{},"nested":{"type":"object","properties":{"inner":{"description":"not top"}},"description":"outer"}}}`,
	` { "properties" : { "k" : { "description" : "spaced" } , "l" : { } } } `,
	`{"properties":{"a":{"description":"tab\there","title":"t"}}}`,
	`{"properties":{"a":{"description":""},"b":{"description":"","title":"fallback"}}}`,
	`{"properties":{"a":{"description":"\ud800"}}}`,
	`{"properties":{"a":{"description":"x"}}`,
	`{"properties":{"a":{"description":"x"}}}}`,
	`{"properties":{"a":{"description":tru}}}`,
	`{"properties":{"a":{"description":"x","deep":[[[{"description":"y"}]]]}}}`,
}

func TestSchemaParamsMatchesDecoding(t *testing.T) {
	t.Parallel()
	for _, s := range paramSchemas {
		if !json.Valid([]byte(s)) {
			// Schemas reach schemaParams only from definitions that
			// parsed; invalid text must merely not panic.
			schemaParams(json.RawMessage(s))
			continue
		}
		got, want := schemaParams(json.RawMessage(s)), decodedParams(json.RawMessage(s))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("schemaParams(%s)\n got %+v\nwant %+v", s, got, want)
		}
	}
}

func FuzzSchemaParams(f *testing.F) {
	for _, s := range paramSchemas {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		got := schemaParams(schema)
		if !json.Valid(schema) {
			return
		}
		if want := decodedParams(schema); !reflect.DeepEqual(got, want) {
			t.Fatalf("schemaParams(%s)\n got %+v\nwant %+v", schema, got, want)
		}
	})
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

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\n\t\"\\\/"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, "\"\xff\"", `"\x"`, `"\u12"`, `"a` + "\x01" + `"`, `"é"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := jsonString(raw)
		var want string
		werr := json.Unmarshal(raw, &want)
		if werr != nil || len(raw) == 0 || raw[0] != '"' || raw[len(raw)-1] != '"' {
			return // jsonString only meets a string token, quote to quote
		}
		if !ok || got != want {
			t.Fatalf("jsonString(%q) = %q, %v; encoding/json gives %q", raw, got, ok, want)
		}
	})
}
