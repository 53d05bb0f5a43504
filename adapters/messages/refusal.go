package messages

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How a refusal is read. Endpoints word their 400s every way: Anthropic's
// validation ("tools.3.defer_loading: Extra inputs are not permitted"), a
// Rust router's ("unknown variant `system`, expected `user` or
// `assistant`"), a Python one's list of details ({"loc":["body",
// "messages",1,"role"],"input":"system"}), an OpenAI-style router's
// ("Unknown parameter: 'tools.defer_loading'"), a gateway's wrapped text
// ({"message":"{\"message\":\"...\"}. Received Model Group=..."}). No list
// of phrases keeps up with them. What they share is that a refusal names
// what it refuses, and what it refuses is something the request used: a
// role, a block type, a field or a beta. So RefusalTo lists what the
// request used (requestFeatures), and looks for those names in the error's
// text (errorText), whatever the quoting, case or punctuation around them
// (words). A name a plainer strategy drops makes the error a refusal of
// that feature; a name no strategy drops (max_tokens, a text block) makes
// it the caller's to read; an error that names nothing the request used is
// left to the caller to try one strategy plainer, where that changes the
// request (Reading.Changes).

// Reading is what an endpoint's error says of the request it answered
// (RefusalTo).
type Reading struct {
	// Refusal is the feature the error names: the one the plainest
	// strategy drops when it names several. Feature is its name as the
	// request spells it ("system message" for the system role), empty
	// when the error names nothing the request used; Below is the richest
	// strategy that does without it, StrategyAuto when no strategy does
	// (the error is then the caller's to read); Message is the error's
	// text on one line, clipped to 300 bytes.
	Refusal
	// Kind is what the feature is: "role", "block type", "field" or
	// "beta"; empty when the error names nothing the request used.
	Kind string
	// Names reports whether the error names anything the request used,
	// whether a strategy drops it or not.
	Names bool

	// name is the feature's name as the request spells it.
	name string
	// uses marks the strategies that drop something the request used.
	uses [Plain + 1]bool
}

// Refused reports whether the error refuses a feature a plainer strategy
// drops.
func (r Reading) Refused() bool { return r.Below != StrategyAuto }

// Changes reports whether falling back to strategy s changes the request:
// whether the request used something s drops and richer strategies keep.
func (r Reading) Changes(s Strategy) bool { return s <= Plain && r.uses[s] }

// Named is the feature with its kind, for a log: `role "system"`,
// "block type tool_reference", "field defer_loading", "beta ...";
// "nothing the request used" when the error names nothing.
func (r Reading) Named() string {
	switch {
	case r.Kind == "":
		return "nothing the request used"
	case r.Kind == "role":
		return `role "` + r.name + `"`
	}
	return r.Kind + " " + r.Feature
}

// feature is something a request used that an endpoint may refuse.
type feature struct {
	// kind is "role", "block type", "field" or "beta".
	kind string
	// name is the name as the request spells it.
	name string
	// below is the richest strategy that does without it; StrategyAuto
	// when none does.
	below Strategy
}

// RefusalTo reads an endpoint's error body (JSON in any shape, or plain
// text) against the request it answered: sent is the request body, betas
// the anthropic-beta values it was sent with (header values; each may hold
// several, comma-separated). The body is read within fixed bounds (64 KiB
// of text, 8192 words, JSON nested 32 deep), so any body is safe to read.
//
// A reference to a tool missing from tools ("not found in available
// tools") is the conversation's fault, not the endpoint's: it names
// nothing a strategy drops.
func RefusalTo(body, sent []byte, betas []string) Reading {
	feats, roles := requestFeatures(sent, betas)
	return readAgainst(body, feats, roles)
}

// RefusalOf reads the message of a 400 (its body or its error text)
// without the request it answered, against every feature a tool-search
// request may use; see RefusalTo. It reports a feature a plainer strategy
// drops, and false for anything else.
//
// Deprecated: a name counts only when the request used it; use RefusalTo
// with the request sent, which reads the same texts and more.
func RefusalOf(msg string) (Refusal, bool) {
	r := readAgainst([]byte(msg), anyRequest, nil)
	if !r.Refused() {
		return Refusal{}, false
	}
	return r.Refusal, true
}

// anyRequest is what a tool-search request may use that a plainer strategy
// drops: what RefusalOf reads an error against.
var anyRequest = func() []feature {
	feats := []feature{{kind: "role", name: "system", below: Classic}, {kind: "field", name: "defer_loading", below: Plain},
		{kind: "field", name: "tool_changes", below: Classic}}
	for _, t := range []string{TypeToolReference, "server_tool_use", TypeToolSearchToolResult, "tool_search_tool_regex",
		"tool_search_tool_bm25", TypeToolAddition, TypeToolRemoval, TypeToolDefinition} {
		feats = append(feats, feature{kind: "block type", name: t, below: typeBelow(t)})
	}
	for _, list := range [][]string{toolSearchBetas, systemBetas, foldBetas, inlineBetas} {
		for _, b := range list {
			feats = append(feats, feature{kind: "beta", name: b, below: betaBelow(b)})
		}
	}
	return feats
}()

// readAgainst reads an error body against the features of a request and
// the roles of its messages, in order (nil when unknown).
func readAgainst(body []byte, feats []feature, roles []string) Reading {
	text := errorText(body)
	r := Reading{Refusal: Refusal{Message: clipUTF8(strings.Join(strings.Fields(text), " "), 300)}}
	if strings.Contains(strings.ToLower(text), "not found in available tools") {
		r.Names = true
		return r
	}
	ix := indexWords(text)
	// A feature the text names outright wins over a role it points at by
	// a message's place ("messages.5.content.0: Input tag
	// 'tool_definition'" refuses the block, not the system message).
	var named, placed feature
	for _, f := range feats {
		r.uses[f.below] = true
		switch {
		case ix.names(f):
			// Of two names of one level, the longer is the more precise
			// ("mid-conversation-tool-changes-2026-07-01" over
			// "tool_changes", whose words it holds).
			if !r.Names || f.below > named.below || (f.below == named.below && len(f.name) > len(named.name)) {
				named = f
			}
			r.Names = true
		case f.kind == "role" && ix.pointsAtRole(roles, f.name):
			if placed.kind == "" || f.below > placed.below {
				placed = f
			}
		}
	}
	switch {
	case named.kind != "" && (named.below != StrategyAuto || placed.kind == ""):
	case placed.kind != "":
		named = placed
		r.Names = true
	}
	r.uses[StrategyAuto] = false
	if named.kind != "" {
		r.Kind, r.Below, r.Feature, r.name = named.kind, named.below, named.name, named.name
		if named.kind == "role" && named.name == "system" {
			r.Feature = "system message"
		}
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
	case f.kind == "beta" && f.below != StrategyAuto:
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
// message 3 has that role. With roles unknown (nil), a message's role
// refused where the text expects "user" and "assistant" is a system
// message's.
func (ix wordIndex) pointsAtRole(roles []string, role string) bool {
	unknown := roles == nil && role == "system" && len(ix.at["user"]) > 0 && len(ix.at["assistant"]) > 0
	for _, i := range ix.at["messages"] {
		if i+1 >= len(ix.words) || !isDigits(ix.words[i+1]) || len(ix.words[i+1]) > 6 {
			continue
		}
		if unknown && i+2 < len(ix.words) && ix.words[i+2] == "role" {
			return true
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

// requestFeatures lists what a request body and its betas use that an
// endpoint may refuse, each with the richest strategy that does without
// it: the roles of its messages, the types of its blocks and tools, the
// fields of its top level, tools, messages and blocks, and its betas
// (anthropic-beta header values, or an anthropic_beta array in the body).
//
// roles are the roles of the messages, in order.
func requestFeatures(body []byte, betas []string) (feats []feature, roles []string) {
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
				add(feature{kind: "block type", name: t, below: typeBelow(t)})
			}
			for k, val := range v {
				if !structural[k] {
					add(feature{kind: "field", name: k, below: fieldBelow(k, inSystem)})
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
					below := StrategyAuto
					if sys {
						below = Classic
					}
					add(feature{kind: "role", name: role, below: below})
					walk(mo, 1, sys)
				}
			case "tools":
				walk(val, 1, false)
			case "anthropic_beta":
				list, _ := val.([]any)
				for _, b := range list {
					if s, ok := b.(string); ok {
						add(feature{kind: "beta", name: s, below: betaBelow(s)})
					}
				}
			}
			// Other members (system, thinking, tool_choice, metadata...)
			// count by their names only: their values are text for the
			// model, settings or the client's data.
			if !structural[k] {
				add(feature{kind: "field", name: k})
			}
		}
	}
	for _, v := range betas {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				add(feature{kind: "beta", name: b, below: betaBelow(b)})
			}
		}
	}
	return feats, roles
}

// typeBelow is the richest strategy that sends no block or tool of type t.
func typeBelow(t string) Strategy {
	switch {
	case t == TypeToolReference, t == "server_tool_use", t == TypeToolSearchToolResult, strings.HasPrefix(t, "tool_search_tool_"):
		return Plain
	case t == TypeToolAddition, t == TypeToolRemoval:
		return Classic
	case t == TypeToolDefinition:
		return ReferenceAdd
	}
	return StrategyAuto
}

// fieldBelow is the richest strategy that sends no field k; every field of
// a system-role message goes with the message when it is folded.
func fieldBelow(k string, inSystem bool) Strategy {
	switch {
	case k == "defer_loading":
		return Plain
	case k == "tool_changes", inSystem:
		return Classic
	}
	return StrategyAuto
}

// Betas of tool search and of system messages inside messages (the
// anthropic-beta values anthropic-sdk-go names
// AnthropicBetaAdvancedToolUse2025_11_20 and
// AnthropicBetaToolSearchTool2025_10_19, and the system-message beta).
const (
	BetaAdvancedToolUse = "advanced-tool-use-2025-11-20"
	BetaToolSearchTool  = "tool-search-tool-2025-10-19"
	BetaSystemMessages  = "mid-conversation-system-2026-04-07"
)

// The betas each plainer strategy stops sending: Plain those of tool
// search, Classic those of system messages and tool changes, ReferenceAdd
// the inline definitions'.
var (
	toolSearchBetas = []string{BetaAdvancedToolUse, BetaToolSearchTool}
	systemBetas     = []string{BetaSystemMessages}
	foldBetas       = []string{BetaSystemMessages, BetaToolChanges, BetaInlineTools}
	inlineBetas     = []string{BetaInlineTools}
)

// betaBelow is the richest strategy that does without beta b, named with
// or without its date.
func betaBelow(b string) Strategy {
	undated := strings.TrimRightFunc(b, func(r rune) bool { return r == '-' || (r >= '0' && r <= '9') })
	for _, list := range []struct {
		betas []string
		below Strategy
	}{{inlineBetas, ReferenceAdd}, {toolSearchBetas, Plain}, {foldBetas, Classic}} {
		for _, s := range list.betas {
			if b == s || undated == strings.TrimRightFunc(s, func(r rune) bool { return r == '-' || (r >= '0' && r <= '9') }) {
				return list.below
			}
		}
	}
	return StrategyAuto
}

// clipUTF8 cuts s to at most n bytes at a rune boundary, marked with "…"
// when cut.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
