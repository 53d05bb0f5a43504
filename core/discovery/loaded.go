// Package discovery rebuilds, from a conversation's history, which tools a
// model has loaded through search, carries that set across compaction, and
// announces the deferred tools a model can search for.
//
// Discovery state lives in the conversation, never in a hidden global: the
// adapters (packages anthropic and openai) read the wire formats —
// Anthropic tool_result blocks holding tool_reference blocks,
// tool_search_tool_result blocks, OpenAI tool_search_output items, and the
// plain-text form of LoadedText — into the provider-neutral Events of this
// package, and Loaded folds them into a set. The same history always yields
// the same set, in the order the tools were first loaded.
//
// Announcements (announce.go) follow the same rule: what the model was told
// is written into the conversation in a format this package parses back, so
// the next delta is computed from the conversation alone.
//
// The package does no I/O and imports no transport or SDK.
package discovery

import "slices"

// Kind says what put an Event in the history.
type Kind uint8

// Event kinds.
const (
	// Found is a search result that loaded tools: tool references in a
	// tool_result, a server search result, an OpenAI tool_search_output, or
	// LoadedText.
	Found Kind = iota
	// Carried is a compaction boundary that carried the tools loaded before
	// it (see Carry).
	Carried
)

// String names the kind.
func (k Kind) String() string {
	if k == Carried {
		return "carried"
	}
	return "found"
}

// Event is one point of a conversation where tools were loaded.
type Event struct {
	// Kind says what put the event in the history.
	Kind Kind
	// Names are the wire names of the tools, in the order the history
	// lists them.
	Names []string
	// Where locates the event in the conversation for people reading a
	// report (for example "message 3, tool_result toolu_01"). It plays no
	// part in the set.
	Where string
}

// Set is an ordered set of tool names: the order is that of first
// appearance. The zero value is an empty set. A Set is not safe for
// concurrent mutation.
type Set struct {
	names []string
	has   map[string]bool
}

// Add appends the names not yet in the set, in order, and reports how many
// were new.
func (s *Set) Add(names ...string) int {
	n := 0
	for _, name := range names {
		if name == "" || s.has[name] {
			continue
		}
		if s.has == nil {
			s.has = map[string]bool{}
		}
		s.has[name] = true
		s.names = append(s.names, name)
		n++
	}
	return n
}

// Has reports whether name is in the set.
func (s *Set) Has(name string) bool { return s.has[name] }

// Len is the number of names in the set.
func (s *Set) Len() int { return len(s.names) }

// Names returns the names in first-seen order. The caller may modify the
// returned slice.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Loaded folds the events of a history, in order, into the set of loaded
// tools. The set only grows: a tool once loaded stays loaded for the rest of
// the conversation (a tool that later disappears from the catalog is the
// adapters' business, see anthropic.Reconcile).
func Loaded(events []Event) *Set {
	s := &Set{}
	for _, e := range events {
		s.Add(e.Names...)
	}
	return s
}

// Carry returns the event a compaction boundary must carry so that the same
// tools stay loaded after a summary replaces the messages that loaded them
// (what Claude Code keeps as pre_compact_discovered_tools). events are the
// events of the whole history before compaction. An adapter writes the
// returned event into the compacted conversation in its own wire format;
// reading the compacted conversation back yields the same set in the same
// order, as long as the carry comes first.
func Carry(events []Event) Event {
	return Event{Kind: Carried, Names: Loaded(events).Names(), Where: "compaction boundary"}
}
