package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixture is a small OpenAPI v2 document in the shape of Kubernetes's: a
// kind in a named group, one in the core group, shared definitions, a
// recursive one, an int-or-string, a quantity and an object that keeps
// unknown fields.
const fixture = `{
  "swagger": "2.0",
  "definitions": {
    "io.k8s.api.zoo.v1.Otter": {
      "type": "object",
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"$ref": "#/definitions/io.k8s.meta.v1.ObjectMeta"},
        "spec": {"$ref": "#/definitions/io.k8s.api.zoo.v1.OtterSpec"}
      },
      "x-kubernetes-group-version-kind": [{"group": "zoo.example.io", "kind": "Otter", "version": "v1"}]
    },
    "io.k8s.api.zoo.v1.OtterSpec": {
      "type": "object",
      "properties": {
        "count": {"type": "integer", "format": "int32"},
        "port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "memory": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-preserve-unknown-fields": true},
        "schema": {"$ref": "#/definitions/io.k8s.api.zoo.v1.Props"},
        "inner": {"type": "object", "properties": {"b": {"type": "string"}}},
        "scale": {"type": "string", "format": "int-or-string"}
      }
    },
    "io.k8s.api.zoo.v1.Props": {
      "type": "object",
      "properties": {
        "properties": {"type": "object", "additionalProperties": {"$ref": "#/definitions/io.k8s.api.zoo.v1.Props"}},
        "format": {"type": "string"}
      }
    },
    "io.k8s.meta.v1.ObjectMeta": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string", "description": "a port"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.api.core.v1.Pebble": {
      "type": "object",
      "properties": {"kind": {"type": "string"}, "weight": {"type": "number"}},
      "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pebble", "version": "v1"}]
    },
    "io.k8s.unused.Thing": {"type": "object", "properties": {"x": {"type": "string"}}}
  }
}`

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConvert(t *testing.T) {
	t.Parallel()
	out, err := convert([]byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range out {
		names = append(names, n)
	}
	if want := []string{"otter-zoo-v1.json", "pebble-v1.json"}; len(names) != 2 || out[want[0]] == nil || out[want[1]] == nil {
		t.Fatalf("files %v, want %v", names, want)
	}

	otter := decode(t, out["otter-zoo-v1.json"])
	defs, _ := otter["definitions"].(map[string]any)
	for _, name := range []string{"io.k8s.meta.v1.ObjectMeta", "io.k8s.api.zoo.v1.OtterSpec", "io.k8s.api.zoo.v1.Props",
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity"} {
		if defs[name] == nil {
			t.Errorf("the Otter schema does not carry %s", name)
		}
	}
	if defs["io.k8s.unused.Thing"] != nil || defs["io.k8s.api.zoo.v1.Otter"] != nil {
		t.Errorf("the Otter schema carries definitions it does not use: %v", keys(defs))
	}
	if otter["additionalProperties"] != false {
		t.Error("the Otter schema takes fields it does not list")
	}

	spec := defs["io.k8s.api.zoo.v1.OtterSpec"].(map[string]any)
	props := spec["properties"].(map[string]any)
	either := func(name string, s any, other string) {
		t.Helper()
		want := []any{map[string]any{"type": "string"}, map[string]any{"type": other}}
		if got := s.(map[string]any)["oneOf"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: oneOf %v, want %v", name, got, want)
		}
	}
	either("IntOrString", defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"], "integer")
	either("Quantity", defs["io.k8s.apimachinery.pkg.api.resource.Quantity"], "number")
	if d := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"].(map[string]any)["description"]; d != "a port" {
		t.Errorf("the IntOrString description is %v", d)
	}
	either("an inline int-or-string", props["scale"], "integer")
	if props["inner"].(map[string]any)["additionalProperties"] != false {
		t.Error("an inline object takes fields it does not list")
	}
	if _, set := props["extra"].(map[string]any)["additionalProperties"]; set {
		t.Error("an object Kubernetes keeps unknown fields of was made strict")
	}
	if props["labels"].(map[string]any)["additionalProperties"].(map[string]any)["type"] != "string" {
		t.Error("a map's value schema was lost")
	}

	// A property named "properties" is a property, not a schema keyword.
	p := defs["io.k8s.api.zoo.v1.Props"].(map[string]any)
	pp := p["properties"].(map[string]any)
	if _, mangled := pp["additionalProperties"]; mangled || len(pp) != 2 {
		t.Errorf("Props' properties became %v", keys(pp))
	}
	if p["additionalProperties"] != false {
		t.Error("Props takes fields it does not list")
	}

	pebble := decode(t, out["pebble-v1.json"])
	if _, has := pebble["definitions"]; has {
		t.Error("the Pebble schema carries definitions, though it uses none")
	}
	if pebble["$schema"] != "http://json-schema.org/draft-04/schema#" {
		t.Errorf("$schema %v", pebble["$schema"])
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestConvertRefusesBadDocuments(t *testing.T) {
	t.Parallel()
	kind := `"x-kubernetes-group-version-kind": [{"group": "", "kind": "A", "version": "v1"}]`
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", `{"definitions": `, "not an OpenAPI document"},
		{"no definitions", `{"swagger": "2.0"}`, "no definitions"},
		{"no kinds", `{"definitions": {"a": {"type": "string"}}}`, "no definition names a kind"},
		{"a null definition", `{"definitions": {"a": null}}`, "definition a is null"},
		{"a reference to nothing", `{"definitions": {"a": {"properties": {"b": {"$ref": "#/definitions/gone"}}, ` + kind + `}}}`,
			"kind A: reference to gone, which the document does not define"},
		{"a reference elsewhere", `{"definitions": {"a": {"properties": {"b": {"$ref": "https://example.com/x.json"}}, ` + kind + `}}}`,
			`reference "https://example.com/x.json" is not to a definition`},
		{"one kind twice", `{"definitions": {"a": {` + kind + `}, "b": {` + kind + `}}}`, "two definitions of a-v1.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := convert([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// A kind whose name or group would reach outside the output folder is
// left out rather than written there.
func TestConvertKeepsFilesInTheFolder(t *testing.T) {
	t.Parallel()
	doc := `{"definitions": {
	  "a": {"x-kubernetes-group-version-kind": [{"group": "", "kind": "../../etc/Evil", "version": "v1"}]},
	  "b": {"x-kubernetes-group-version-kind": [{"group": "x/..", "kind": "Evil", "version": "v1"}]},
	  "c": {"x-kubernetes-group-version-kind": [{"group": "", "kind": "Good", "version": "v1"}]}}}`
	out, err := convert([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range out {
		names = append(names, n)
	}
	if len(out) != 1 || out["good-v1.json"] == nil {
		t.Errorf("files %q, want good-v1.json only", names)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(src, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "schemas", "v1")
	n, err := run(src, out)
	if err != nil || n != 2 {
		t.Fatalf("run: %d, %v; want 2 schemas", n, err)
	}
	if _, err := os.Stat(filepath.Join(out, "otter-zoo-v1.json")); err != nil {
		t.Error(err)
	}
	if _, err := run(filepath.Join(dir, "absent.json"), out); err == nil {
		t.Error("no error for a document that is not there")
	}
}

// FuzzConvert: any input gives schemas or an error, never a panic.
func FuzzConvert(f *testing.F) {
	f.Add([]byte(fixture))
	f.Add([]byte(`{"definitions": {"a": {"x-kubernetes-group-version-kind": [{"kind": "A", "version": "v1"}], "properties": {"b": {"$ref": "#/definitions/a"}}}}}`))
	f.Add([]byte(`{"definitions": {"a": {"x-kubernetes-group-version-kind": "A"}}}`))
	f.Add([]byte(`{"definitions": {"a": {"items": [1, {"format": "int-or-string"}], "allOf": "x", "properties": 3}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := convert(data)
		if err == nil && len(out) == 0 {
			t.Error("no schemas and no error")
		}
		for name := range out {
			if strings.ContainsAny(name, `/\`) {
				t.Errorf("file name %q leaves the folder", name)
			}
		}
	})
}
