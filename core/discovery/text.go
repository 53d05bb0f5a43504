package discovery

import (
	"fmt"
	"strconv"
	"strings"
)

// Line prefixes of the plain-text forms.
const (
	// LoadedPrefix starts the line of LoadedText.
	LoadedPrefix = "Loaded tools: "
	// CarriedPrefix starts the line of CarriedText.
	CarriedPrefix = "Tools loaded before this summary: "
)

// LoadedText is the plain-text form of a search result that loaded tools,
// for wires that carry no tool references: the Anthropic expand mode (an
// endpoint that refuses tool_reference blocks) and OpenAI Chat Completions.
// It is one line, "Loaded tools: a, b, c", and ParseLoadedText reads it back.
// Names must be wire names (see SafeName); others are left out. An empty
// list yields "".
func LoadedText(names []string) string { return namesLine(LoadedPrefix, names) }

// CarriedText is the plain-text form of a compaction boundary's carry (see
// Carry): one line, "Tools loaded before this summary: a, b", that an adapter
// puts in the summary message and ParseCarriedText reads back.
func CarriedText(names []string) string { return namesLine(CarriedPrefix, names) }

// ParseCarriedText returns the names of every CarriedText line in text.
func ParseCarriedText(text string) []string { return parseNamesLines(CarriedPrefix, text) }

func namesLine(prefix string, names []string) string {
	var ok []string
	for _, n := range names {
		if validName(n) {
			ok = append(ok, n)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	return prefix + strings.Join(ok, ", ")
}

// ParseLoadedText returns the names of every LoadedText line in text, in
// order. Lines that are not LoadedText, and names that are not wire names,
// are ignored, so the line may sit among other text.
func ParseLoadedText(text string) []string { return parseNamesLines(LoadedPrefix, text) }

func parseNamesLines(prefix, text string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r \t"), prefix)
		if !ok {
			continue
		}
		for n := range strings.SplitSeq(rest, ",") {
			if n = strings.TrimSpace(n); validName(n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// NoMatchText is what a search tool answers when nothing matched: it says
// so plainly, names the names a select: asked for that do not exist, and
// points at the servers whose names are closest, rather than padding the
// answer with unrelated tools.
func NoMatchText(query string, unknown, nearestServers []string) string {
	return NoMatchAnyText([]string{query}, unknown, nearestServers)
}

// NoMatchAnyText is NoMatchText for a search of several queries; blank
// ones are left out.
func NoMatchAnyText(queries []string, unknown, nearestServers []string) string {
	var quoted []string
	for _, q := range queries {
		if strings.TrimSpace(q) != "" {
			quoted = append(quoted, strconv.Quote(q))
		}
	}
	if len(quoted) == 0 {
		quoted = []string{`""`}
	}
	asked := quoted[0]
	if n := len(quoted); n > 1 {
		asked = strings.Join(quoted[:n-1], ", ") + " or " + quoted[n-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "No deferred tool matched %s.", asked)
	if len(unknown) > 0 {
		fmt.Fprintf(&b, " Unknown names: %s.", strings.Join(unknown, ", "))
	}
	if len(nearestServers) > 0 {
		fmt.Fprintf(&b, " Servers with the closest names: %s (search one with its prefix, for example %q).",
			strings.Join(nearestServers, ", "), nearestServers[0]+"__")
	}
	return b.String()
}
