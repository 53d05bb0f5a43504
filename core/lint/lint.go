// Package lint tells tool authors how findable their tools are: whether a
// search for what a tool says it does finds it, and what in a definition
// makes a tool hard to find or easy to confuse with another.
//
// Checks run against a search index of the whole catalog, so a tool is
// judged among the tools it will compete with.
package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// Severity orders findings.
type Severity int

// Severities.
const (
	Info Severity = iota
	Warning
	Error
)

// String names the severity.
func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "info"
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one thing worth fixing in a tool's definition.
type Finding struct {
	Tool     string   `json:"tool"`
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// Options tune the checks.
type Options struct {
	// Servers limits the report to these servers (all when empty); the
	// other servers still compete in the searches.
	Servers []string
	// K is the rank within which a tool must be found (default 5).
	K int
	// MaxTokens flags definitions larger than this (default 1500).
	MaxTokens int
	// MinDescription flags descriptions shorter than this many characters
	// (default 25).
	MinDescription int
}

// Report is the result of linting.
type Report struct {
	Tools    int       `json:"tools"`
	Findable int       `json:"findable"` // found within K by their own description
	Findings []Finding `json:"findings"`
}

// Check lints the tools of snap, searching them in ix (built from snap).
func Check(ctx context.Context, snap *catalog.Snapshot, ix *search.Index, opt Options) (Report, error) {
	if opt.K <= 0 {
		opt.K = 5
	}
	if opt.MaxTokens <= 0 {
		opt.MaxTokens = 1500
	}
	if opt.MinDescription <= 0 {
		opt.MinDescription = 25
	}
	only := map[string]bool{}
	for _, s := range opt.Servers {
		if _, ok := snap.Server(s); !ok {
			return Report{}, fmt.Errorf("unknown server %q", s)
		}
		only[s] = true
	}
	byName := map[string][]string{}
	for _, t := range snap.Tools() {
		byName[strings.ToLower(t.Name)] = append(byName[strings.ToLower(t.Name)], t.ID())
	}
	var rep Report
	for _, srv := range snap.Servers() {
		if len(only) > 0 && !only[srv.Key] {
			continue
		}
		descs := map[string]string{}
		for _, t := range srv.Tools {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			rep.Tools++
			add := func(check string, sev Severity, format string, args ...any) {
				rep.Findings = append(rep.Findings, Finding{Tool: t.ID(), Check: check, Severity: sev, Message: fmt.Sprintf(format, args...)})
			}
			desc := strings.TrimSpace(t.Description)
			switch {
			case desc == "":
				add("description", Error, "no description: the model and the search only have the name to go on")
			case len(desc) < opt.MinDescription:
				add("description", Warning, "description of %d characters says little about when to use the tool", len(desc))
			}
			if n := t.Tokens(); n > opt.MaxTokens {
				add("size", Warning, "definition weighs %d tokens (over %d): every request that loads it pays for it", n, opt.MaxTokens)
			}
			if !objectSchema(t.InputSchema) {
				add("schema", Error, "input schema is not a JSON Schema of type object")
			}
			var bare []string
			for _, p := range t.Params() {
				if strings.TrimSpace(p.Description) == "" {
					bare = append(bare, p.Name)
				}
			}
			if len(bare) > 0 {
				add("parameters", Info, "parameters without a description: %s", strings.Join(bare, ", "))
			}
			if others := byName[strings.ToLower(t.Name)]; len(others) > 1 {
				add("name", Info, "the name is shared with %s: only the qualified name selects it", strings.Join(without(others, t.ID()), ", "))
			}
			if prev, ok := descs[normalise(desc)]; ok && desc != "" {
				add("duplicate", Warning, "same description as %s: a model cannot tell them apart", prev)
			} else if desc != "" {
				descs[normalise(desc)] = t.ID()
			}
			if desc == "" {
				continue
			}
			rank, err := rankOf(ctx, ix, t, firstSentence(desc), opt.K)
			if err != nil {
				return Report{}, err
			}
			if rank > 0 {
				rep.Findable++
				continue
			}
			add("findable", Warning, "a search for its own first sentence does not rank it in the top %d; say what it does in words users type, or add a searchHint", opt.K)
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		if rep.Findings[i].Severity != rep.Findings[j].Severity {
			return rep.Findings[i].Severity > rep.Findings[j].Severity
		}
		return rep.Findings[i].Tool < rep.Findings[j].Tool
	})
	return rep, nil
}

// rankOf searches q and returns the 1-based rank of t, 0 when not in the top k.
func rankOf(ctx context.Context, ix *search.Index, t *catalog.Tool, q string, k int) (int, error) {
	if len(q) > search.MaxQueryLen {
		q = q[:search.MaxQueryLen]
	}
	res, err := ix.Search(ctx, search.Request{Query: q, Mode: search.ModeKeyword, MaxResults: k})
	if err != nil {
		// A sentence the engine refuses (too many terms) is no finding about
		// the tool: retry with its first words.
		if ws := strings.Fields(q); len(ws) > 12 {
			return rankOf(ctx, ix, t, strings.Join(ws[:12], " "), k)
		}
		return 0, nil
	}
	for i, h := range res.Hits {
		if h.Tool == t {
			return i + 1, nil
		}
	}
	return 0, nil
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for i, r := range s {
		if (r == '.' || r == '\n') && i > 20 && (i+1 == len(s) || unicode.IsSpace(rune(s[min(i+1, len(s)-1)]))) {
			return s[:i]
		}
	}
	return s
}

func normalise(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

func without(list []string, x string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

func objectSchema(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	return s.Type == "object"
}
