package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MessageWriter streams a Message as the API does: message_start, then per
// content block content_block_start, its deltas and content_block_stop,
// then message_delta and message_stop. Blocks may be added as they become
// known (a proxy that learns a turn's blocks one upstream call at a time);
// their indexes count from 0 in the order added.
type MessageWriter struct {
	w     *Writer
	index int
}

// NewMessageWriter returns a MessageWriter on w.
func NewMessageWriter(w *Writer) *MessageWriter { return &MessageWriter{w: w} }

// Err returns the first write error.
func (m *MessageWriter) Err() error { return m.w.Err() }

// Blocks returns the number of blocks written so far.
func (m *MessageWriter) Blocks() int { return m.index }

// Start writes message_start for msg, a Message object: its content is
// written empty and its stop_reason and stop_sequence null, as the API
// streams them; usage is kept.
func (m *MessageWriter) Start(msg json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(msg, &obj); err != nil || obj == nil {
		return ErrNotMessage
	}
	obj["content"] = json.RawMessage(`[]`)
	obj["stop_reason"] = json.RawMessage(`null`)
	obj["stop_sequence"] = json.RawMessage(`null`)
	if err := m.w.Write("message_start", map[string]any{"type": "message_start", "message": obj}); err != nil {
		return err
	}
	return m.w.Write("ping", json.RawMessage(`{"type": "ping"}`))
}

// Ping writes a ping event.
func (m *MessageWriter) Ping() error {
	return m.w.Write("ping", json.RawMessage(`{"type": "ping"}`))
}

// Block writes one content block: text and thinking blocks start empty and
// get their text as one delta; tool_use and server_tool_use blocks start
// with an empty input and get it as one input_json_delta; any other block
// (tool_search_tool_result, or a type this package does not know) is
// written whole in content_block_start.
func (m *MessageWriter) Block(block json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(block, &obj); err != nil || obj == nil {
		return fmt.Errorf("sse: content block is not a JSON object")
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	idx := m.index
	m.index++
	var deltas []map[string]any
	switch typ {
	case "text":
		var text string
		_ = json.Unmarshal(obj["text"], &text)
		obj["text"] = json.RawMessage(`""`)
		deltas = append(deltas, map[string]any{"type": "text_delta", "text": text})
		if c, ok := obj["citations"]; ok {
			delete(obj, "citations")
			var list []json.RawMessage
			_ = json.Unmarshal(c, &list)
			for _, ci := range list {
				deltas = append(deltas, map[string]any{"type": "citations_delta", "citation": ci})
			}
		}
	case "thinking":
		var thinking, sig string
		_ = json.Unmarshal(obj["thinking"], &thinking)
		_ = json.Unmarshal(obj["signature"], &sig)
		obj["thinking"] = json.RawMessage(`""`)
		obj["signature"] = json.RawMessage(`""`)
		deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": thinking})
		if sig != "" {
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": sig})
		}
	case "tool_use", "server_tool_use":
		input := obj["input"]
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		obj["input"] = json.RawMessage(`{}`)
		deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": compactString(input)})
	}
	if err := m.w.Write("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": obj}); err != nil {
		return err
	}
	for _, d := range deltas {
		if err := m.w.Write("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d}); err != nil {
			return err
		}
	}
	return m.w.Write("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
}

// End writes message_delta (stop reason, stop sequence and usage) and
// message_stop.
func (m *MessageWriter) End(stopReason, stopSequence, usage json.RawMessage) error {
	if len(stopReason) == 0 {
		stopReason = json.RawMessage(`null`)
	}
	if len(stopSequence) == 0 {
		stopSequence = json.RawMessage(`null`)
	}
	if len(usage) == 0 {
		usage = json.RawMessage(`{"output_tokens":0}`)
	}
	if err := m.w.Write("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]json.RawMessage{"stop_reason": stopReason, "stop_sequence": stopSequence}, "usage": usage}); err != nil {
		return err
	}
	return m.w.Write("message_stop", json.RawMessage(`{"type":"message_stop"}`))
}

// Error writes an error event, the API's way to fail a stream that has
// begun.
func (m *MessageWriter) Error(errorBody json.RawMessage) error {
	return m.w.Write("error", errorBody)
}

// WriteMessage streams a whole Message.
func WriteMessage(w *Writer, msg json.RawMessage) error {
	var obj struct {
		Content      []json.RawMessage `json:"content"`
		StopReason   json.RawMessage   `json:"stop_reason"`
		StopSequence json.RawMessage   `json:"stop_sequence"`
		Usage        json.RawMessage   `json:"usage"`
	}
	if err := json.Unmarshal(msg, &obj); err != nil {
		return ErrNotMessage
	}
	m := NewMessageWriter(w)
	if err := m.Start(msg); err != nil {
		return err
	}
	for _, b := range obj.Content {
		if err := m.Block(b); err != nil {
			return err
		}
	}
	return m.End(obj.StopReason, obj.StopSequence, obj.Usage)
}

// compactString returns raw without insignificant space, members in their
// order.
func compactString(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// StartBlock writes content_block_start for a block as it came from
// another stream, and returns the index it has in this one.
func (m *MessageWriter) StartBlock(block json.RawMessage) (int, error) {
	idx := m.index
	m.index++
	return idx, m.w.Write("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": block})
}

// Delta writes a content_block_delta of the block at index.
func (m *MessageWriter) Delta(index int, delta json.RawMessage) error {
	return m.w.Write("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": delta})
}

// StopBlock writes content_block_stop of the block at index.
func (m *MessageWriter) StopBlock(index int) error {
	return m.w.Write("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}
