package openai

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/discovery"
)

// Namespace is a group of one server's tools exposed to the model as one
// Responses API namespace.
type Namespace struct {
	// Name is the namespace's name: the server's key (made safe) for a
	// server of few tools, else the key, "__" and the topics of the group
	// ("gitlab__issue", "linear__project_team").
	Name string
	// Description tells the model what the namespace holds.
	Description string
	// Server is the key of the server.
	Server string
	// Tools are the members, in the server's order.
	Tools []*catalog.Tool
}

// namespaces is the split of every server, and the routes back.
type namespaces struct {
	byTool   map[*catalog.Tool]*Namespace
	fn       map[*catalog.Tool]string            // function name within its namespace
	route1   map[string]map[string]*catalog.Tool // namespace → function → tool
	byServer map[string]map[string]*catalog.Tool // safe server key → function → tool
	list     []*Namespace
}

// Namespaces returns how a Toolset splits the visible tools into
// namespaces, in snapshot order.
func (ts *Toolset) Namespaces() []*Namespace { return ts.ns.list }

// NamespaceOf returns the namespace of a tool and its function name there.
func (ts *Toolset) NamespaceOf(t *catalog.Tool) (*Namespace, string, bool) {
	n, ok := ts.ns.byTool[t]
	return n, ts.ns.fn[t], ok
}

// splitNamespaces groups each server's visible tools. A server of at most
// size tools is one namespace. A larger one is split by topic — the word of
// a tool's name, other than verbs and the server's own words, that most of
// the server's tools share ("create_issue", "list_issues" and
// "comment_on_issue" share "issue") — in order of first appearance: a topic
// of three tools or more is a namespace of its own (cut into even parts past
// size), smaller topics share a namespace while it has room.
func splitNamespaces(snap *catalog.Snapshot, tools []*catalog.Tool, size int) *namespaces {
	ns := &namespaces{
		byTool:   map[*catalog.Tool]*Namespace{},
		fn:       map[*catalog.Tool]string{},
		route1:   map[string]map[string]*catalog.Tool{},
		byServer: map[string]map[string]*catalog.Tool{},
	}
	var order []string
	byServer := map[string][]*catalog.Tool{}
	for _, t := range tools {
		if _, ok := byServer[t.Server]; !ok {
			order = append(order, t.Server)
		}
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	taken := map[string]bool{}
	for _, key := range order {
		list := byServer[key]
		base := discovery.SafeName(key, 40)
		title := key
		if srv, ok := snap.Server(key); ok && srv.Title != "" {
			title = srv.Title
		}
		// Function names, unique within the server.
		fns := map[string]*catalog.Tool{}
		for _, t := range list {
			f := discovery.SafeName(t.Name, discovery.MaxNameLen)
			if _, dup := fns[f]; dup {
				f = discovery.SafeName(f, discovery.MaxNameLen-9) + "_" + fmt.Sprintf("%08x", fnv32(t.ID()))
			}
			fns[f] = t
			ns.fn[t] = f
		}
		ns.byServer[base] = fns
		for _, group := range packTopics(key, list, size) {
			name := base
			if len(group.topics) > 0 && len(list) > size {
				name = discovery.SafeName(base+"__"+strings.Join(group.topics, "_"), discovery.MaxNameLen)
			}
			for i := 2; taken[name]; i++ {
				name = discovery.SafeName(fmt.Sprintf("%s_%d", strings.TrimRight(name, "_0123456789"), i), discovery.MaxNameLen)
			}
			taken[name] = true
			n := &Namespace{Name: name, Server: key, Tools: group.tools}
			if len(list) <= size {
				n.Description = fmt.Sprintf("Tools of the %s server.", title)
			} else {
				n.Description = fmt.Sprintf("Tools of the %s server about %s.", title, strings.Join(group.topics, ", "))
			}
			ns.list = append(ns.list, n)
			m := map[string]*catalog.Tool{}
			for _, t := range group.tools {
				ns.byTool[t] = n
				m[ns.fn[t]] = t
			}
			ns.route1[name] = m
		}
	}
	return ns
}

func (ns *namespaces) route(namespace, fn string) (*catalog.Tool, bool) {
	if m, ok := ns.route1[namespace]; ok {
		if t, ok := m[fn]; ok {
			return t, true
		}
	}
	// A namespace of an older split: the server is the part before "__".
	server, _, _ := strings.Cut(namespace, "__")
	if m, ok := ns.byServer[server]; ok {
		t, ok := m[fn]
		return t, ok
	}
	return nil, false
}

type group struct {
	topics []string
	tools  []*catalog.Tool
}

// packTopics groups a server's tools by topic and packs the groups into
// namespaces of at most size tools.
func packTopics(server string, tools []*catalog.Tool, size int) []group {
	if len(tools) <= size {
		return []group{{tools: tools}}
	}
	skip := map[string]bool{}
	for _, w := range words(server) {
		skip[w] = true
	}
	// A tool's topic is the word of its name, other than verbs and the
	// server's own words, that most of the server's tools share
	// ("comment_on_issue" goes with the issues, not alone).
	cands := make([][]string, len(tools))
	freq := map[string]int{}
	for i, t := range tools {
		seen := map[string]bool{}
		for _, w := range words(t.Name) {
			w = singular(w)
			if verbs[w] || skip[w] || len(w) < 2 || seen[w] {
				continue
			}
			seen[w] = true
			cands[i] = append(cands[i], w)
			freq[w]++
		}
	}
	var order []string
	byTopic := map[string][]*catalog.Tool{}
	for i, t := range tools {
		tp := topic(t.Name, skip)
		best := 0
		for _, w := range cands[i] {
			if freq[w] > best {
				tp, best = w, freq[w]
			}
		}
		if _, ok := byTopic[tp]; !ok {
			order = append(order, tp)
		}
		byTopic[tp] = append(byTopic[tp], t)
	}
	// Groups of three tools or more stay apart; a group larger than size
	// is cut into even parts; groups of one or two share a namespace while
	// it has room.
	var out []group
	open := -1
	for _, tp := range order {
		list := byTopic[tp]
		switch {
		case len(list) > size:
			parts := (len(list) + size - 1) / size
			per := (len(list) + parts - 1) / parts
			for i := 0; i < len(list); i += per {
				part := fmt.Sprintf("%s%d", tp, i/per+1)
				out = append(out, group{topics: []string{part}, tools: list[i:min(i+per, len(list))]})
			}
		case len(list) >= 3:
			out = append(out, group{topics: []string{tp}, tools: list})
		case open >= 0 && len(out[open].tools)+len(list) <= size:
			out[open].topics = append(out[open].topics, tp)
			out[open].tools = append(out[open].tools, list...)
		default:
			out = append(out, group{topics: []string{tp}, tools: append([]*catalog.Tool(nil), list...)})
			open = len(out) - 1
		}
	}
	// Names of merged groups: at most three topics, else two and "more".
	for i := range out {
		if len(out[i].topics) > 3 {
			out[i].topics = append(out[i].topics[:2:2], "more")
		}
	}
	return out
}

// verbs are the words of tool names that say what a tool does, not what it
// is about (with the little words that join them).
var verbs = toSet(`get list create update delete remove add set search find fetch read write run execute
query post send put patch upsert move copy rename start stop cancel close open check describe show view
enable disable install uninstall deploy scale restart edit manage generate upload download export import
sync trigger validate count retrieve insert replace merge submit mark archive unarchive assign unassign invite
join leave reply react lookup resolve clear reset test preview publish unpublish approve reject schedule
browse navigate click type fill select hover press wait take evaluate save load apply is has do make
by id ids to from for of on in at all with as and or the new my current`)

func toSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// topic returns the first word of name that is neither a verb nor in skip,
// singular; or the first word when every word is one of those.
func topic(name string, skip map[string]bool) string {
	ws := words(name)
	for _, w := range ws {
		if !verbs[w] && !skip[w] && len(w) > 1 {
			return singular(w)
		}
	}
	if len(ws) > 0 {
		return ws[0]
	}
	return "misc"
}

// words splits an identifier into lower-case words at separators and case
// changes ("getPRComments" → get, pr, comments).
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(cur[len(cur)-1]))):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// singular strips a plural ending, roughly.
func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
