package gateway

// Mcp-Param-* headers (MCP 2026-07-28). A tool's input schema may mark a
// primitive parameter with x-mcp-header: NAME, and a client then sends
// that argument's value in the header Mcp-Param-NAME too, so that proxies
// and load balancers can route on it without reading the body. A server
// must refuse a tools/call whose headers do not say what its body says
// (HTTP 400, -32020): otherwise what was routed on is not what is done.
//
// The MCP library checks this for the tools registered with its server.
// The tools of full exposure are not (fulllist.go), so the gateway checks
// their calls itself, before the library's handler, with the same rules:
//
//   - an argument present (and not null) needs its header, with its value:
//     a string as it is or as =?base64?…?= (standard Base64, padded), an
//     integer in decimal, a boolean as true or false;
//   - an argument absent or null must have no header;
//   - an argument that is not a primitive cannot be carried in a header.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

const (
	paramHeaderPrefix = "Mcp-Param-"
	b64Prefix         = "=?base64?"
	b64Suffix         = "?="
	// maxSafeInt is the largest integer a JSON number holds exactly.
	maxSafeInt = 1<<53 - 1
)

// paramBinding is one parameter of a tool's input schema carried in a
// header: the property names leading to it, and the header's name (after
// Mcp-Param-).
type paramBinding struct {
	path   []string
	header string
}

// schemaProps is what paramBindings reads of an input schema.
type schemaProps struct {
	Properties map[string]struct {
		XMCPHeader json.RawMessage `json:"x-mcp-header"`
		schemaProps
	} `json:"properties"`
}

// paramBindings returns the x-mcp-header parameters of an input schema, at
// any depth of properties. A schema that does not decode has none (the
// library refused such a tool already when the list was built).
func paramBindings(schema json.RawMessage) []paramBinding {
	var s schemaProps
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return collectBindings(s, nil, nil)
}

func collectBindings(s schemaProps, prefix []string, out []paramBinding) []paramBinding {
	for name, p := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
			out = append(out, paramBinding{path: path, header: header})
		}
		out = collectBindings(p.schemaProps, path, out)
	}
	return out
}

// errHeaderMismatch is the error of headers that do not match the body.
var errHeaderMismatch = errors.New("header mismatch")

// checkParamHeaders checks a tools/call's Mcp-Param-* headers against its
// arguments (a JSON object, or empty) for the tool's bindings.
func checkParamHeaders(h http.Header, args json.RawMessage, bindings []paramBinding) error {
	if len(bindings) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &obj); err != nil {
			return fmt.Errorf("%w: the arguments are not a JSON object, so their Mcp-Param headers cannot be checked", errHeaderMismatch)
		}
	}
	for _, b := range bindings {
		name := paramHeaderPrefix + b.header
		param := strings.Join(b.path, ".")
		got := h.Get(name)
		raw, ok := lookupArg(obj, b.path)
		if !ok || string(raw) == "null" {
			if got != "" {
				return fmt.Errorf("%w: %s is set but the argument %q is absent or null", errHeaderMismatch, name, param)
			}
			continue
		}
		if got == "" {
			return fmt.Errorf("%w: the argument %q is given but its %s header is missing", errHeaderMismatch, param, name)
		}
		decoded, err := decodeParamHeader(got)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errHeaderMismatch, name, err)
		}
		want, ok := primitiveText(raw)
		if !ok {
			return fmt.Errorf("%w: %s is set but the argument %q is not a string, an integer or a boolean", errHeaderMismatch, name, param)
		}
		if !sameParam(decoded, want, raw) {
			return fmt.Errorf("%w: %s does not say what the argument %q says", errHeaderMismatch, name, param)
		}
	}
	return nil
}

// lookupArg follows path through nested argument objects.
func lookupArg(obj map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := json.RawMessage(nil), false
	for i, part := range path {
		if i > 0 {
			obj = nil
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, ok
}

// decodeParamHeader is a header's value: as it is, or the text its
// =?base64?…?= form encodes.
func decodeParamHeader(v string) (string, error) {
	inner, ok := strings.CutPrefix(v, b64Prefix)
	if !ok {
		return v, nil
	}
	inner, ok = strings.CutSuffix(inner, b64Suffix)
	if !ok {
		return v, nil // no suffix: a literal value
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", fmt.Errorf("the value is not valid Base64 (standard alphabet, padded): %v", err)
	}
	return string(b), nil
}

// primitiveText is the text an argument is carried as in its header: a
// string as it is, an integer (exactly representable) in decimal, a boolean
// as true or false. ok is false for anything else.
func primitiveText(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > maxSafeInt {
			return "", false
		}
		return strconv.FormatInt(int64(x), 10), true
	}
	return "", false
}

// sameParam compares a header's decoded value with the argument's text:
// an integer as a number (so 1.0 says 1), anything else as text.
func sameParam(header, want string, raw json.RawMessage) bool {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		h, err := strconv.ParseFloat(header, 64)
		return err == nil && !math.IsInf(h, 0) && h == math.Trunc(h) && math.Abs(h) <= maxSafeInt &&
			strconv.FormatInt(int64(h), 10) == want
	}
	return header == want
}
