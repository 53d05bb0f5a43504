package discovery

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// MaxNameLen is the longest tool name toolsearch puts on the wire. Both the
// Anthropic and the OpenAI APIs accept names of [a-zA-Z0-9_-] up to 64
// characters.
const MaxNameLen = 64

// SafeName returns s with every character outside [a-zA-Z0-9_-] replaced by
// '_', cut to at most maxLen bytes. A name that had to be cut ends in '_'
// and eight hex digits of a hash of s, so that two long names that share a
// beginning stay apart. An empty s yields "_".
func SafeName(s string, maxLen int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" {
		out = "_"
	}
	if maxLen > 0 && len(out) > maxLen {
		suffix := "_" + hash8(s)
		keep := max(maxLen-len(suffix), 0)
		out = out[:keep] + suffix
		if len(out) > maxLen {
			out = out[:maxLen]
		}
	}
	return out
}

func hash8(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// validName reports whether s is a name SafeName leaves unchanged.
func validName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Names is the one place where a catalog tool gets the name a model sees
// and calls it by, and where that name leads back to the tool. A tool's wire
// name is prefix + server + "__" + name ("github__create_issue", or
// "mcp__github__create_issue" with prefix "mcp__"), made safe with SafeName.
// Two tools whose safe names collide are told apart by a hash suffix on the
// later one, in snapshot order.
//
// A Names is immutable and safe for concurrent use.
type Names struct {
	prefix string
	wire   map[*catalog.Tool]string
	tools  map[string]*catalog.Tool
}

// NewNames names every tool of snap. prefix is put before every wire name
// ("" or "mcp__").
func NewNames(snap *catalog.Snapshot, prefix string) *Names {
	n := &Names{prefix: prefix, wire: map[*catalog.Tool]string{}, tools: map[string]*catalog.Tool{}}
	for _, t := range snap.Tools() {
		w := SafeName(prefix+t.Server+catalog.WireSeparator+t.Name, MaxNameLen)
		if _, taken := n.tools[w]; taken {
			w = SafeName(w, MaxNameLen-9) + "_" + hash8(t.ID())
		}
		n.wire[t] = w
		n.tools[w] = t
	}
	return n
}

// Prefix is the prefix given to NewNames.
func (n *Names) Prefix() string { return n.prefix }

// Wire returns the wire name of a tool of the snapshot, or "" for a tool
// the snapshot does not hold.
func (n *Names) Wire(t *catalog.Tool) string { return n.wire[t] }

// Tool returns the tool a wire name denotes.
func (n *Names) Tool(wire string) (*catalog.Tool, bool) {
	t, ok := n.tools[wire]
	return t, ok
}

// ServerPrefix returns what every wire name of a server's tools starts with
// ("github__"), as announcements group them ("github__* (26)").
func (n *Names) ServerPrefix(server string) string {
	return SafeName(n.prefix+server, MaxNameLen-2) + catalog.WireSeparator
}
