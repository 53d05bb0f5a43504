package sse

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// DefaultLimit is the most event data an Accumulator takes when its Limit
// is 0: 32 MiB, the Messages API's own bound on a request, which a round's
// blocks go back upstream in.
const DefaultLimit = 32 << 20

// ErrTooLarge is returned (wrapped) by Add when a stream's events exceed
// the Accumulator's Limit.
var ErrTooLarge = errors.New("sse: the stream is larger than the bound")

// Accumulator rebuilds a Message from its event stream, keeping every
// field of the blocks as the stream carried them: content_block_start gives
// a block, and its deltas fill it (text_delta, thinking_delta,
// signature_delta, citations_delta, input_json_delta); a delta of another
// type is ignored.
//
// Its work and memory are linear in the stream's size: a text or thinking
// delta is decoded once and appended to what the block has so far, and the
// block is encoded again only by Blocks.
type Accumulator struct {
	// Message is the message of message_start.
	Message json.RawMessage
	// StopReason and StopSequence come from message_delta.
	StopReason, StopSequence json.RawMessage
	// Usage is message_start's usage with message_delta's counts over it.
	Usage json.RawMessage
	// Done is set by message_stop.
	Done bool
	// Limit bounds the bytes of event data Add takes (the sum of the
	// events' data); 0 means DefaultLimit. The event that passes it is
	// refused with an error wrapping ErrTooLarge.
	Limit int64

	size   int64
	blocks []*accBlock
}

// accBlock is one block being filled: its fields as content_block_start
// gave them, and what the deltas added, kept decoded until Blocks.
type accBlock struct {
	fields    map[string]json.RawMessage
	text      map[string]*strings.Builder // "text", "thinking": the whole value so far
	citations []json.RawMessage
	cited     bool // citations holds the whole list
	input     strings.Builder
	hasInput  bool // the block got input_json_delta
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
// index out of order, an error event (whose data it returns in the error's
// text), or a stream grown past Limit (ErrTooLarge).
func (a *Accumulator) Add(ev Event) error {
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if a.size += int64(len(ev.Data)); a.size > limit {
		return fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
	}
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
		a.blocks = append(a.blocks, &accBlock{fields: b})
	case "content_block_delta":
		if e.Index < 0 || e.Index >= len(a.blocks) {
			return fmt.Errorf("sse: content_block_delta for block %d of %d", e.Index, len(a.blocks))
		}
		a.delta(e.Index, e.Delta)
	case "content_block_stop":
		if e.Index < 0 || e.Index >= len(a.blocks) {
			return fmt.Errorf("sse: content_block_stop for block %d of %d", e.Index, len(a.blocks))
		}
		if b := a.blocks[e.Index]; b.hasInput {
			in := b.input.String()
			if strings.TrimSpace(in) == "" {
				in = "{}"
			}
			if !json.Valid([]byte(in)) {
				return fmt.Errorf("sse: block %d: the streamed input is not JSON", e.Index)
			}
			b.fields["input"] = json.RawMessage(in)
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
	var d struct {
		Type        string          `json:"type"`
		Text        json.RawMessage `json:"text"`
		Thinking    json.RawMessage `json:"thinking"`
		Signature   json.RawMessage `json:"signature"`
		Citation    json.RawMessage `json:"citation"`
		PartialJSON json.RawMessage `json:"partial_json"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return
	}
	b := a.blocks[i]
	switch d.Type {
	case "text_delta":
		b.appendText("text", d.Text)
	case "thinking_delta":
		b.appendText("thinking", d.Thinking)
	case "signature_delta":
		b.fields["signature"] = d.Signature
	case "citations_delta":
		if !b.cited {
			_ = json.Unmarshal(b.fields["citations"], &b.citations)
			b.cited = true
		}
		b.citations = append(b.citations, d.Citation)
	case "input_json_delta":
		var part string
		_ = json.Unmarshal(d.PartialJSON, &part)
		b.input.WriteString(part)
		b.hasInput = true
	}
}

// appendText appends the JSON string more to the block's field: the
// field's value from content_block_start is decoded on the first delta,
// each delta's only once.
func (b *accBlock) appendText(field string, more json.RawMessage) {
	sb, ok := b.text[field]
	if !ok {
		if b.text == nil {
			b.text = map[string]*strings.Builder{}
		}
		sb = &strings.Builder{}
		var cur string
		_ = json.Unmarshal(b.fields[field], &cur)
		sb.WriteString(cur)
		b.text[field] = sb
	}
	var add string
	_ = json.Unmarshal(more, &add)
	sb.WriteString(add)
}

// encode returns the block as JSON, with what the deltas added.
func (b *accBlock) encode() json.RawMessage {
	out := b.fields
	if len(b.text) > 0 || b.cited {
		out = make(map[string]json.RawMessage, len(b.fields)+1)
		for k, v := range b.fields {
			out[k] = v
		}
		for k, sb := range b.text {
			out[k], _ = json.Marshal(sb.String())
		}
		if b.cited {
			out["citations"], _ = json.Marshal(b.citations)
		}
	}
	raw, _ := json.Marshal(out)
	return raw
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
		out[i] = b.encode()
	}
	return out
}
