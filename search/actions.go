package search

import "strings"

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
// them.
var actionClasses = map[string][]string{
	"create": {"create", "add", "new", "make", "insert", "post", "open", "leave", "append", "register", "spawn",
		"spin", "provision", "submit", "compose", "draft", "generate", "store", "save", "record", "write", "log"},
	"get": {"get", "fetch", "read", "retrieve", "pull", "grab", "show", "view", "see", "load", "inspect", "describe",
		"display", "peek", "obtain", "access"},
	"list": {"list", "enumerate", "browse", "overview"},
	"update": {"update", "edit", "modify", "change", "patch", "set", "rename", "amend", "adjust", "tweak", "alter",
		"revise", "bump", "toggle", "configure", "replace"},
	"delete": {"delete", "remove", "erase", "drop", "destroy", "purge", "trash", "discard", "wipe", "clear",
		"unregister", "uninstall", "nuke", "revoke"},
	"search": {"search", "find", "query", "lookup", "look", "locate", "discover", "seek", "filter", "grep", "hunt"},
	"send": {"send", "message", "notify", "email", "mail", "ping", "reply", "forward", "share", "broadcast",
		"announce", "tell"},
	"run":  {"run", "execute", "exec", "invoke", "call", "trigger", "launch", "kick", "fire", "perform", "start", "dispatch"},
	"stop": {"stop", "halt", "kill", "terminate", "pause", "cancel", "abort", "end", "shutdown", "suspend"},
}

// actionPrefix starts the term of an action class: a character the
// analyser never leaves in a term, so no text can produce one.
const actionPrefix = "~"

// actionOf maps a stemmed verb to its class's term.
var actionOf = buildActions()

func buildActions() map[string]string {
	m := map[string]string{}
	for class, verbs := range actionClasses {
		for _, v := range verbs {
			for _, t := range analyze(v, nil) {
				if _, dup := m[t.term]; !dup {
					m[t.term] = actionPrefix + class
				}
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
