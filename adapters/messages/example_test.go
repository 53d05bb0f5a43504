package messages_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// conversation is a Messages API history in which the client-side search
// tool loaded a tool by reference, and a system message added another
// inline.
var conversation = []json.RawMessage{
	json.RawMessage(`{"role": "user", "content": "File a bug about the login page and tell the team."}`),
	json.RawMessage(`{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": "file a bug"}}]}`),
	json.RawMessage(`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_reference", "tool_name": "tracker__create_issue"}]}]}`),
	json.RawMessage(`{"role": "system", "content": [{"type": "text", "text": "The team chat is connected."},
	  {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": {"name": "chat__post_message",
	  "description": "Post a message to a channel.", "input_schema": {"type": "object"}}}}]}`),
}

// What a conversation says about tool search is read from its messages
// alone: the tools loaded by references, those added by tool changes.
func ExampleReadHistory() {
	h := messages.ReadHistory(conversation, "tool_search")
	fmt.Println("loaded:", h.Loaded().Names())
	fmt.Println("added:", h.Added().Names())
	fmt.Println("active:", h.Active().Names())
	// Output:
	// loaded: [tracker__create_issue]
	// added: [chat__post_message]
	// active: [tracker__create_issue chat__post_message]
}

// A reference to a tool that is no longer sent would make the API refuse
// the request; Reconcile rewrites it as text and leaves every other
// message's bytes as they were.
func ExampleReconcile() {
	sent := func(name string) bool { return name != "tracker__create_issue" }
	out, n := messages.Reconcile(conversation, sent)
	fmt.Println(n, "reference rewritten")
	fmt.Println(string(out[2]))
	fmt.Println("other messages unchanged:", string(out[3]) == string(conversation[3]))
	// Output:
	// 1 reference rewritten
	// {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Tool no longer available: tracker__create_issue"}]}]}
	// other messages unchanged: true
}

// An endpoint that refuses system-role messages gets them folded into the
// user's text, and a plainer strategy leaves the tool changes out (their
// tools then go in tools).
func ExampleRenderHistory() {
	out, changed := messages.RenderHistory(conversation, messages.Classic, func(string) bool { return true }, func(string) bool { return false })
	fmt.Println(changed, len(conversation), "→", len(out), "messages")
	fmt.Println(string(out[len(out)-1]))
	// Output:
	// true 4 → 3 messages
	// {"role":"user","content":[{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_reference", "tool_name": "tracker__create_issue"}]},{"type":"text","text":"<system-reminder>\nThe team chat is connected.\n</system-reminder>"}]}
}

// An endpoint's 400 is read against the request it answered: a feature
// counts only when the request used it, however the error words it.
func ExampleRefusalTo() {
	sent := []byte(`{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "be brief"}]}`)
	for _, body := range []string{
		`{"type": "error", "error": {"type": "invalid_request_error", "message": "messages.1.role: unexpected role 'system'"}}`,
		`{"detail": [{"loc": ["body", "tools", 0, "defer_loading"], "msg": "extra fields not permitted"}]}`,
		`max_tokens: field required`,
	} {
		r := messages.RefusalTo([]byte(body), sent, nil)
		fmt.Printf("%s; refused %v, fall back to %s\n", r.Named(), r.Refused(), r.Below)
	}
	// Output:
	// role "system"; refused true, fall back to classic
	// nothing the request used; refused false, fall back to auto
	// nothing the request used; refused false, fall back to auto
}

// Strategies go from the richest to the plainest, each the fallback of the
// one before, each with the betas its requests need.
func ExampleStrategy_Next() {
	for s := messages.Inline; ; {
		fmt.Println(s, s.Betas())
		next, ok := s.Next()
		if !ok {
			break
		}
		s = next
	}
	// Output:
	// inline [mid-conversation-tool-changes-2026-07-01 inline-tools-2026-09-15]
	// reference-add [mid-conversation-tool-changes-2026-07-01]
	// classic []
	// plain []
}
