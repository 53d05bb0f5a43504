package search

import (
	"slices"
	"strings"
)

// Action classes. Tools of one server often come as siblings that differ
// only in their verb: create_issue, get_issue, list_issues, update_issue,
// delete_issue. People and models ask for the action in their own words
// ("open an issue", "grab the ticket", "spin up a VM"), and the sibling whose
// verb means that action should win. Each verb below belongs to one class;
// a tool's name gets its verbs' class as an extra name term, and a query
// word that is a verb of a class matches it, at Weights.Action, in names
// only (descriptions mention other actions too freely to say which one a
// tool does).
//
// The table is general English and API vocabulary: the verbs CRUD-style
// APIs name their operations with, and the everyday verbs people use for
// them. Words that are more often nouns in tool land (message, log,
// record, query, filter, end) are left out: as a query's noun they would
// only pull in the wrong siblings.
var actionClasses = map[string][]string{
	"create": {"create", "add", "new", "make", "insert", "post", "open", "leave", "append", "register", "spawn",
		"spin", "provision", "submit", "compose", "draft", "generate", "store", "save", "write"},
	"get": {"get", "fetch", "read", "retrieve", "pull", "grab", "show", "view", "see", "load", "inspect", "describe",
		"peek", "obtain"},
	"list": {"list", "enumerate", "browse"},
	"update": {"update", "edit", "modify", "change", "patch", "set", "rename", "amend", "adjust", "tweak", "alter",
		"revise", "bump", "toggle", "configure", "replace"},
	"delete": {"delete", "remove", "erase", "drop", "destroy", "purge", "trash", "discard", "wipe", "clear",
		"unregister", "uninstall", "nuke", "revoke"},
	"search": {"search", "find", "lookup", "look", "locate", "discover", "seek", "grep", "hunt"},
	"send":   {"send", "notify", "ping", "reply", "forward", "share", "broadcast", "announce", "tell"},
	"run":    {"run", "execute", "exec", "invoke", "trigger", "launch", "kick", "perform", "start", "dispatch"},
	"stop":   {"stop", "halt", "kill", "terminate", "pause", "cancel", "abort", "shutdown", "suspend"},
}

// actionPrefix starts the term of an action class: a character the
// analyser never leaves in a term, so no text can produce one.
const actionPrefix = "~"

// actionOf maps every stemmed verb of the table to its class's term: a
// tool name's verbs get their class.
var actionOf = buildActions(false)

// queryActionOf maps a stemmed verb to its class's term for the verbs
// whose synonyms (lexicon.go) do not already reach the class's own verb:
// for those ("create", "add", "remove"...) the synonyms tell the siblings
// apart already, and a class would only read the same names again.
var queryActionOf = buildActions(true)

func buildActions(query bool) map[string]string {
	m := map[string]string{}
	for class, verbs := range actionClasses {
		head := analyze(class, nil)[0].term
		for _, v := range verbs {
			for _, t := range analyze(v, nil) {
				if _, dup := m[t.term]; dup {
					continue
				}
				if query && (t.term == head || slices.Contains(synonyms[t.term], head)) {
					continue
				}
				m[t.term] = actionPrefix + class
			}
		}
	}
	return m
}

// isAction reports whether term is an action class's term.
func isAction(term string) bool { return strings.HasPrefix(term, actionPrefix) }

// weakNamePart reports whether a term of a tool's name says little about
// what the tool does: a number ("5" in count_divisible_by_5) or a single
// character. Such a term is indexed with the description rather than the
// name, and does not count towards name coverage.
func weakNamePart(term string) bool {
	if len(term) <= 1 {
		return true
	}
	for i := 0; i < len(term); i++ {
		if c := term[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}
