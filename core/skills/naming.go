package skills

// Names across servers. Two servers may both serve skill://pdf-forms/SKILL.md;
// those are two skills. An aggregator serves each under a URI of its own
// that puts the server's key first:
//
//	skill://pdf-forms/SKILL.md      of server docs  →  skill://docs/pdf-forms/SKILL.md
//	github://o/r/refunds/SKILL.md   of server gh    →  skill://gh~github/o/r/refunds/SKILL.md
//
// The key takes the URI's authority, percent-encoded but for ASCII letters,
// digits, "-", "." and "_" (so that "~", which separates a scheme other
// than skill:// from the key, never occurs in it). The skill's own path
// follows unchanged, so its name is still the last segment before
// SKILL.md, as the extension requires, and the key is the first segment
// of its organisational prefix. The mapping is one to one: Unqualify
// recovers the server and the server's own URI from an aggregated one.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// Scheme is the scheme of aggregated skill URIs.
const Scheme = "skill"

// Qualify returns the URI under which an aggregator serves the resource
// uri of server key.
func Qualify(key, uri string) (string, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !validScheme(scheme) {
		return "", fmt.Errorf("%.200q is not a URI of the form scheme://path", uri)
	}
	auth := escapeKey(key)
	if scheme != Scheme {
		auth += "~" + scheme
	}
	return Scheme + "://" + auth + "/" + rest, nil
}

// Unqualify reverses Qualify: the server's key and its own URI. ok is
// false for a URI Qualify cannot have made.
func Unqualify(uri string) (key, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, Scheme+"://")
	if !ok {
		return "", "", false
	}
	auth, path, ok := strings.Cut(rest, "/")
	if !ok || path == "" || auth == "" {
		return "", "", false
	}
	escKey, scheme, other := strings.Cut(auth, "~")
	if !other {
		scheme = Scheme
	} else if !validScheme(scheme) {
		return "", "", false
	}
	key, ok = unescapeKey(escKey)
	if !ok || key == "" {
		return "", "", false
	}
	return key, scheme + "://" + path, true
}

func keepByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}

const upperHex = "0123456789ABCDEF"

func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if keepByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// unescapeKey decodes escapeKey's form, and only it: a key written any
// other way (lowercase hex, a kept byte escaped) is refused, so that one
// server has one URI.
func unescapeKey(s string) (string, bool) {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !keepByte(c) {
				return "", false
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, lo := strings.IndexByte(upperHex, s[i+1]), strings.IndexByte(upperHex, s[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		d := byte(hi<<4 | lo)
		if keepByte(d) {
			return "", false
		}
		b = append(b, d)
		i += 2
	}
	return string(b), true
}

// SearchServer makes the search documents of one server's skills: a tool
// per skill, named after the skill's path (its segments joined by ".",
// other bytes a tool name cannot have turned to "_", a "-2", "-3"... on a
// name taken), described by the skill's description, titled by its path.
// names[i] is the document name of entries[i]. Documents carry no
// parameters, so a skill is found by its name, path and description.
func SearchServer(key string, entries []*Entry) (srv *catalog.Server, names []string, err error) {
	raws := make([]json.RawMessage, 0, len(entries))
	names = make([]string, len(entries))
	taken := make(map[string]bool, len(entries))
	for i, e := range entries {
		base := docName(e.Path)
		n := base
		for k := 2; taken[n]; k++ {
			suffix := fmt.Sprintf("-%d", k)
			n = base[:min(len(base), catalog.MaxNameLength-len(suffix))] + suffix
		}
		taken[n] = true
		names[i] = n
		raw, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}{n, e.Path, e.Description, json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return nil, nil, err
		}
		raws = append(raws, raw)
	}
	srv, err = catalog.NewServer(key, raws, nil, false)
	if err != nil {
		return nil, nil, fmt.Errorf("skills of server %q: %w", key, err)
	}
	return srv, names, nil
}

// docName turns a skill path into a tool name.
func docName(path string) string {
	b := []byte(strings.ReplaceAll(path, "/", "."))
	for i, c := range b {
		if !catalog.NameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) > catalog.MaxNameLength-8 {
		b = b[len(b)-(catalog.MaxNameLength-8):] // the name is at the end
	}
	return string(b)
}
