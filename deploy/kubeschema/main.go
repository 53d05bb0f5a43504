// Command kubeschema writes the JSON schemas kubeconform checks
// Kubernetes manifests against, from the OpenAPI (v2) document the
// Kubernetes source tree publishes (api/openapi-spec/swagger.json).
//
// kubeconform fetches such schemas from the web by default; where that
// cannot be reached, this makes them from the Kubernetes module the Go
// module proxy serves:
//
//	dir=$(go mod download -json k8s.io/kubernetes@v1.37.2 | ...) # its "Dir"
//	go run ./deploy/kubeschema -o schemas "$dir/api/openapi-spec/swagger.json"
//	kubeconform -strict -schema-location 'schemas/{{.ResourceKind}}{{.KindSuffix}}.json' deploy/kubernetes
//
// One file is written per kind the document defines, named as kubeconform's
// {{.ResourceKind}}{{.KindSuffix}} names it (deployment-apps-v1.json,
// service-v1.json). Each is standalone: the definitions it refers to are
// carried inside it. The schemas are strict, as kubeconform -strict
// expects: an object that lists its properties takes no others (unless
// Kubernetes marks it x-kubernetes-preserve-unknown-fields), so a
// misspelt field is an error. A value Kubernetes accepts as a number or a
// string (IntOrString, Quantity) may be either.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	out := flag.String("o", "", "the folder to write the schemas to (made if absent)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: kubeschema -o DIR SWAGGER.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	n, err := run(flag.Arg(0), *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kubeschema: %d schemas in %s\n", n, *out)
}

// run converts the document at path and writes its schemas to dir.
func run(path, dir string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	schemas, err := convert(data)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), schemas[name], 0o644); err != nil {
			return 0, err
		}
	}
	return len(names), nil
}

// quantity ends the name of the definition of a resource quantity
// ("500m", "1Gi"), which Kubernetes also takes as a plain number.
const quantity = ".pkg.api.resource.Quantity"

// refPrefix is how the document's references to its definitions begin.
const refPrefix = "#/definitions/"

// convert returns the schemas of the kinds defined in an OpenAPI v2
// document, by file name.
func convert(data []byte) (map[string][]byte, error) {
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %w", err)
	}
	if len(doc.Definitions) == 0 {
		return nil, errors.New("no definitions: not the OpenAPI (v2) document of a Kubernetes API")
	}
	defs := make(map[string]map[string]any, len(doc.Definitions))
	for name, d := range doc.Definitions {
		if d == nil {
			return nil, fmt.Errorf("definition %s is null", name)
		}
		if strings.HasSuffix(name, quantity) {
			defs[name] = eitherOf(d, "number")
		} else {
			defs[name] = rewrite(d)
		}
	}

	out := map[string][]byte{}
	for name, d := range defs {
		kk := kinds(doc.Definitions[name])
		if len(kk) == 0 {
			continue
		}
		// One schema serves every kind the definition is (DeleteOptions
		// is one in each group).
		used, err := reachable(defs, name)
		if err != nil {
			return nil, fmt.Errorf("kind %s: %w", kk[0].Kind, err)
		}
		schema := maps.Clone(d)
		schema["$schema"] = "http://json-schema.org/draft-04/schema#"
		if len(used) > 0 {
			schema["definitions"] = used
		}
		b, err := json.MarshalIndent(schema, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("kind %s: %w", kk[0].Kind, err)
		}
		for _, k := range kk {
			file := k.fileName()
			if _, dup := out[file]; dup {
				return nil, fmt.Errorf("two definitions of %s (%s among them)", file, name)
			}
			out[file] = b
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no definition names a kind (x-kubernetes-group-version-kind)")
	}
	return out, nil
}

// gvk is a group, version and kind, as a definition names them.
type gvk struct {
	Group, Version, Kind string
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json for
// the kind: the kind, the group's first label (core has none) and the
// version, in lower case.
func (k gvk) fileName() string {
	name := strings.ToLower(k.Kind)
	if k.Group != "" {
		name += "-" + strings.ToLower(strings.Split(k.Group, ".")[0])
	}
	return name + "-" + strings.ToLower(k.Version) + ".json"
}

// kinds returns the kinds a definition is the schema of.
func kinds(def map[string]any) []gvk {
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	var out []gvk
	for _, item := range list {
		m, _ := item.(map[string]any)
		k := gvk{}
		k.Group, _ = m["group"].(string)
		k.Version, _ = m["version"].(string)
		k.Kind, _ = m["kind"].(string)
		if k.Kind == "" || k.Version == "" || strings.ContainsAny(k.Kind+k.Group+k.Version, `/\`) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// rewrite returns a copy of a schema in the form kubeconform checks by:
// values that may be an integer or a string are allowed to be either, and
// objects that list their properties take no others.
func rewrite(s map[string]any) map[string]any {
	if s["format"] == "int-or-string" || s["x-kubernetes-int-or-string"] == true {
		return eitherOf(s, "integer")
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		switch k {
		case "properties", "patternProperties", "definitions":
			out[k] = rewriteEach(v)
		case "items", "additionalProperties", "not":
			if list, ok := v.([]any); ok {
				out[k] = rewriteList(list)
			} else if m, ok := v.(map[string]any); ok {
				out[k] = rewrite(m)
			} else {
				out[k] = v
			}
		case "allOf", "anyOf", "oneOf":
			list, _ := v.([]any)
			out[k] = rewriteList(list)
		default:
			out[k] = v
		}
	}
	_, props := s["properties"].(map[string]any)
	_, set := s["additionalProperties"]
	if props && !set && s["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out
}

// rewriteEach rewrites the schemas of a map of them (properties by name).
func rewriteEach(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for name, s := range m {
		if sm, ok := s.(map[string]any); ok {
			out[name] = rewrite(sm)
		} else {
			out[name] = s
		}
	}
	return out
}

// rewriteList rewrites a list of schemas.
func rewriteList(list []any) []any {
	out := make([]any, len(list))
	for i, s := range list {
		if sm, ok := s.(map[string]any); ok {
			out[i] = rewrite(sm)
		} else {
			out[i] = s
		}
	}
	return out
}

// eitherOf is a string schema s that also takes a value of another type.
func eitherOf(s map[string]any, other string) map[string]any {
	out := map[string]any{"oneOf": []any{
		map[string]any{"type": "string"},
		map[string]any{"type": other},
	}}
	if d, ok := s["description"]; ok {
		out["description"] = d
	}
	return out
}

// reachable returns the definitions the named one refers to, directly or
// through others, by name (the name itself only if it refers to itself).
func reachable(defs map[string]map[string]any, name string) (map[string]any, error) {
	used := map[string]any{}
	var visit func(v any) error
	visit = func(v any) error {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				target, found := strings.CutPrefix(ref, refPrefix)
				if !found {
					return fmt.Errorf("reference %q is not to a definition of the document", ref)
				}
				if _, seen := used[target]; seen {
					return nil
				}
				d, ok := defs[target]
				if !ok {
					return fmt.Errorf("reference to %s, which the document does not define", target)
				}
				used[target] = d
				if err := visit(d); err != nil {
					return err
				}
			}
			for k, val := range x {
				if k == "$ref" {
					continue
				}
				if err := visit(val); err != nil {
					return err
				}
			}
		case []any:
			for _, val := range x {
				if err := visit(val); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return used, visit(defs[name])
}
