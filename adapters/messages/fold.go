package messages

import (
	"bytes"
	"encoding/json"
	"strings"
)

// IsSystemMessage reports whether a message has the role "system".
func IsSystemMessage(raw json.RawMessage) bool {
	if !strings.Contains(string(raw), `"system"`) {
		return false
	}
	var m struct {
		Role string `json:"role"`
	}
	return json.Unmarshal(raw, &m) == nil && m.Role == "system"
}

// SystemReminderTag wraps the text of a folded system-role message.
const SystemReminderTag = "system-reminder"

// systemText returns the text blocks of a system-role message as one
// wrapped text block.
func systemText(raw json.RawMessage) json.RawMessage {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &m)
	var parts []string
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		parts = append(parts, s)
	} else {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
	}
	return rawTextBlock("<" + SystemReminderTag + ">\n" + strings.Join(parts, "\n") + "\n</" + SystemReminderTag + ">")
}

// contentArray returns a message's content as blocks (a string content is
// one text block) and the message object.
func contentArray(raw json.RawMessage) (object, []json.RawMessage, bool) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, nil, false
	}
	c := obj.Get("content")
	var s string
	if json.Unmarshal(c, &s) == nil {
		return obj, []json.RawMessage{textBlock(s)}, true
	}
	blocks, ok := splitArray(c)
	return obj, blocks, ok
}

func roleOf(raw json.RawMessage) string {
	var m struct {
		Role string `json:"role"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Role
}

// FoldSystemMessages folds each {"role":"system"} message into a user
// message as a <system-reminder> text block, for an upstream that refuses
// system-role messages: at the end of the user message before it; else in
// the next user message after its tool_result blocks (which must come
// first); else as a user message of its own. It returns the messages and
// the number folded.
func FoldSystemMessages(msgs []json.RawMessage) ([]json.RawMessage, int) {
	n := 0
	for _, m := range msgs {
		if IsSystemMessage(m) {
			n++
		}
	}
	if n == 0 {
		return msgs, 0
	}
	out := make([]json.RawMessage, 0, len(msgs))
	var pending []json.RawMessage
	appendTo := func(i int, blocks []json.RawMessage, afterResults bool) bool {
		obj, content, ok := contentArray(out[i])
		if !ok {
			return false
		}
		at := len(content)
		if afterResults {
			at = 0
			for at < len(content) && blockType(content[at]) == "tool_result" {
				at++
			}
		}
		nc := make([]json.RawMessage, 0, len(content)+len(blocks))
		nc = append(nc, content[:at]...)
		nc = append(nc, blocks...)
		nc = append(nc, content[at:]...)
		obj.Set("content", joinArray(nc))
		out[i] = obj.Marshal()
		return true
	}
	for _, m := range msgs {
		if IsSystemMessage(m) {
			b := systemText(m)
			if len(pending) == 0 && len(out) > 0 && roleOf(out[len(out)-1]) == "user" && appendTo(len(out)-1, []json.RawMessage{b}, false) {
				continue
			}
			pending = append(pending, b)
			continue
		}
		out = append(out, m)
		if len(pending) > 0 && roleOf(m) == "user" && appendTo(len(out)-1, pending, true) {
			pending = nil
		} else if len(pending) > 0 {
			// Before an assistant message: a user message of its own.
			last := out[len(out)-1]
			out[len(out)-1] = newMessage("user", pending)
			out = append(out, last)
			pending = nil
		}
	}
	if len(pending) > 0 {
		if len(out) == 0 || roleOf(out[len(out)-1]) != "user" || !appendTo(len(out)-1, pending, false) {
			out = append(out, newMessage("user", pending))
		}
	}
	return out, n
}

func blockType(raw json.RawMessage) string {
	var b struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &b)
	return b.Type
}

// newMessage is the JSON of a message, role first.
func newMessage(role string, content []json.RawMessage) json.RawMessage {
	return object{{Key: "role", Val: mustMarshal(role)}, {Key: "content", Val: joinArray(content)}}.Marshal()
}

// rawTextBlock is the JSON of a text block, with <, > and & as they are
// (json.Marshal would escape them).
func rawTextBlock(text string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return bytes.TrimRight(b.Bytes(), "\n")
}
