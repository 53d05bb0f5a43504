package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
)

// object is a JSON object whose members keep their order and their bytes,
// so that rewriting one member leaves every other byte as it was. (Package
// anthropic has the same helper, unexported.)
type object []member

type member struct {
	key string
	val json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// parseObject splits a JSON object into its members.
func parseObject(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errNotObject
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		o = append(o, member{key: key, val: val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errNotObject
	}
	return o, nil
}

// get returns the value of key, or nil.
func (o object) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set replaces the value of key, or appends the member.
func (o *object) set(key string, val json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = val
			return
		}
	}
	*o = append(*o, member{key: key, val: val})
}

// del removes key; it reports whether it was there.
func (o *object) del(key string) bool {
	for i := range *o {
		if (*o)[i].key == key {
			*o = append((*o)[:i:i], (*o)[i+1:]...)
			return true
		}
	}
	return false
}

// clone copies the member list (values are shared, never mutated).
func (o object) clone() object { return append(object(nil), o...) }

// marshal writes the object back.
func (o object) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// splitArray splits a JSON array into its elements; anything else yields
// false.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false
	}
	return out, true
}

// joinArray writes elements as a JSON array.
func joinArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// mustJSON marshals values that cannot fail to marshal (strings, maps and
// slices of them, valid raw messages); on failure it yields null.
// HTML characters are not escaped: the text goes to a model, not a page.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// textBlock is the JSON of a text content block.
func textBlock(text string) json.RawMessage {
	return mustJSON(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
}
