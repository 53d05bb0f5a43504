package search

import (
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// nameIndex finds tools by exact name, case-insensitively, in each of the
// spellings a tool can be named by: its name, "server/name",
// "server__name" and "mcp__server__name". It files a tool under its
// lower-cased name only; a qualified spelling is taken apart when it is
// looked up. Tools named alike are kept in the order they were added.
type nameIndex struct {
	first map[string]int32 // a lower-cased name → its first tool
	tools []*catalog.Tool  // every tool, in the order added
	next  []int32          // per tool, the next tool named alike, or -1
	last  []int32          // per first tool, the last tool named alike
	// spaced is set when a name has a space, tab or line break. Server
	// keys have none, so until then no spelling of a name has any.
	spaced bool
}

func newNameIndex(n int) *nameIndex {
	return &nameIndex{
		first: make(map[string]int32, n),
		tools: make([]*catalog.Tool, 0, n),
		next:  make([]int32, 0, n),
		last:  make([]int32, 0, n),
	}
}

// add files t after every tool added before it.
func (x *nameIndex) add(t *catalog.Tool) {
	i := int32(len(x.tools))
	x.tools = append(x.tools, t)
	x.next = append(x.next, -1)
	x.last = append(x.last, i)
	name := strings.ToLower(t.Name)
	if !x.spaced && strings.ContainsAny(name, asciiBlanks) {
		x.spaced = true
	}
	if h, ok := x.first[name]; ok {
		x.next[x.last[h]] = i
		x.last[h] = i
		return
	}
	x.first[name] = i
}

// asciiBlanks are the characters that server keys may not have.
const asciiBlanks = " \t\r\n"

// cannotName reports whether q, lower-cased or not, has a space, tab or
// line break while no name has one, so that it spells no tool's name: a
// query of several words need not be lower-cased and looked up.
func (x *nameIndex) cannotName(q string) bool {
	return !x.spaced && strings.ContainsAny(q, asciiBlanks)
}

// lookup returns the tools that q names in one of their spellings, in the
// order they were added. q is lower-cased.
func (x *nameIndex) lookup(q string) []*catalog.Tool {
	var found []int32
	// with adds the tools whose lower-cased name is name and, when
	// qualified, whose lower-cased server key is server.
	with := func(qualified bool, server, name string) {
		h, ok := x.first[name]
		if !ok {
			return
		}
		for i := h; i >= 0; i = x.next[i] {
			if !qualified || strings.ToLower(x.tools[i].Server) == server {
				found = append(found, i)
			}
		}
	}
	// qualified adds the tools that s, of the form server+sep+name, names,
	// for every place sep can split it at.
	qualified := func(s, sep string) {
		for k := 0; ; {
			j := strings.Index(s[k:], sep)
			if j < 0 {
				return
			}
			k += j
			with(true, s[:k], s[k+len(sep):])
			k++
		}
	}
	with(false, "", q)
	qualified(q, catalog.IDSeparator)
	qualified(q, catalog.WireSeparator)
	if rest, ok := strings.CutPrefix(q, "mcp"+catalog.WireSeparator); ok {
		qualified(rest, catalog.WireSeparator)
	}
	if len(found) == 0 {
		return nil
	}
	// A tool is found by one spelling at most: the spellings of one tool
	// all differ in length.
	slices.Sort(found)
	out := make([]*catalog.Tool, len(found))
	for k, i := range found {
		out[k] = x.tools[i]
	}
	return out
}
