package discovery

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Announcements tell the model which deferred tools it can search for.
//
// Two strategies carry the same information:
//
//   - Snapshot: one block listing every deferred tool, built afresh for each
//     request and placed by the adapter in front of the conversation. Simple,
//     but any catalog change rewrites it, and with it the cached prefix.
//   - Delta: append-only blocks, each saying what changed since the blocks
//     before it (tools added, removed, re-added after a reconnect, servers
//     still connecting). Earlier blocks are never rewritten, so the request
//     prefix stays byte-identical and prompt caches keep working.
//
// Both list one name per line. Past a size budget, whole servers are written
// as one group line "github__* (26)", largest servers first. A group
// tells the model that every tool of the server is searchable; it is
// re-announced only when the server's number of deferred tools changes or
// the server goes away.
//
// The block format, which ParseAnnouncement reads back:
//
//	<deferred-tools>                       (or <deferred-tools snapshot>)
//	<one line of instructions>
//	added:                                 (a snapshot says "available:")
//	github__create_issue
//	slack__* (12)
//	removed:
//	jira__create_ticket
//	re-added after a reconnect:
//	linear__* (198)
//	still connecting: notion, sentry       (or "still connecting: none")
//	</deferred-tools>
//
// Sections that would be empty are left out.

// Strategy chooses how deferred tools are announced.
type Strategy uint8

// Announcement strategies.
const (
	// Delta appends what changed; earlier bytes never change.
	Delta Strategy = iota
	// Snapshot sends the whole list with every request.
	Snapshot
)

// String names the strategy.
func (s Strategy) String() string {
	if s == Snapshot {
		return "snapshot"
	}
	return "delta"
}

// ParseStrategy reads "delta" or "snapshot".
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "delta":
		return Delta, nil
	case "snapshot":
		return Snapshot, nil
	}
	return 0, fmt.Errorf("announcement strategy %q: want delta or snapshot", s)
}

// DefaultBudget is the size, in bytes, of the tool lines of an announcement
// past which whole servers are grouped. 8,000 bytes are about 2,500 tokens.
const DefaultBudget = 8000

// ServerTools are the deferred tools of one server.
type ServerTools struct {
	// Prefix begins every wire name of the server's tools ("github__", see
	// Names.ServerPrefix). An empty Prefix stands for tools that share no
	// prefix (a host's built-in tools): they are always listed one by one,
	// never grouped.
	Prefix string
	// Names are the wire names of the server's deferred tools, in the
	// server's order.
	Names []string
}

// Deferred is what there is to announce: the deferred tools by server, and
// the servers still connecting.
type Deferred struct {
	// Servers are the deferred tools, by server.
	Servers []ServerTools
	// Connecting are the keys of servers whose tools are not known yet.
	Connecting []string
}

// Entry is one line of an announcement: a tool's wire name, or a whole
// server as a group.
type Entry struct {
	// Name is a wire name or, for a group, the server's prefix
	// ("github__").
	Name string
	// Count is, for a group, the number of the server's deferred tools; 0
	// for a single tool.
	Count int
}

// Group reports whether the entry stands for a whole server.
func (e Entry) Group() bool { return e.Count > 0 }

// String writes the entry as its line: "github__create_issue" or
// "github__* (26)" for the 26 deferred tools of a server.
func (e Entry) String() string {
	if e.Count > 0 {
		return e.Name + "* (" + strconv.Itoa(e.Count) + ")"
	}
	return e.Name
}

// Announcement is one block. The zero value says nothing.
type Announcement struct {
	// Snapshot is true for a whole list that replaces everything announced
	// before it; Added then holds the list.
	Snapshot bool
	// Added, Removed and Readded are the changes. A group in Added replaces
	// whatever was announced for that server.
	Added, Removed, Readded []Entry
	// ConnectingSet is true when the block says which servers are still
	// connecting; Connecting lists them (empty: none any more).
	ConnectingSet bool
	// Connecting are the keys of the servers still connecting.
	Connecting []string
}

// Empty reports whether the announcement says nothing.
func (a Announcement) Empty() bool {
	return !a.Snapshot && len(a.Added)+len(a.Removed)+len(a.Readded) == 0 && !a.ConnectingSet
}

// Block tags and section headers.
const (
	openTag         = "<deferred-tools>"
	openSnapshotTag = "<deferred-tools snapshot>"
	closeTag        = "</deferred-tools>"
	hAdded          = "added:"
	hAvailable      = "available:"
	hRemoved        = "removed:"
	hReadded        = "re-added after a reconnect:"
	hConnecting     = "still connecting:"
	instructions    = "Deferred tools exist but are not loaded: use the tool search tool to load one (select:<name> for an exact name, or keywords) before calling it."
)

// IsAnnouncement reports whether text looks like an announcement block (it
// starts with the opening tag), without parsing it.
func IsAnnouncement(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	return strings.HasPrefix(t, openTag) || strings.HasPrefix(t, openSnapshotTag)
}

// Text writes the block. An empty announcement yields "".
func (a Announcement) Text() string {
	if a.Empty() {
		return ""
	}
	var b strings.Builder
	if a.Snapshot {
		b.WriteString(openSnapshotTag)
	} else {
		b.WriteString(openTag)
	}
	b.WriteByte('\n')
	b.WriteString(instructions)
	b.WriteByte('\n')
	section := func(h string, es []Entry) {
		if len(es) == 0 {
			return
		}
		b.WriteString(h)
		b.WriteByte('\n')
		for _, e := range es {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
	}
	if a.Snapshot {
		section(hAvailable, a.Added)
	} else {
		section(hAdded, a.Added)
	}
	section(hRemoved, a.Removed)
	section(hReadded, a.Readded)
	if a.ConnectingSet {
		b.WriteString(hConnecting)
		if len(a.Connecting) == 0 {
			b.WriteString(" none")
		} else {
			b.WriteString(" " + strings.Join(a.Connecting, ", "))
		}
		b.WriteByte('\n')
	}
	b.WriteString(closeTag)
	return b.String()
}

// ParseAnnouncement reads a block written by Text. It reports false when
// text is not such a block or is malformed; a malformed block is ignored by
// the adapters, as if the model had not been told.
func ParseAnnouncement(text string) (Announcement, bool) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r \t")
	}
	if len(lines) < 2 || lines[len(lines)-1] != closeTag {
		return Announcement{}, false
	}
	var a Announcement
	switch lines[0] {
	case openTag:
	case openSnapshotTag:
		a.Snapshot = true
	default:
		return Announcement{}, false
	}
	var cur *[]Entry
	for _, line := range lines[1 : len(lines)-1] {
		switch {
		case line == "":
			continue
		case line == hAdded || line == hAvailable:
			if (line == hAvailable) != a.Snapshot {
				return Announcement{}, false
			}
			cur = &a.Added
		case line == hRemoved:
			cur = &a.Removed
		case line == hReadded:
			cur = &a.Readded
		case strings.HasPrefix(line, hConnecting):
			if a.ConnectingSet {
				return Announcement{}, false
			}
			a.ConnectingSet = true
			rest := strings.TrimSpace(strings.TrimPrefix(line, hConnecting))
			if rest != "none" && rest != "" {
				for s := range strings.SplitSeq(rest, ",") {
					s = strings.TrimSpace(s)
					if s == "" {
						return Announcement{}, false
					}
					a.Connecting = append(a.Connecting, s)
				}
			}
			cur = nil
		case cur == nil:
			// The instruction line, or prose before the first section.
			continue
		default:
			e, ok := parseEntry(line)
			if !ok {
				return Announcement{}, false
			}
			*cur = append(*cur, e)
		}
	}
	return a, true
}

// parseEntry reads "name" or "prefix* (N)".
func parseEntry(line string) (Entry, bool) {
	star := strings.Index(line, "* (")
	if star < 0 {
		if !validName(line) {
			return Entry{}, false
		}
		return Entry{Name: line}, true
	}
	name, rest := line[:star], line[star+3:]
	num, ok := strings.CutSuffix(rest, ")")
	if !ok || !validName(name) {
		return Entry{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || strconv.Itoa(n) != num {
		return Entry{}, false
	}
	return Entry{Name: name, Count: n}, true
}

// State is what the announcements of a conversation have told the model so
// far. Build it by applying, in order, every announcement found in the
// history; the zero value is a conversation that was told nothing.
type State struct {
	names         map[string]bool // single tools announced and not removed
	groups        map[string]int  // server prefix → announced count
	removed       map[string]bool // single tools announced as removed
	removedGroups map[string]bool // server prefixes announced as removed
	connecting    []string
}

func (s *State) init() {
	if s.names == nil {
		s.names = map[string]bool{}
		s.groups = map[string]int{}
		s.removed = map[string]bool{}
		s.removedGroups = map[string]bool{}
	}
}

// Apply records an announcement.
func (s *State) Apply(a Announcement) {
	s.init()
	if a.Snapshot {
		*s = State{}
		s.init()
	}
	add := func(e Entry) {
		if e.Group() {
			s.dropServer(e.Name)
			s.groups[e.Name] = e.Count
			delete(s.removedGroups, e.Name)
			return
		}
		s.names[e.Name] = true
		delete(s.removed, e.Name)
	}
	for _, e := range a.Added {
		add(e)
	}
	for _, e := range a.Readded {
		add(e)
	}
	for _, e := range a.Removed {
		if e.Group() {
			s.dropServer(e.Name)
			delete(s.groups, e.Name)
			s.removedGroups[e.Name] = true
			continue
		}
		delete(s.names, e.Name)
		s.removed[e.Name] = true
	}
	if a.ConnectingSet {
		s.connecting = slices.Clone(a.Connecting)
		slices.Sort(s.connecting)
	}
}

// dropServer forgets the single tools announced for a server prefix.
func (s *State) dropServer(prefix string) {
	for n := range s.names {
		if strings.HasPrefix(n, prefix) {
			delete(s.names, n)
		}
	}
}

// Known reports how many single tools and server groups the model has been
// told of.
func (s *State) Known() (tools, groups int) { return len(s.names), len(s.groups) }

// Delta returns the announcement that brings a model told s up to date with
// cur. Tools of servers announced as groups are covered by their group; new
// servers (and servers coming back) are grouped, largest first, when their
// lines exceed budget bytes (DefaultBudget when budget <= 0). The result is
// Empty when nothing changed. s is not modified; apply the result once it
// is in the conversation.
func (s *State) Delta(cur Deferred, budget int) Announcement {
	if budget <= 0 {
		budget = DefaultBudget
	}
	s2 := *s
	s2.init()
	st := &s2
	var a Announcement
	servers := sortedServers(cur.Servers)
	present := map[string]bool{}
	curPrefix := map[string]bool{}
	var whole []pending // servers of which no single tool is announced yet
	var added, readded []Entry
	for _, srv := range servers {
		curPrefix[srv.Prefix] = true
		for _, n := range srv.Names {
			present[n] = true
		}
		if c, ok := st.groups[srv.Prefix]; ok {
			if len(srv.Names) > 0 && c != len(srv.Names) {
				added = append(added, Entry{Name: srv.Prefix, Count: len(srv.Names)})
			}
			continue
		}
		known := false
		var fresh []string
		for _, n := range srv.Names {
			if st.names[n] {
				known = true
			} else {
				fresh = append(fresh, n)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		if !known && srv.Prefix != "" {
			whole = append(whole, pending{srv: ServerTools{Prefix: srv.Prefix, Names: fresh}, back: st.removedGroups[srv.Prefix] || anyIn(fresh, st.removed)})
			continue
		}
		for _, n := range fresh {
			if st.removed[n] {
				readded = append(readded, Entry{Name: n})
			} else {
				added = append(added, Entry{Name: n})
			}
		}
	}
	// Group whole servers, largest first, until the lines fit the budget.
	size := entriesSize(added) + entriesSize(readded)
	for _, p := range whole {
		size += namesSize(p.srv.Names)
	}
	for size > budget {
		best := -1
		for i, p := range whole {
			if !p.grouped && (best < 0 || namesSize(p.srv.Names) > namesSize(whole[best].srv.Names)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		p := &whole[best]
		p.grouped = true
		size += len(Entry{Name: p.srv.Prefix, Count: len(p.srv.Names)}.String()) + 1 - namesSize(p.srv.Names)
	}
	for _, p := range whole {
		var es []Entry
		if p.grouped {
			es = []Entry{{Name: p.srv.Prefix, Count: len(p.srv.Names)}}
		} else {
			for _, n := range p.srv.Names {
				back := st.removed[n] || st.removedGroups[p.srv.Prefix]
				if back {
					readded = append(readded, Entry{Name: n})
				} else {
					added = append(added, Entry{Name: n})
				}
			}
			continue
		}
		if p.back {
			readded = append(readded, es...)
		} else {
			added = append(added, es...)
		}
	}
	a.Added = sortEntries(added)
	a.Readded = sortEntries(readded)
	// Removals: groups whose server is gone, then single tools.
	var removed []Entry
	for prefix := range st.groups {
		if !curPrefix[prefix] || serverEmpty(servers, prefix) {
			removed = append(removed, Entry{Name: prefix, Count: st.groups[prefix]})
		}
	}
	for n := range st.names {
		if !present[n] {
			removed = append(removed, Entry{Name: n})
		}
	}
	slices.SortFunc(removed, func(x, y Entry) int {
		if c := strings.Compare(serverOf(x), serverOf(y)); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	a.Removed = removed
	conn := slices.Clone(cur.Connecting)
	slices.Sort(conn)
	conn = slices.Compact(conn)
	if !slices.Equal(conn, st.connecting) {
		a.ConnectingSet = true
		a.Connecting = conn
	}
	return a
}

// SnapshotOf returns the snapshot announcement of cur, grouping whole
// servers, largest first, past budget bytes (DefaultBudget when budget <=
// 0).
func SnapshotOf(cur Deferred, budget int) Announcement {
	var empty State
	a := empty.Delta(cur, budget)
	a.Snapshot = true
	a.Added = sortEntries(append(a.Added, a.Readded...))
	a.Readded, a.Removed = nil, nil
	a.ConnectingSet = len(a.Connecting) > 0
	return a
}

// pending is a server none of whose tools has been announced singly.
type pending struct {
	srv     ServerTools
	back    bool // announced before and removed since
	grouped bool
}

func anyIn(names []string, set map[string]bool) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

func serverEmpty(servers []ServerTools, prefix string) bool {
	for _, s := range servers {
		if s.Prefix == prefix {
			return len(s.Names) == 0
		}
	}
	return true
}

func sortedServers(in []ServerTools) []ServerTools {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b ServerTools) int { return strings.Compare(a.Prefix, b.Prefix) })
	return out
}

// sortEntries orders entries by name, keeping the order of names that share
// a server prefix as given (the server's own order) by sorting stably on the
// group-or-server prefix only.
func sortEntries(es []Entry) []Entry {
	slices.SortStableFunc(es, func(a, b Entry) int { return strings.Compare(serverOf(a), serverOf(b)) })
	return es
}

// serverOf returns the part of an entry's name up to and including its last
// "__" — the server prefix of a wire name.
func serverOf(e Entry) string {
	if e.Group() {
		return e.Name
	}
	if i := strings.LastIndex(e.Name, "__"); i >= 0 {
		return e.Name[:i+2]
	}
	return e.Name
}

func entriesSize(es []Entry) int {
	n := 0
	for _, e := range es {
		n += len(e.String()) + 1
	}
	return n
}

func namesSize(names []string) int {
	n := 0
	for _, s := range names {
		n += len(s) + 1
	}
	return n
}

// SearchToolDescription is the description of a tool search tool: how to
// query it, and the servers it covers with their number of deferred tools,
// largest first, at most maxServers of them (the rest summed up in one
// clause). Its size depends on the number of servers named, never on the
// number of tools; adapters build it once per conversation and keep it, so
// the tools array stays byte-identical when the catalog changes (the
// announcements carry the changes).
func SearchToolDescription(cur Deferred, maxServers int) string {
	var b strings.Builder
	b.WriteString("Search the deferred tools and load the ones you need. Deferred tools are listed by name in <deferred-tools> blocks but their definitions are not loaded: call this tool first, then call the tools it loads. ")
	b.WriteString("Ask as the wanted tool's own description would, naming the product (\"create a GitHub pull request\"). Several needs at once: queries. Known names: \"select:name1,name2\"; a server's tools: its prefix, such as \"github__\"; \"+word\" must match. Returns up to max_results tools (default 5).")
	servers := sortedServers(cur.Servers)
	slices.SortStableFunc(servers, func(a, b ServerTools) int { return len(b.Names) - len(a.Names) })
	var named []string
	restServers, restTools := 0, 0
	for _, s := range servers {
		if len(s.Names) == 0 {
			continue
		}
		if len(named) < maxServers {
			named = append(named, fmt.Sprintf("%s* (%d)", s.Prefix, len(s.Names)))
			continue
		}
		restServers++
		restTools += len(s.Names)
	}
	if len(named) > 0 {
		b.WriteString(" Servers: ")
		b.WriteString(strings.Join(named, ", "))
		if restServers > 0 {
			fmt.Fprintf(&b, ", and %d more servers with %d tools", restServers, restTools)
		}
		b.WriteString(".")
	}
	return b.String()
}
