package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// How the proxy reads a refusal. Endpoints word their 400s every way:
// Anthropic's validation ("tools.3.defer_loading: Extra inputs are not
// permitted"), a Rust router's ("unknown variant `system`, expected `user`
// or `assistant`"), a Python one's list of details ({"loc":["body",
// "messages",1,"role"],"input":"system"}), an OpenAI-style router's
// ("Unknown parameter: 'tools.defer_loading'"), a gateway's wrapped text
// ({"message":"{\"message\":\"...\"}. Received Model Group=..."}). No list of
// phrases keeps up with them. What they share is that a refusal names what
// it refuses, and what it refuses is something the request used: a role, a
// block type, a field or a beta. So the proxy lists what the request it
// sent used (requestFeatures), and looks for those names in the error's
// text (errorText), whatever the quoting, case or punctuation around them
// (words). A name the proxy can drop at a lower level makes the 400 a
// refusal of that feature; a name it cannot drop (max_tokens, a text block)
// makes it the client's to read; a 400 that names nothing the request used
// is retried one level lower, where a lower level changes the request.

// drop is the level that stops sending a feature: the proxy can send the
// request without it by going down to that level.
type drop uint8

const (
	// keep: no level drops the feature (the refusal is the client's).
	keep drop = iota
	// dropInline: inline definitions named by reference (level.noInline).
	dropInline
	// dropFold: system messages folded, tool changes applied (level.fold).
	dropFold
	// dropEmulate: tool search emulated (level.emulate).
	dropEmulate
)

// strategy is the richest strategy of package messages that does without
// what d drops.
func (d drop) strategy() messages.Strategy {
	switch d {
	case dropInline:
		return messages.ReferenceAdd
	case dropFold:
		return messages.Classic
	case dropEmulate:
		return messages.Plain
	}
	return messages.StrategyAuto
}

// rank orders a level by what it drops: as sent 0, then dropInline,
// dropFold, dropEmulate.
func (l level) rank() drop {
	switch {
	case l.emulate:
		return dropEmulate
	case l.fold:
		return dropFold
	case l.noInline:
		return dropInline
	}
	return keep
}

// with is the level l lowered to drop d as well.
func (l level) with(d drop) level {
	switch d {
	case dropInline:
		l.noInline = true
	case dropFold:
		l.fold = true
	case dropEmulate:
		l.emulate = true
	}
	return l
}

// feature is something a request used that an upstream may refuse.
type feature struct {
	// kind is "role", "block type", "field" or "beta".
	kind string
	// name is the name as the request spells it.
	name string
	// drop is the level that stops sending it.
	drop drop
}

func (f feature) String() string {
	if f.kind == "role" {
		return `role "` + f.name + `"`
	}
	return f.kind + " " + f.name
}

// refusal is what an upstream's 400 names of the request it answered.
type refusal struct {
	// named is the feature the error names: the one with the lowest drop
	// when it names several; zero when it names nothing the request used.
	named feature
	// any reports whether the error names anything the request used.
	any bool
	// message is the error's text, clipped, for the log.
	message string
	// present marks the drops the request's features have: the levels
	// below that would change what is sent.
	present [dropEmulate + 1]bool
}

// below is the richest level under l that changes what the request sends,
// and false when none does.
func (r refusal) below(l level) (level, bool) {
	for d := l.rank() + 1; d <= dropEmulate; d++ {
		if r.present[d] {
			return l.with(d), true
		}
	}
	return l, false
}

// refusalStatus reports whether a status is one a refusal comes with:
// 400, and 422 (the status of several Python routers' validation errors).
func refusalStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
}

// readRefusal reads an upstream error body against the request it
// answered: sent (the body the proxy sent) and header (its headers, for
// the betas).
func readRefusal(body, sent []byte, header http.Header) refusal {
	text := errorText(body)
	r := refusal{message: clipText(strings.Join(strings.Fields(text), " "), 300)}
	if strings.Contains(strings.ToLower(text), "not found in available tools") {
		// A reference to a tool missing from tools is the conversation's
		// fault, not the endpoint's: never a reason to go lower.
		r.any = true
		return r
	}
	ix := indexWords(text)
	feats, roles := requestFeatures(sent, header)
	// A feature the text names outright wins over a role it points at by
	// a message's place ("messages.5.content.0: Input tag
	// 'tool_definition'" refuses the block, not the system message).
	var placed feature
	for _, f := range feats {
		r.present[f.drop] = true
		switch {
		case ix.names(f):
			r.any = true
			if f.drop > r.named.drop {
				r.named = f
			}
		case f.kind == "role" && ix.pointsAtRole(roles, f.name):
			r.any = true
			if f.drop > placed.drop {
				placed = f
			}
		}
	}
	if r.named.drop == keep {
		r.named = placed
	}
	return r
}

// Bounds of reading an error body: its text is at most maxErrorText bytes
// and maxErrorWords words, nested JSON at most maxErrorDepth deep.
const (
	maxErrorText  = 64 << 10
	maxErrorWords = 8192
	maxErrorDepth = 32
)

// errorText is the text of an upstream error body: every string in it
// when it is JSON (in document order, keys left out: message, msg, detail,
// loc, param, input and whatever else an endpoint uses), strings that are
// themselves JSON (a router's "raw" upstream answer) read the same way;
// the body itself when it is not JSON. It is bounded by maxErrorText.
func errorText(body []byte) string {
	var b strings.Builder
	appendErrorText(&b, body, 0)
	return b.String()
}

func appendErrorText(b *strings.Builder, body []byte, depth int) {
	trimmed := bytes.TrimSpace(body)
	var v any
	if depth > 2 || len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') || json.Unmarshal(trimmed, &v) != nil {
		addText(b, string(body))
		return
	}
	appendStrings(b, v, depth, 0)
}

// appendStrings adds the strings and numbers of a JSON value, keys left
// out, in document order for arrays (object members in key order).
func appendStrings(b *strings.Builder, v any, depth, nesting int) {
	if nesting > maxErrorDepth || b.Len() >= maxErrorText {
		return
	}
	switch v := v.(type) {
	case string:
		if s := strings.TrimSpace(v); strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
			appendErrorText(b, []byte(s), depth+1)
			return
		}
		addText(b, v)
	case float64:
		addText(b, strconv.FormatFloat(v, 'f', -1, 64))
	case []any:
		for _, e := range v {
			appendStrings(b, e, depth, nesting+1)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			appendStrings(b, v[k], depth, nesting+1)
		}
	}
}

func addText(b *strings.Builder, s string) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	if room := maxErrorText - b.Len(); len(s) > room {
		s = s[:max(room, 0)]
	}
	b.WriteString(s)
}

// wordIndex is where each word occurs in an error's text.
type wordIndex struct {
	words []string
	at    map[string][]int
}

// words splits text into lower-case words at anything that is not a
// letter or digit (quotes, backticks, dots, underscores, hyphens,
// brackets) and where a lower-case letter meets an upper-case one
// (toolReference), so that tool_reference, `tool-reference`,
// "toolReference" and 'Tool Reference' are the same two words.
func words(s string, limit int) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for i := 0; i < len(s) && len(out) < limit; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			cur = append(cur, r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		default:
			flush()
			prevLower = false
		}
	}
	if len(out) < limit {
		flush()
	}
	return out
}

func indexWords(text string) wordIndex {
	ix := wordIndex{words: words(text, maxErrorWords), at: map[string][]int{}}
	for i, w := range ix.words {
		ix.at[w] = append(ix.at[w], i)
	}
	return ix
}

// has reports whether the words of seq occur in a row, and where.
func (ix wordIndex) has(seq []string) (int, bool) {
	if len(seq) == 0 {
		return 0, false
	}
	for _, i := range ix.at[seq[0]] {
		if i+len(seq) > len(ix.words) {
			break
		}
		ok := true
		for j := 1; j < len(seq); j++ {
			if ix.words[i+j] != seq[j] {
				ok = false
				break
			}
		}
		if ok {
			return i, true
		}
	}
	return 0, false
}

// names reports whether the text names a feature.
func (ix wordIndex) names(f feature) bool {
	seq := words(f.name, 64)
	if f.kind == "role" && f.name == "system" {
		return ix.namesSystemRole()
	}
	if _, ok := ix.has(seq); ok {
		return true
	}
	switch {
	case f.kind == "beta" && f.drop != keep:
		// A beta named without its date ("advanced-tool-use").
		undated := seq
		for len(undated) > 0 && isDigits(undated[len(undated)-1]) {
			undated = undated[:len(undated)-1]
		}
		if len(undated) >= 2 && len(undated) < len(seq) {
			_, ok := ix.has(undated)
			return ok
		}
	case f.name == "defer_loading":
		// "Deferred custom tools are only supported on ..."
		for _, alias := range [][]string{{"deferred", "tools"}, {"deferred", "tool"}, {"deferred", "custom", "tools"}} {
			if _, ok := ix.has(alias); ok {
				return true
			}
		}
	}
	return false
}

// namesSystemRole reports whether the text names the system role, rather
// than the top-level system field: "system" with "role" in the text, or
// followed by "message(s)" or "turn(s)", or beside the roles an endpoint
// expects instead ("expected 'user' or 'assistant'").
func (ix wordIndex) namesSystemRole() bool {
	at := ix.at["system"]
	if len(at) == 0 {
		return false
	}
	if len(ix.at["role"])+len(ix.at["roles"]) > 0 {
		return true
	}
	if len(ix.at["user"]) > 0 && len(ix.at["assistant"]) > 0 {
		return true
	}
	for _, i := range at {
		if i+1 < len(ix.words) {
			switch ix.words[i+1] {
			case "message", "messages", "turn", "turns":
				return true
			}
		}
	}
	return false
}

// pointsAtRole reports whether the text points at a message of the role
// by its place: "messages.3.role", "messages[3].content", or a validation
// error's location ["body","messages",3,"role"], where the request's
// message 3 has that role.
func (ix wordIndex) pointsAtRole(roles []string, role string) bool {
	for _, i := range ix.at["messages"] {
		if i+1 >= len(ix.words) || !isDigits(ix.words[i+1]) || len(ix.words[i+1]) > 6 {
			continue
		}
		n, err := strconv.Atoi(ix.words[i+1])
		if err == nil && n < len(roles) && roles[n] == role {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// structural are the fields every request has, whose names an error quotes
// in the path to what it refuses ("messages.3.content.0: ..."): they name
// no feature.
var structural = map[string]bool{
	"messages": true, "tools": true, "role": true, "content": true, "type": true, "name": true, "text": true,
	"id": true, "input": true, "description": true, "input_schema": true, "tool": true, "definition": true,
	"tool_use_id": true, "model": true,
}

// opaque are fields whose values are the client's data (schemas, tool
// inputs, metadata): their keys and types are not the request's features.
var opaque = map[string]bool{"input_schema": true, "input": true, "metadata": true, "parameters": true, "definition": true}

// requestFeatures lists what a request body and its headers use that an
// endpoint may refuse, each with the level that drops it: the roles of its
// messages, the types of its blocks and tools, the fields of its top
// level, tools, messages and blocks, and its betas (anthropic-beta header,
// or an anthropic_beta array in the body).
//
// roles are the roles of the messages, in order.
func requestFeatures(body []byte, header http.Header) (feats []feature, roles []string) {
	var top any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	_ = dec.Decode(&top)
	seen := map[feature]bool{}
	add := func(f feature) {
		if f.name == "" || seen[f] {
			return
		}
		seen[f] = true
		feats = append(feats, f)
	}
	var walk func(v any, depth int, inSystem bool)
	walk = func(v any, depth int, inSystem bool) {
		if depth > 64 {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			if t, ok := v["type"].(string); ok {
				add(feature{kind: "block type", name: t, drop: typeDrop(t)})
			}
			for k, val := range v {
				if !structural[k] {
					add(feature{kind: "field", name: k, drop: fieldDrop(k, inSystem)})
				}
				if !opaque[k] {
					walk(val, depth+1, inSystem)
				}
			}
		case []any:
			for _, e := range v {
				walk(e, depth+1, inSystem)
			}
		}
	}
	if obj, ok := top.(map[string]any); ok {
		for k, val := range obj {
			switch k {
			case "messages":
				msgs, _ := val.([]any)
				for _, m := range msgs {
					mo, _ := m.(map[string]any)
					role, _ := mo["role"].(string)
					roles = append(roles, role)
					if mo == nil {
						continue
					}
					sys := role == "system"
					d := keep
					if sys {
						d = dropFold
					}
					add(feature{kind: "role", name: role, drop: d})
					walk(mo, 1, sys)
				}
			case "tools":
				walk(val, 1, false)
			case "anthropic_beta":
				list, _ := val.([]any)
				for _, b := range list {
					if s, ok := b.(string); ok {
						add(feature{kind: "beta", name: s, drop: betaDrop(s)})
					}
				}
			}
			// Other members (system, thinking, tool_choice, metadata...)
			// count by their names only: their values are text for the
			// model, settings or the client's data.
			if !structural[k] {
				add(feature{kind: "field", name: k, drop: keep})
			}
		}
	}
	for _, v := range header.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				add(feature{kind: "beta", name: b, drop: betaDrop(b)})
			}
		}
	}
	return feats, roles
}

// typeDrop is the level that stops sending a block or tool type.
func typeDrop(t string) drop {
	switch {
	case t == messages.TypeToolReference, t == "server_tool_use", t == "tool_search_tool_result", strings.HasPrefix(t, "tool_search_tool_"):
		return dropEmulate
	case t == messages.TypeToolAddition, t == messages.TypeToolRemoval:
		return dropFold
	case t == messages.TypeToolDefinition:
		return dropInline
	}
	return keep
}

// fieldDrop is the level that stops sending a field; every field of a
// system-role message goes with the message when it is folded.
func fieldDrop(k string, inSystem bool) drop {
	switch {
	case k == "defer_loading":
		return dropEmulate
	case k == "tool_changes", inSystem:
		return dropFold
	}
	return keep
}

// betaDrop is the level that stops sending a beta.
func betaDrop(b string) drop {
	undated := strings.TrimRightFunc(b, func(r rune) bool { return r == '-' || (r >= '0' && r <= '9') })
	for _, list := range []struct {
		betas []string
		d     drop
	}{{inlineBetas, dropInline}, {toolSearchBetas, dropEmulate}, {foldBetas, dropFold}} {
		for _, s := range list.betas {
			if b == s || undated == strings.TrimRightFunc(s, func(r rune) bool { return r == '-' || (r >= '0' && r <= '9') }) {
				return list.d
			}
		}
	}
	return keep
}
