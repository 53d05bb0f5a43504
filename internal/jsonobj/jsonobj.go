// Package jsonobj edits JSON objects without re-encoding them: members keep
// their order and their bytes, so a rewritten request differs from the
// original only where it was changed.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Object is a JSON Object whose members keep their order and their bytes,
// so that rewriting one member leaves every other byte as it was.
type Object []Member

// Member is one member of an Object.
type Member struct {
	Key string
	Val json.RawMessage
}

// ErrNotObject is returned by Parse for JSON that is not one Object.
var ErrNotObject = errors.New("not a JSON Object")

// Parse splits a JSON Object into its members.
func Parse(raw []byte) (Object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	o := Object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, ErrNotObject
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		o = append(o, Member{Key: key, Val: val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, ErrNotObject
	}
	return o, nil
}

// Get returns the value of key, or nil.
func (o Object) Get(key string) json.RawMessage {
	for _, m := range o {
		if m.Key == key {
			return m.Val
		}
	}
	return nil
}

// Set replaces the value of key, or appends the member.
func (o *Object) Set(key string, val json.RawMessage) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Val = val
			return
		}
	}
	*o = append(*o, Member{Key: key, Val: val})
}

// Del removes key; it reports whether it was there.
func (o *Object) Del(key string) bool {
	for i := range *o {
		if (*o)[i].Key == key {
			*o = append((*o)[:i:i], (*o)[i+1:]...)
			return true
		}
	}
	return false
}

// Clone copies the member list (values are shared, never mutated).
func (o Object) Clone() Object { return append(Object(nil), o...) }

// Marshal writes the Object back.
func (o Object) Marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// SplitArray splits a JSON array into its elements; anything else yields
// false.
func SplitArray(raw []byte) ([]json.RawMessage, bool) {
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

// JoinArray writes elements as a JSON array.
func JoinArray(elems []json.RawMessage) json.RawMessage {
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
