package gateway

// Asking the user to approve a call an ask rule matched.
//
// The arguments are chosen by the model, so the question must show them
// in a form padding cannot hide: small arguments are shown whole, as
// indented JSON; larger ones as one line per field, at every depth, with
// each field's type and size, strings quoted with every control and
// format character escaped (a value cannot start a new line or reorder
// the text around it), and long strings cut in the middle, so that both
// their start and their end show. The complete JSON goes with the request
// in _meta, for a client that can display it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/policy"
)

// Bounds of the approval message.
const (
	// wholeArgsBytes: arguments up to this size, with no long string, are
	// shown whole.
	wholeArgsBytes = 2000
	// longString: a string longer than this (in characters) is cut in the
	// middle, keeping keepEnds characters at each end.
	longString = 300
	keepEnds   = 120
	// maxSummaryLines bounds the one-line-per-field summary; beyond it the
	// message says how many fields it does not show.
	maxSummaryLines = 200
)

// argsMetaKey is the _meta key of the approval request that carries the
// complete arguments.
const argsMetaKey = "toolsearch/arguments"

// confirm asks the user, through elicitation, to allow a call of the tool
// clients know as name, which an ask rule matched. It returns the refusal
// message when the call must not go on. A drain (shutdown) withdraws the
// question at once: the call was not made, so refusing it loses nothing.
func (g *Gateway) confirm(ctx context.Context, req *mcp.CallToolRequest, name string, v policy.Verdict, args json.RawMessage) (string, bool) {
	if req == nil || req.Session == nil {
		return fmt.Sprintf("%s needs the user's approval (%s), and there is no client to ask", name, v.Reason()), false
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return fmt.Sprintf("%s needs the user's approval (policy: %s), but this client cannot ask the user (it does not support MCP elicitation), so the call was refused", name, v.Reason()), false
	}
	// A client that never answers must not hold the call for ever, nor a
	// shutdown.
	ectx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
	defer cancel()
	stop := context.AfterFunc(g.calls.drainContext(), cancel)
	defer stop()
	args = orEmpty(args)
	res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{
		Meta:            mcp.Meta{argsMetaKey: args},
		Message:         approvalMessage(name, args, v.Reason()),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"allow":{"type":"boolean","title":"Allow this call","default":false}},"required":["allow"]}`),
	})
	if err != nil {
		if g.Draining() {
			return fmt.Sprintf("%s was not called: toolsearch is shutting down, and the call was still waiting for the user's approval", name), false
		}
		return fmt.Sprintf("%s needs the user's approval (policy: %s), and asking failed: %v", name, v.Reason(), err), false
	}
	if res.Action != "accept" || res.Content["allow"] != true {
		return fmt.Sprintf("the user did not allow the call to %s (answer: %s)", name, res.Action), false
	}
	return "", true
}

// approvalMessage is the question put to the user about a call of name
// with args (a JSON object), allowed only with approval for reason.
func approvalMessage(name string, args json.RawMessage, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow the call to %s?\n(policy: %s)\n", name, reason)
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		fmt.Fprintf(&b, "Arguments (%d bytes, not valid JSON): %s\n", len(args), quoteCut(string(args)))
		return b.String()
	}
	var lines []string
	long := false
	summarise("", v, &lines, &long)
	if len(args) <= wholeArgsBytes && !long {
		var ind bytes.Buffer
		if json.Indent(&ind, args, "", "  ") == nil && !hasHidden(ind.String()) {
			fmt.Fprintf(&b, "Arguments (%d bytes, shown whole):\n%s\n", len(args), ind.String())
			return b.String()
		}
	}
	fmt.Fprintf(&b, "Arguments (%d bytes, %d fields; one line per field, long strings cut in the middle):\n", len(args), len(lines))
	for i, l := range lines {
		if i == maxSummaryLines {
			fmt.Fprintf(&b, "WARNING: %d more fields are not shown here. Decline unless you can see the whole call (its JSON is in this request's _meta %q).\n",
				len(lines)-maxSummaryLines, argsMetaKey)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// summarise appends one line per leaf of v (and per empty object or
// array) at path, in key order; long is set when a string was cut.
func summarise(path string, v any, lines *[]string, long *bool) {
	label := path
	if label == "" {
		label = "(arguments)"
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			*lines = append(*lines, label+": {} (empty object)")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			summarise(joinPath(path, k), x[k], lines, long)
		}
	case []any:
		if len(x) == 0 {
			*lines = append(*lines, label+": [] (empty array)")
			return
		}
		for i, e := range x {
			summarise(fmt.Sprintf("%s[%d]", path, i), e, lines, long)
		}
	case string:
		n := utf8.RuneCountInString(x)
		if n > longString {
			*long = true
		}
		*lines = append(*lines, fmt.Sprintf("%s: string, %d characters: %s", label, n, quoteCut(x)))
	case json.Number:
		n := x.String()
		if len(n) > longString {
			n = n[:keepEnds] + fmt.Sprintf(" …[%d digits not shown]… ", len(n)-2*keepEnds) + n[len(n)-keepEnds:]
		}
		*lines = append(*lines, fmt.Sprintf("%s: number %s", label, n))
	case bool:
		*lines = append(*lines, fmt.Sprintf("%s: %v", label, x))
	case nil:
		*lines = append(*lines, label+": null")
	}
}

// joinPath adds an object key to a path: .key for a plain identifier,
// ["key"] (quoted, escaped) for anything else.
func joinPath(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + quoteCut(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// quoteCut quotes s with every non-printable character escaped (newlines,
// control and bidirectional format characters), cutting it in the middle
// when it is longer than longString characters.
func quoteCut(s string) string {
	r := []rune(s)
	if len(r) <= longString {
		return strconv.QuoteToGraphic(s)
	}
	head, tail := string(r[:keepEnds]), string(r[len(r)-keepEnds:])
	return strconv.QuoteToGraphic(head) + fmt.Sprintf(" …[%d characters not shown]… ", len(r)-2*keepEnds) + strconv.QuoteToGraphic(tail)
}

// hasHidden reports whether s holds a character that would not show as
// itself: a control character other than the newlines and spaces of
// indentation, or a format character.
func hasHidden(s string) bool {
	for _, r := range s {
		if r == '\n' || r == ' ' {
			continue
		}
		if !strconv.IsGraphic(r) {
			return true
		}
	}
	return false
}
