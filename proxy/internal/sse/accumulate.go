package sse

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Accumulator rebuilds a Message from its event stream, keeping every
// field of the blocks as the stream carried them: content_block_start gives
// a block, and its deltas fill it (text_delta, thinking_delta,
// signature_delta, citations_delta, input_json_delta); a delta of another
// type is ignored.
type Accumulator struct {
	// Message is the message of message_start.
	Message json.RawMessage
	// StopReason and StopSequence come from message_delta.
	StopReason, StopSequence json.RawMessage
	// Usage is message_start's usage with message_delta's counts over it.
	Usage json.RawMessage
	// Done is set by message_stop.
	Done bool

	blocks  []map[string]json.RawMessage
	partial []strings.Builder
	has     []bool // whether a block got input_json_delta
}

// Event is one decoded event of a Messages stream, as Add reads it.
type streamEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
}

// Add reads one event. It fails on an event that is not JSON, a block
// index out of order, or an error event (whose data it returns in the
// error's text).
func (a *Accumulator) Add(ev Event) error {
	var e streamEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return fmt.Errorf("sse: event %q: %w", ev.Name, err)
	}
	switch e.Type {
	case "message_start":
		a.Message = e.Message
		var m struct {
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(e.Message, &m)
		a.Usage = m.Usage
	case "content_block_start":
		if e.Index != len(a.blocks) {
			return fmt.Errorf("sse: content_block_start %d after %d blocks", e.Index, len(a.blocks))
		}
		var b map[string]json.RawMessage
		if err := json.Unmarshal(e.ContentBlock, &b); err != nil || b == nil {
			return fmt.Errorf("sse: content_block_start %d: not a block", e.Index)
		}
		a.blocks = append(a.blocks, b)
		a.partial = append(a.partial, strings.Builder{})
		a.has = append(a.has, false)
	case "content_block_delta":
		if e.Index < 0 || e.Index >= len(a.blocks) {
			return fmt.Errorf("sse: content_block_delta for block %d of %d", e.Index, len(a.blocks))
		}
		a.delta(e.Index, e.Delta)
	case "content_block_stop":
		if e.Index < 0 || e.Index >= len(a.blocks) {
			return fmt.Errorf("sse: content_block_stop for block %d of %d", e.Index, len(a.blocks))
		}
		if a.has[e.Index] {
			in := a.partial[e.Index].String()
			if strings.TrimSpace(in) == "" {
				in = "{}"
			}
			if !json.Valid([]byte(in)) {
				return fmt.Errorf("sse: block %d: the streamed input is not JSON", e.Index)
			}
			a.blocks[e.Index]["input"] = json.RawMessage(in)
		}
	case "message_delta":
		var d struct {
			StopReason   json.RawMessage `json:"stop_reason"`
			StopSequence json.RawMessage `json:"stop_sequence"`
		}
		_ = json.Unmarshal(e.Delta, &d)
		a.StopReason, a.StopSequence = d.StopReason, d.StopSequence
		a.Usage = mergeUsage(a.Usage, e.Usage)
	case "message_stop":
		a.Done = true
	case "error":
		return fmt.Errorf("sse: error event: %s", ev.Data)
	}
	return nil
}

func (a *Accumulator) delta(i int, raw json.RawMessage) {
	var d map[string]json.RawMessage
	if json.Unmarshal(raw, &d) != nil {
		return
	}
	var typ string
	_ = json.Unmarshal(d["type"], &typ)
	b := a.blocks[i]
	appendString := func(field string, more json.RawMessage) {
		var cur, add string
		_ = json.Unmarshal(b[field], &cur)
		_ = json.Unmarshal(more, &add)
		b[field], _ = json.Marshal(cur + add)
	}
	switch typ {
	case "text_delta":
		appendString("text", d["text"])
	case "thinking_delta":
		appendString("thinking", d["thinking"])
	case "signature_delta":
		b["signature"] = d["signature"]
	case "citations_delta":
		var list []json.RawMessage
		_ = json.Unmarshal(b["citations"], &list)
		b["citations"], _ = json.Marshal(append(list, d["citation"]))
	case "input_json_delta":
		var part string
		_ = json.Unmarshal(d["partial_json"], &part)
		a.partial[i].WriteString(part)
		a.has[i] = true
	}
}

// mergeUsage returns base with the members of over set over it.
func mergeUsage(base, over json.RawMessage) json.RawMessage {
	var b, o map[string]json.RawMessage
	_ = json.Unmarshal(base, &b)
	if json.Unmarshal(over, &o) != nil || o == nil {
		return base
	}
	if b == nil {
		b = map[string]json.RawMessage{}
	}
	for k, v := range o {
		if string(v) != "null" {
			b[k] = v
		}
	}
	out, _ := json.Marshal(b)
	return out
}

// Blocks returns the blocks so far, as JSON.
func (a *Accumulator) Blocks() []json.RawMessage {
	out := make([]json.RawMessage, len(a.blocks))
	for i, b := range a.blocks {
		out[i], _ = json.Marshal(b)
	}
	return out
}
