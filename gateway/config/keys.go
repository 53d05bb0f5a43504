package config

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
)

// A keySet is what one level of a configuration may hold: its known keys,
// each with the keys of its value when that is an object (nil: any
// value), or, for an object keyed by names (mcpServers, env), the keys of
// every value.
type keySet struct {
	keys map[string]*keySet
	each *keySet
	// open levels accept unknown keys quietly unless one is a near miss
	// of a known key (the top level: a client's own file has its own
	// settings there).
	open bool
	// quiet keys are read by other MCP clients and accepted, unused.
	quiet map[string]bool
}

// clientKeys are server-entry keys that other MCP clients read (so that
// their files load unchanged) and toolsearch does not use.
var clientKeys = []string{
	"autoApprove", "alwaysAllow", "disabledTools", "timeout", "transportType", // Cline, Roo Code
	"envFile", "dev", "gallery", "version", // VS Code
	"description", "name", "icon", // several clients
	"trust", "includeTools", "excludeTools", "oauth", "authProviderType", // Gemini CLI
	"enabled_tools", "disabled_tools", "startup_timeout_sec", "tool_timeout_sec", // Codex
}

// schemaOf lists the keys a Go type with json tags reads; json.RawMessage
// and other leaves read any value.
func schemaOf(t reflect.Type) *keySet {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t == reflect.TypeFor[[]byte]() {
			return nil
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		ks := &keySet{keys: map[string]*keySet{}}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			ks.keys[name] = schemaOf(f.Type)
		}
		return ks
	case reflect.Map:
		if child := schemaOf(t.Elem()); child != nil {
			return &keySet{each: child}
		}
	}
	return nil
}

// merge adds b's keys to a (both read the same object).
func merge(a, b *keySet) *keySet {
	for k, v := range b.keys {
		a.keys[k] = v
	}
	return a
}

// documentKeys is the schema of a whole configuration file.
func documentKeys() *keySet {
	server := schemaOf(reflect.TypeFor[rawServer]())
	server.quiet = map[string]bool{}
	for _, k := range clientKeys {
		server.quiet[strings.ToLower(k)] = true
	}
	gateway := merge(merge(schemaOf(reflect.TypeFor[rawGateway]()), schemaOf(reflect.TypeFor[rawServe]())),
		schemaOf(reflect.TypeFor[rawClusterTop]()))
	gateway = merge(gateway, schemaOf(reflect.TypeFor[rawDashboardTop]()))
	gateway = merge(gateway, schemaOf(reflect.TypeFor[rawLearningTop]()))
	gateway = merge(gateway, schemaOf(reflect.TypeFor[rawTracingTop]()))
	gateway = merge(gateway, schemaOf(reflect.TypeFor[rawEnrichTop]()))
	gateway.keys["builtins"] = nil // read, and checked, by package builtin
	servers := &keySet{each: server}
	return &keySet{open: true, keys: map[string]*keySet{
		"mcpServers": servers, "servers": servers, "toolsearch": gateway, "$schema": nil,
	}}
}

// checkKeys reports the first key of data (JSON with comments) that no
// level of the configuration reads, with its line, column and the nearest
// key it may have meant. Keys match case-insensitively, as encoding/json
// reads them.
func checkKeys(data []byte) *Error {
	v, err := hujson.Parse(data)
	if err != nil {
		return nil // Standardize reports syntax errors, with their place
	}
	return walkKeys(data, v, documentKeys(), nil)
}

func walkKeys(data []byte, v hujson.Value, ks *keySet, path []string) *Error {
	obj, ok := v.Value.(*hujson.Object)
	if !ok || ks == nil {
		return nil
	}
	for _, m := range obj.Members {
		lit, ok := m.Name.Value.(hujson.Literal)
		if !ok {
			continue
		}
		name := lit.String()
		var child *keySet
		switch {
		case ks.each != nil:
			child = ks.each
		default:
			found := false
			for k, c := range ks.keys {
				if strings.EqualFold(k, name) {
					child, found = c, true
					break
				}
			}
			if !found && ks.quiet[strings.ToLower(name)] {
				continue
			}
			if !found {
				near, dist := nearest(name, ks.keys)
				if ks.open && dist > 2 {
					continue
				}
				return unknownKey(data, m.Name.StartOffset, name, near, dist, ks, path)
			}
		}
		if err := walkKeys(data, m.Value, child, append(path, name)); err != nil {
			return err
		}
	}
	return nil
}

// unknownKey is the error for a key no level reads.
func unknownKey(data []byte, off int, name, near string, dist int, ks *keySet, path []string) *Error {
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := 1 + off - (bytes.LastIndexByte(data[:off], '\n') + 1)
	msg := fmt.Sprintf("line %d, column %d: unknown key %q", line, col, name)
	if dist <= 3 && near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	} else {
		known := make([]string, 0, len(ks.keys))
		for k := range ks.keys {
			known = append(known, k)
		}
		sort.Strings(known)
		msg += "; known keys here: " + strings.Join(known, ", ")
	}
	e := &Error{Err: fmt.Errorf("%s", msg)}
	field := append([]string(nil), path...)
	if len(field) >= 2 && (field[0] == "mcpServers" || field[0] == "servers") {
		e.Server, field = field[1], field[2:]
	}
	e.Field = strings.Join(append(field, name), ".")
	return e
}

// nearest returns the known key closest to name by edit distance (case
// ignored), and the distance.
func nearest(name string, keys map[string]*keySet) (string, int) {
	best, bestD := "", 1<<30
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names) // ties go to the first in order
	for _, k := range names {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
